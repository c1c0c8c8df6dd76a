/** The `event_listeners` setting; each listener is checked when the server is built (config.ts). */
import { Type } from '@sinclair/typebox';
import type { SettingSchemas, SettingValues } from '../settings/schema.js';

export const LISTENER_SETTINGS = {
  event_listeners: Type.Array(Type.Unknown(), {
    default: [],
    secret: true,
    invalid: () => 'expected a JSON array of listeners',
    description:
      'Event listeners, a JSON array (see [Events, listeners and history](#events-listeners-and-history)). ' +
      'Never logged (Redis URLs may hold passwords).',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ListenerSettings = SettingValues<typeof LISTENER_SETTINGS>;
