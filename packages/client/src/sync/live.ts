/**
 * Live changes: one connection tells every auto-synced collection of a client when the server
 * has something new for it, through the change monitor (`/buckets/monitor/collections/changes/records`,
 * capability `changes`, compatible with the original server's kinto-changes plugin).
 *
 * - `stream`: the server offers the monitor as server-sent events (`capabilities.changes.stream`):
 *   one long GET with `Accept: text/event-stream`, read with fetch streaming (browsers and Node
 *   alike: EventSource cannot send an Authorization header). Each event is an entry
 *   `{bucket, collection, last_modified}`; the collection it names syncs (`_since` pull), the
 *   others do not. Reconnects with jittered exponential backoff (never sooner than a
 *   `Retry-After` the server sent), resuming with `Last-Event-ID`.
 * - `poll`: the monitor without the stream: one GET every `pollMs` for all collections, with
 *   `_since` and `If-None-Match` (a 304 when nothing changed).
 * - `none`: no monitor (the original server without the plugin): collections keep polling
 *   themselves on their own interval, as before.
 *
 * Between tabs (where the Web Locks API exists): one tab holds the connection, under a lock named
 * after the server and the user, and forwards each entry to the other tabs on a BroadcastChannel;
 * when it closes, another tab takes the lock over.
 */
import type { Remote } from '../remote/remote.js';
import { type RetryPolicy, retryDelay, serverWait, sleep } from '../retry.js';
import type { HttpTransport } from '../transport/http.js';
import type { LockManagerLike } from '../tabs/locks.js';

export const MONITOR_PATH = '/buckets/monitor/collections/changes/records';

export interface ChangeEntry {
  id: string;
  last_modified: number;
  bucket: string;
  collection: string;
  host?: string;
}

export type LiveMode = 'stream' | 'poll' | 'none';

export interface LiveStatus {
  /** How changes are learnt: `stream` (pushed), `poll` (the monitor, on a timer), `none` (each collection polls). */
  mode: LiveMode;
  /** The connection (stream) or the last poll is up. */
  connected: boolean;
  /** Another tab holds the connection and forwards its entries to this one. */
  follower: boolean;
  /** When the server last confirmed the entries are current (an event, a heartbeat or a poll), ms since epoch. */
  lastContact: number | null;
  /** The newest entry timestamp received (the stream's `Last-Event-ID`). */
  lastEventId: number | null;
}

export interface LiveOptions {
  /** Poll period of the monitor when there is no stream (default 3 s). */
  pollMs?: number;
  /** First reconnection delay, doubled up to `maxBackoffMs` (defaults 500 ms, 15 s); the `online` event reconnects at once. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

type EntryListener = (entry: ChangeEntry) => void;
type StatusListener = (status: LiveStatus) => void;

interface BroadcastMessage {
  kind: 'entry';
  entry: ChangeEntry;
}

export class LiveChanges {
  readonly #http: HttpTransport;
  readonly #remote: Remote;
  readonly #key: string;
  readonly #locks: LockManagerLike | null;
  readonly #pollMs: number;
  /** Reconnections and new attempts to learn what the server offers. */
  readonly #retry: RetryPolicy;
  readonly #watchers = new Map<string, Set<EntryListener>>();
  readonly #entryListeners = new Set<EntryListener>();
  readonly #statusListeners = new Set<StatusListener>();
  #status: LiveStatus = { mode: 'none', connected: false, follower: false, lastContact: null, lastEventId: null };
  #abort: AbortController | null = null;
  #channel: BroadcastChannel | null = null;
  #detected: Promise<LiveMode> | null = null;
  /** The user's personal bucket: its entries also go to the watchers of `default/<collection>`. */
  #personalBucket: string | null = null;
  /** A stream silent for longer (no event, no heartbeat) is taken for dead and reopened. */
  #silenceMs = 35_000;

  /** `key` names the connection shared by tabs: the server and the user. */
  constructor(http: HttpTransport, remote: Remote, key: string, locks: LockManagerLike | null, options: LiveOptions = {}) {
    this.#http = http;
    this.#remote = remote;
    this.#key = key;
    this.#locks = locks;
    this.#pollMs = options.pollMs ?? 3_000;
    this.#retry = { baseMs: options.backoffMs ?? 500, maxMs: options.maxBackoffMs ?? 15_000 };
  }

