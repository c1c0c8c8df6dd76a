import type { Action } from '../events/types.js';

/** One entry of the `event_listeners` setting, as parsed by listeners/config.ts. */
export interface ListenerConfig {
  name: string;
  use: string;
  actions: Action[];
  resources: string[] | null;
  /** The listener's own keys. */
  options: Record<string, unknown>;
}
