/**
 * Where the server under test lives.
 *
 * The base URL comes from `QUIRE_CONFORMANCE_URL`, else from the vitest provided context
 * (`provide('conformanceUrl', url)` in a globalSetup, as the server package does when it boots
 * itself on port 0). It is normalised to have no trailing slash and to end with `/v1`.
 */
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    conformanceUrl: string;
  }
}

let cached: string | undefined;

/** Normalises a user-given URL: strips trailing slashes, appends `/v1` to a bare origin. */
export function normaliseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`conformance: invalid base URL ${JSON.stringify(raw)}`);
  }
  url.search = '';
  url.hash = '';
  let path = url.pathname.replace(/\/+$/, '');
  if (path === '') path = '/v1';
  if (!path.endsWith('/v1')) {
    throw new Error(`conformance: the base URL must end with /v1 (got ${JSON.stringify(raw)})`);
  }
  return `${url.origin}${path}`;
}

/** The API base URL, e.g. `http://127.0.0.1:8888/v1` (no trailing slash). */
export function baseUrl(): string {
  if (cached !== undefined) return cached;
  let raw = process.env.QUIRE_CONFORMANCE_URL;
  if (!raw) {
    try {
      raw = inject('conformanceUrl');
    } catch {
      raw = undefined;
    }
  }
  if (!raw) {
    throw new Error(
      'conformance: no server URL; set QUIRE_CONFORMANCE_URL=http://host:port/v1 ' +
        "or provide('conformanceUrl', …) from a vitest globalSetup",
    );
  }
  cached = normaliseBaseUrl(raw);
  return cached;
}

/** The server root without the version prefix, e.g. `http://127.0.0.1:8888`. */
export function serverRoot(): string {
  return baseUrl().replace(/\/v1$/, '');
}

/**
 * Where writes go when the target is a reader (`--writer`: `QUIRE_CONFORMANCE_WRITER_URL`),
 * normalised like the base URL; undefined when the target takes its own writes.
 */
export function writerBaseUrl(): string | undefined {
  const raw = process.env.QUIRE_CONFORMANCE_WRITER_URL;
  return raw ? normaliseBaseUrl(raw) : undefined;
}

/** How long a write sent to the writer is waited for on the target (`--replica-wait`, default 10 s). */
export function replicaWaitMs(): number {
  const seconds = Number(process.env.QUIRE_CONFORMANCE_REPLICA_WAIT ?? 10);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 10_000;
}

/** How long a reader's permissions and groups may lag a write it shows (`--replica-settle`, ms, default 0). */
export function replicaSettleMs(): number {
  const ms = Number(process.env.QUIRE_CONFORMANCE_REPLICA_SETTLE_MS ?? 0);
  return Number.isFinite(ms) && ms >= 0 ? ms : 0;
}