  get status(): LiveStatus {
    return { ...this.#status };
  }

  /** What the server offers: `stream`, `poll` (monitor only) or `none`. Cached; a failure is retried on the next call. */
  mode(): Promise<LiveMode> {
    this.#detected ??= this.#remote.serverInfo().then((info) => {
      this.#personalBucket = info.user?.bucket ?? null;
      const changes = info.capabilities.changes as { stream?: { url?: string; heartbeat_seconds?: number } } | undefined;
      const heartbeat = changes?.stream?.heartbeat_seconds;
      if (typeof heartbeat === 'number' && heartbeat > 0) this.#silenceMs = heartbeat * 2_000 + 5_000;
      return changes ? (changes.stream?.url ? 'stream' : 'poll') : 'none';
    });
    this.#detected.catch(() => (this.#detected = null));
    return this.#detected;
  }

  /** Every entry received (all collections). */
  onEntry(listener: EntryListener): () => void {
    this.#entryListeners.add(listener);
    return () => this.#entryListeners.delete(listener);
  }

  onStatus(listener: StatusListener): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  /**
   * Calls `listener` with each entry of `bucket/collection`; the connection is open while some
   * collection watches. Resolves to the mode in use (`none`: the caller polls by itself).
   */
  async watch(bucket: string, collection: string, listener: EntryListener): Promise<{ mode: LiveMode; stop: () => void }> {
    const key = `${bucket}/${collection}`;
    let set = this.#watchers.get(key);
    if (!set) {
      set = new Set();
      this.#watchers.set(key, set);
    }
    set.add(listener);
    const stop = () => {
      const current = this.#watchers.get(key);
      current?.delete(listener);
      if (current?.size === 0) this.#watchers.delete(key);
      if (this.#watchers.size === 0) this.#stop();
    };
    let mode: LiveMode;
    try {
      mode = await this.mode();
    } catch (error) {
      // Offline at start (a page loaded from its service worker): find out once the server answers.
      this.#detectLater(error);
      return { mode: 'none', stop };
    }
    if (mode !== 'none' && this.#watchers.size > 0 && !this.#abort) this.#start(mode);
    return { mode, stop };
  }

  #detecting = false;

  /** Asks the server what it offers again, with backoff (and at once when the browser goes online), until it answers. */
  #detectLater(firstFailure: unknown): void {
    if (this.#detecting) return;
    this.#detecting = true;
    const target = globalThis as { addEventListener?: (type: string, listener: () => void) => void; removeEventListener?: (type: string, listener: () => void) => void };
    let wake = () => {};
    const online = () => wake();
    target.addEventListener?.('online', online);
    void (async () => {
      try {
        let failure = firstFailure;
        for (let attempt = 0; this.#watchers.size > 0 && !this.#abort; attempt++) {
          const woken = new AbortController();
          wake = () => woken.abort();
          await sleep(retryDelay(this.#retry, attempt, serverWait(failure)), { signal: woken.signal, unref: true });
          if (this.#watchers.size === 0 || this.#abort) return;
          try {
            const mode = await this.mode();
            if (mode !== 'none' && this.#watchers.size > 0 && !this.#abort) this.#start(mode);
            return;
          } catch (error) {
            failure = error; // still unreachable
          }
        }
      } finally {
        target.removeEventListener?.('online', online);
        this.#detecting = false;
      }
    })();
  }

  #setStatus(patch: Partial<LiveStatus>): void {
    this.#status = { ...this.#status, ...patch };
    for (const listener of this.#statusListeners) listener(this.status);
  }

  #dispatch(entry: ChangeEntry): void {
    if (this.#status.lastEventId === null || entry.last_modified > this.#status.lastEventId) this.#status.lastEventId = entry.last_modified;
    for (const listener of this.#entryListeners) listener(entry);
    for (const listener of this.#watchers.get(`${entry.bucket}/${entry.collection}`) ?? []) listener(entry);
    if (entry.bucket === this.#personalBucket) for (const listener of this.#watchers.get(`default/${entry.collection}`) ?? []) listener(entry);
  }

  #start(mode: LiveMode): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#setStatus({ mode });
    const target = globalThis as { addEventListener?: (type: string, listener: () => void) => void; removeEventListener?: (type: string, listener: () => void) => void };
    if (typeof target.addEventListener === 'function' && typeof target.removeEventListener === 'function') {
      const online = () => this.reconnectNow();
      target.addEventListener('online', online);
      abort.signal.addEventListener('abort', () => target.removeEventListener!('online', online), { once: true });
    }
    const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
    if (this.#locks && Channel) {
      // One tab leads; the others follow its broadcasts until the lock comes to them.
      const channel = new Channel(`quire-live:${this.#key}`);
      this.#channel = channel;
      (channel as unknown as { unref?: () => void }).unref?.();
      channel.onmessage = (event: MessageEvent<BroadcastMessage>) => {
        if (event.data?.kind === 'entry' && !abort.signal.aborted) {
          this.#setStatus({ lastContact: Date.now() });
          this.#dispatch(event.data.entry);
        }
      };
      this.#setStatus({ follower: true });
      this.#locks
        .request(`quire-live:${this.#key}`, { mode: 'exclusive', signal: abort.signal }, async () => {
          this.#setStatus({ follower: false });
          await this.#lead(mode, abort.signal, (entry) => channel.postMessage({ kind: 'entry', entry } satisfies BroadcastMessage));
        })
        .catch(() => {});
    } else {
      void this.#lead(mode, abort.signal, () => {});
    }
  }

  #stop(): void {
    this.#abort?.abort();
    this.#abort = null;
    this.#channel?.close();
    this.#channel = null;
    this.#setStatus({ connected: false, follower: false });
  }

  /** Holds the connection until `signal` aborts, reconnecting after failures. */
  async #lead(mode: LiveMode, signal: AbortSignal, forward: EntryListener): Promise<void> {
    for (let failures = 0; !signal.aborted; ) {
      let failure: unknown = null;
      try {
        if (mode === 'stream') await this.#readStream(signal, forward, () => (failures = 0));
        else {
          await this.#pollOnce(signal, forward);
          failures = 0;
          await sleep(this.#pollMs, { signal, unref: true });
          continue;
        }
      } catch (error) {
        failures++;
        failure = error;
      }
      this.#setStatus({ connected: false });
      if (signal.aborted) break;
      // A stream that ended cleanly (server restart) reconnects at once the first time; the
      // network coming back (the browser's `online` event) ends the wait too.
      const woken = await this.#pause(failures === 0 ? 0 : retryDelay(this.#retry, failures - 1, serverWait(failure)), signal);
      if (woken) failures = 0;
      else if (failures === 0) failures = 1; // the next end in a row waits
    }
  }

  async #readStream(signal: AbortSignal, forward: EntryListener, connected: () => void): Promise<void> {
    const headers: Record<string, string> = {};
    if (this.#status.lastEventId !== null) headers['Last-Event-ID'] = String(resumeFrom(this.#status.lastEventId));
    const response = await this.#http.stream(MONITOR_PATH, { headers, signal });
    if (!response.body) throw new Error('the change stream has no body');
    connected();
    this.#setStatus({ connected: true, lastContact: Date.now() });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const onAbort = () => void reader.cancel().catch(() => {});
    signal.addEventListener('abort', onAbort, { once: true });
    let silent = false;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        onAbort();
      }, this.#silenceMs);
      (watchdog as { unref?: () => void }).unref?.();
    };
    arm();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (silent) throw new Error('the change stream went silent');
        if (done) return;
        arm();
        buffer += value.replace(/\r\n?/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          this.#setStatus({ lastContact: Date.now() });
          let data = '';
          for (const line of block.split('\n')) if (line.startsWith('data:')) data += line.slice(5).trimStart();
          if (!data) continue; // a comment (heartbeat) or `retry:`
          let entry: ChangeEntry;
          try {
            entry = JSON.parse(data) as ChangeEntry;
          } catch {
            continue;
          }
          this.#dispatch(entry);
          forward(entry);
        }
      }
    } finally {
      clearTimeout(watchdog);
      signal.removeEventListener('abort', onAbort);
    }
  }

  #etag: string | null = null;
  #wake: (() => void) | null = null;

  /** Reconnect now (e.g. the network is back) rather than at the end of the backoff delay. */
  reconnectNow(): void {
    this.#wake?.();
  }

  /** Waits `ms`; resolves true when `reconnectNow()` cut the wait short. */
  #pause(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const controller = new AbortController();
      const onAbort = () => controller.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      let woken = false;
      this.#wake = () => {
        woken = true;
        controller.abort();
      };
      void sleep(ms, { signal: controller.signal, unref: true }).then(() => {
        signal.removeEventListener('abort', onAbort);
        this.#wake = null;
        resolve(woken);
      });
    });
  }

  async #pollOnce(signal: AbortSignal, forward: EntryListener): Promise<void> {
    const since = this.#status.lastEventId;
    const response = await this.#http.request<{ data: ChangeEntry[] }>({
      path: MONITOR_PATH,
      query: since === null ? {} : { _since: resumeFrom(since) },
      headers: this.#etag ? { 'If-None-Match': this.#etag } : {},
      signal,
    });
    this.#setStatus({ connected: true, lastContact: Date.now() });
    if (response.status === 304) return;
    this.#etag = response.headers.get('etag');
    const entries = [...(response.body?.data ?? [])].sort((a, b) => a.last_modified - b.last_modified);
    for (const entry of entries) {
      this.#dispatch(entry);
      forward(entry);
    }
  }

  close(): void {
    this.#watchers.clear();
    this.#stop();
  }
}

/**
 * Where to resume: a little before the newest entry received. Each collection has its own
 * timestamp sequence, so a change committed meanwhile may carry an older timestamp than an entry
 * of another collection already received; asking again for the last few seconds costs a few
 * repeated entries, which collections already up to date ignore.
 */
const RESUME_MARGIN_MS = 10_000;
function resumeFrom(lastEventId: number): number {
  return Math.max(0, lastEventId - RESUME_MARGIN_MS);
}
