/**
 * The change monitor on the wire (`/buckets/monitor/collections/changes/records`, capability
 * `changes`; the original server's kinto-changes plugin has the list, Quire also the stream):
 * one connection's worth of work — read the server-sent event stream until it ends, or poll the
 * list once. Reconnecting, leadership and dispatch are live.ts's.
 */
import { MONITOR_PATH } from '../transport/endpoints.js';
import type { HttpTransport } from '../transport/http.js';
import { SseParser } from './sse.js';

export { MONITOR_PATH };

export interface ChangeEntry {
  id: string;
  last_modified: number;
  bucket: string;
  collection: string;
  host?: string;
  /** The collection was deleted (or its bucket): `last_modified` is above every timestamp it served. */
  deleted?: true;
}

export interface StreamHandlers {
  /** The stream is open (headers received). */
  onOpen(): void;
  /** Anything arrived: an event, a heartbeat comment. */
  onContact(): void;
  onEntry(entry: ChangeEntry): void;
}

/**
 * Reads the stream until the server ends it (resolves) or it fails (rejects); `signal` ends it.
 * A stream silent for `silenceMs` (no event, no heartbeat) is taken for dead: rejects.
 */
export async function readChangeStream(
  http: HttpTransport,
  options: { lastEventId: number | null; signal: AbortSignal; silenceMs: number },
  handlers: StreamHandlers,
): Promise<void> {
  const headers: Record<string, string> =
    options.lastEventId === null ? {} : { 'Last-Event-ID': String(options.lastEventId) };
  const response = await http.stream(MONITOR_PATH, { headers, signal: options.signal });
  if (!response.body) throw new Error('the change stream has no body');
  handlers.onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  options.signal.addEventListener('abort', cancel, { once: true });
  let silent = false;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => {
      silent = true;
      cancel();
    }, options.silenceMs);
    (watchdog as { unref?: () => void }).unref?.();
  };
  arm();
  const parser = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (silent) throw new Error('the change stream went silent');
      if (done) return;
      arm();
      handlers.onContact();
      for (const event of parser.feed(value)) {
        let entry: ChangeEntry;
        try {
          entry = JSON.parse(event.data) as ChangeEntry;
        } catch {
          continue; // not an entry: ignored, as a browser's EventSource listener would
        }
        if (
          typeof entry?.last_modified === 'number' &&
          typeof entry.bucket === 'string' &&
          typeof entry.collection === 'string'
        )
          handlers.onEntry(entry);
      }
    }
  } finally {
    clearTimeout(watchdog);
    options.signal.removeEventListener('abort', cancel);
  }
}

/** One poll of the monitor list: the entries newer than `since`, oldest first; `etag` for If-None-Match. */
export async function pollChangeMonitor(
  http: HttpTransport,
  options: { since: number | null; etag: string | null; signal: AbortSignal },
): Promise<{ entries: ChangeEntry[]; etag: string | null }> {
  const response = await http.request<{ data: ChangeEntry[] }>({
    path: MONITOR_PATH,
    query: options.since === null ? {} : { _since: options.since },
    headers: options.etag ? { 'If-None-Match': options.etag } : {},
    signal: options.signal,
  });
  if (response.status === 304) return { entries: [], etag: options.etag };
  const entries = [...(response.body?.data ?? [])].sort((a, b) => a.last_modified - b.last_modified);
  return { entries, etag: response.headers.get('etag') };
}
