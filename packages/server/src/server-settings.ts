/**
 * Settings of the server as a whole: where it listens, how many processes serve (workers.ts), what
 * it calls itself, whether it accepts writes, how long it gives requests to finish on SIGTERM.
 */
import { availableParallelism } from 'node:os';
import { Type } from '@sinclair/typebox';
import type { SettingSchemas, SettingValues } from './settings/schema.js';

const DOCS = 'https://github.com/quire-sync/quire';

export const SERVER_SETTINGS = {
  host: Type.String({ default: '127.0.0.1', description: 'Interface to listen on (also read from `HOST`).' }),
  port: Type.Integer({
    default: 8888,
    minimum: 0,
    maximum: 65535,
    description: 'Port to listen on (also read from `PORT`).',
  }),
  workers: Type.Integer({
    default: 1,
    minimum: 1,
    maximum: 1024,
    auto: availableParallelism,
    description:
      'Server processes `quire start` runs on the one port (`auto`: one per core). Above 1, PostgreSQL only; ' +
      'each has its own pool of `storage_pool_size` connections.',
  }),
  readonly: Type.Boolean({ default: false, description: 'Refuse every write with 405.' }),
  project_name: Type.String({ default: 'quire', description: 'Name shown in `GET /`.' }),
  project_docs: Type.String({ default: DOCS, description: 'Documentation URL shown in `GET /` and alerts.' }),
  error_info_link: Type.String({ default: `${DOCS}/issues`, description: '`info` link of 500 responses.' }),
  shutdown_timeout_seconds: Type.Number({
    default: 30,
    minimum: 0,
    description: 'On SIGTERM, how long in-flight requests may take to finish.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ServerSettings = SettingValues<typeof SERVER_SETTINGS>;
