/** Observability settings: the request log (request-log.ts) and Prometheus metrics (metrics.ts). */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../settings/config-error.js';
import type { SERVER_SETTINGS } from '../server-settings.js';
import { Choice, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const OBSERVABILITY_SETTINGS = {
  log_level: Choice(LOG_LEVELS, {
    default: 'info',
    invalid: ({ value }) => `"${String(value)}" (one of ${LOG_LEVELS.join(', ')})`,
    description:
      'pino log level (`fatal`…`trace`, `silent`). One line per request at `info`; health checks, 304 polls ' +
      'and batch sub-requests at `debug`.',
  }),
  log_format: Choice(['auto', 'json', 'pretty'], {
    default: 'auto',
    invalid: ({ value }) => `"${String(value)}" (auto, json or pretty)`,
    description:
      '`json` (one JSON object per line), `pretty` (pino-pretty), or `auto`: pretty when standard output is a ' +
      'terminal.',
  }),
  metrics_enabled: Type.Boolean({
    default: false,
    description: 'Serve Prometheus metrics at `/__metrics__` (see [Metrics and logs](#metrics-and-logs)).',
  }),
  metrics_port: Nullable(Type.Integer({ minimum: 0, maximum: 65535 }), {
    default: null,
    description:
      'Serve the metrics on this port only (on `host`), not on the API’s: keeps them private. Needed with ' +
      '`workers` above 1 (the primary process answers for all workers).',
  }),
} satisfies SettingSchemas;

export function checkObservabilitySettings(
  settings: SettingValues<typeof OBSERVABILITY_SETTINGS> & Pick<SettingValues<typeof SERVER_SETTINGS>, 'workers'>,
): void {
  if (settings.metrics_enabled && settings.workers > 1 && settings.metrics_port === null) {
    throw new ConfigError(
      `metrics_enabled with workers = ${settings.workers} needs metrics_port: each worker counts its own ` +
        'requests, and the primary answers for all of them on that port',
    );
  }
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ObservabilitySettings = SettingValues<typeof OBSERVABILITY_SETTINGS>;
