/** Settings of the change monitor (changes/): what it lists and the limits of its streams. */
import { Type } from '@sinclair/typebox';
import { List, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const CHANGES_SETTINGS = {
  changes_enabled: Type.Boolean({
    default: true,
    description:
      'Serve the change monitor `GET /buckets/monitor/collections/changes/records` (capability `changes`): ' +
      'one entry per collection with its records’ timestamp, polled or followed as server-sent events.',
  }),
  changes_resources: List({
    default: [],
    description:
      'Buckets (`/buckets/b`) and collections (`/buckets/b/collections/c`) the monitor lists, to everyone ' +
      '(kinto-changes’ `changes.resources`). Empty: every collection the caller may read.',
  }),
  changes_stream_max_per_process: Type.Integer({
    default: 10000,
    minimum: 1,
    description:
      'Open change streams per server process. When full, a caller whose address holds at least two fewer ' +
      'than the address holding the most takes the place of that one’s oldest stream; otherwise 503 with ' +
      '`Retry-After`.',
  }),
  changes_stream_max_per_user: Type.Integer({
    default: 20,
    minimum: 1,
    description:
      'Open change streams per verified user (an account, an OpenID identity), per process; one more is answered 429.',
  }),
  changes_stream_max_per_address: Type.Integer({
    default: 100,
    minimum: 1,
    description:
      'Open change streams per client address (an IPv6 one: per /64), per process, every caller counted: ' +
      'accounts, OpenID users, and anonymous and Basic Auth callers (these last two as one identity). When ' +
      'full, an identity holding at least two fewer there than another takes the place of that one’s oldest ' +
      'stream; otherwise 429. Raise it when many users share one address (NAT).',
  }),
  changes_stream_heartbeat_seconds: Type.Number({
    default: 15,
    minimum: 0.1,
    description: 'How often an open change stream sends a comment line, so that proxies keep it open.',
  }),
  changes_stream_max_buffer_bytes: Type.Integer({
    default: 65536,
    minimum: 1,
    description:
      'Bytes of changes a change stream may hold for a client that reads slower than they come (one entry per ' +
      'collection, the newest); past that it forgets them and reads again from the store what changed, once ' +
      'the client has read what was written. Never disconnected for it.',
  }),
  changes_stream_coalesce_ms: Type.Integer({
    default: 5,
    minimum: 0,
    description:
      'How long committed changes are gathered before they are offered to the streams and sent to the other ' +
      'processes (one entry per collection per period); 1 ms more per 20 open streams.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ChangesSettings = SettingValues<typeof CHANGES_SETTINGS>;
