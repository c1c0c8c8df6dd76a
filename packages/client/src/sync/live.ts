/**
 * Live changes: one connection tells every auto-synced collection of a client when the server
 * has something new for it, through the change monitor (change-monitor.ts).
 *
 * - `stream`: the server offers the monitor as server-sent events (`capabilities.changes.stream`);
 *   the collection an event names syncs (`_since` pull), the others do not. Reconnects with
 *   jittered exponential backoff (never sooner than a `Retry-After` the server sent), resuming
 *   with `Last-Event-ID`; a stream silent for twice the server's heartbeat is reopened.
 * - `poll`: the monitor without the stream: one GET every `pollMs` for all collections.
 * - `none`: no monitor: collections poll on their own interval.
 *
 * What this module does: keep who watches which collection and hand them entries; find out the
 * mode; and, while this tab leads (tabs/leadership.ts: one tab per server and user where Web
 * Locks exist), hold the connection and forward entries to the other tabs (tabs/broadcast.ts),
 * which follow. It tries nothing while the browser is offline (online.ts) and reconnects at once
 * when the network comes back. Its state is the machine of live-status.ts.
 */
import { type OnlineSource, untilOnline } from '../online.js';
import type { Remote } from '../remote/remote.js';
import { type RetryPolicy, retryDelay, serverWait, sleep } from '../retry.js';
import { createTabChannel, type TabChannel } from '../tabs/broadcast.js';
import { type Leadership, lead, SOLE_TAB } from '../tabs/leadership.js';
import { createWebLock, type LockManagerLike } from '../tabs/locks.js';
import type { HttpTransport } from '../transport/http.js';
import { type ChangeEntry, pollChangeMonitor, readChangeStream } from './change-monitor.js';
import { type LiveEvent, type LiveMode, type LiveStatus, LiveStatusMachine } from './live-status.js';

export { MONITOR_PATH, type ChangeEntry } from './change-monitor.js';
export type { LiveMode, LiveState, LiveStatus } from './live-status.js';

export interface LiveOptions {
  /** Poll period of the monitor when there is no stream (default 3 s). */
  pollMs?: number;
  /**
   * First reconnection delay, doubled up to `maxBackoffMs` (defaults 500 ms, 3 s: an
   * EventSource's own reconnection time), each a random point between half and all of it. The
   * cap bounds how late a tab learns that the server is back after an outage of any length. The
   * `online` event, and any request answered again, reconnect at once.
   */
  backoffMs?: number;
  maxBackoffMs?: number;
}

type EntryListener = (entry: ChangeEntry) => void;

/** What the leading tab tells the others. */
interface LiveMessage {
  kind: 'entry';
  entry: ChangeEntry;
}

/** Runs while some collection watches: detection, then leading or following. */
interface Session {
  abort: AbortController;
  leadership: Leadership | null;
  channel: TabChannel<LiveMessage> | null;
}

/** What the connection needs of its client. */
export interface LiveSetup {
  http: HttpTransport;
  remote: Remote;
  /** Names the connection shared by tabs: the server and the user. */
  key: string;
  locks: LockManagerLike | null;
  online: OnlineSource;
  tabId: string;
  options?: LiveOptions | undefined;
}

/** Where the connection reports (`client.live`, live-changes.ts): its status, and every entry. */
export interface LiveSink {
  status(status: LiveStatus): void;
  entry(entry: ChangeEntry): void;
}

export class LiveConnection {
  readonly #http: HttpTransport;
  readonly #remote: Remote;
  readonly #key: string;
  readonly #locks: LockManagerLike | null;
  readonly #online: OnlineSource;
  readonly #tabId: string;
  readonly #pollMs: number;
  /** Reconnections and new attempts to learn what the server offers. */
  readonly #retry: RetryPolicy;
  readonly #watchers = new Map<string, Set<EntryListener>>();
  readonly #sink: LiveSink;
  readonly #machine = new LiveStatusMachine();
  #session: Session | null = null;
  #detected: Promise<LiveMode> | null = null;
  #mode: LiveMode | null = null;
  /** The user's personal bucket: its entries also go to the watchers of `default/<collection>`. */
  #personalBucket: string | null = null;
  /** A stream silent for longer (no event, no heartbeat) is taken for dead and reopened. */
  #silenceMs = 35_000;
  #wake: (() => void) | null = null;

  constructor(setup: LiveSetup, sink: LiveSink) {
    this.#http = setup.http;
    this.#remote = setup.remote;
    this.#key = setup.key;
    this.#locks = setup.locks;
    this.#online = setup.online;
    this.#tabId = setup.tabId;
    this.#pollMs = setup.options?.pollMs ?? 3_000;
    this.#retry = { baseMs: setup.options?.backoffMs ?? 500, maxMs: setup.options?.maxBackoffMs ?? 3_000 };
    this.#sink = sink;
    this.#machine.subscribe((status) => sink.status({ ...status }));
  }

  get status(): LiveStatus {
    return { ...this.#machine.status };
  }

  /** What the server offers: `stream`, `poll` (monitor only) or `none`. Cached; a failure is asked again. */
  mode(): Promise<LiveMode> {
    this.#detected ??= this.#remote.serverInfo().then((info) => {
      this.#personalBucket = info.user?.bucket ?? null;
      const changes = info.capabilities.changes as
        | { stream?: { url?: string; heartbeat_seconds?: number } }
        | undefined;
      const heartbeat = changes?.stream?.heartbeat_seconds;
      if (typeof heartbeat === 'number' && heartbeat > 0) this.#silenceMs = heartbeat * 2_000 + 5_000;
      this.#mode = changes ? (changes.stream?.url ? 'stream' : 'poll') : 'none';
      return this.#mode;
    });
    this.#detected.catch(() => (this.#detected = null));
    return this.#detected;
  }

  /**
   * Calls `listener` with each entry of `bucket/collection`; the connection is open while some
   * collection watches. Resolves to the mode in use: `none` when there is no monitor, or when the
   * server could not be asked yet (offline): the connection then opens once it answers.
   */
  async watch(
    bucket: string,
    collection: string,
    listener: EntryListener,
  ): Promise<{ mode: LiveMode; stop: () => void }> {
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
    this.#ensureSession();
    if (this.#mode !== null) return { mode: this.#mode, stop };
    if (!this.#online.isOnline()) return { mode: 'none', stop };
    try {
      return { mode: await this.mode(), stop };
    } catch {
      return { mode: 'none', stop }; // the session keeps asking, with backoff
    }
  }

  /** Reconnect now (e.g. the network is back) rather than at the end of the backoff delay. */
  reconnectNow(): void {
    this.#wake?.();
  }

  close(): void {
    this.#watchers.clear();
    this.#stop();
  }

  #send(event: LiveEvent): void {
    this.#machine.send(event);
  }

  #dispatch(entry: ChangeEntry): void {
    this.#send({ type: 'entry', lastModified: entry.last_modified, at: Date.now() });
    this.#sink.entry(entry);
    for (const listener of this.#watchers.get(`${entry.bucket}/${entry.collection}`) ?? []) listener(entry);
    if (entry.bucket === this.#personalBucket)
      for (const listener of this.#watchers.get(`default/${entry.collection}`) ?? []) listener(entry);
  }

  #ensureSession(): void {
    if (this.#session) return;
    const session: Session = { abort: new AbortController(), leadership: null, channel: null };
    this.#session = session;
    const { signal } = session.abort;
    // The browser's `online` event cuts any wait short (a backoff, a detection retry).
    const unsubscribe = this.#online.subscribe((online) =>
      online ? this.reconnectNow() : this.#send({ type: 'offline' }),
    );
    // So does the server answering another request (a sync) after it could not be reached.
    const unsubscribeRecovered = this.#http.onRecovered(() => this.reconnectNow());
    signal.addEventListener(
      'abort',
      () => {
        unsubscribe();
        unsubscribeRecovered();
      },
      { once: true },
    );
    void this.#detectThenJoin(session).catch(() => {});
  }

  /** Finds out the mode (waiting for the network, retrying with backoff), then leads or follows. */
  async #detectThenJoin(session: Session): Promise<void> {
    const { signal } = session.abort;
    let mode: LiveMode | null = this.#mode;
    for (let failures = 0; mode === null && !signal.aborted; ) {
      await this.#whenOnline(signal);
      if (signal.aborted) return;
      this.#send({ type: 'detect' });
      try {
        mode = await this.mode();
      } catch (error) {
        this.#send({ type: 'retry' });
        await this.#pause(retryDelay(this.#retry, failures++, serverWait(error)), signal);
      }
    }
    if (mode === null || signal.aborted) return;
    const found: LiveMode = mode;
    this.#send({ type: 'mode', mode: found });
    if (found === 'none') return;
    const lock = this.#locks ? createWebLock(this.#locks) : SOLE_TAB;
    if (this.#locks) {
      // One tab leads; the others follow its broadcasts until the leadership comes to them.
      const channel = createTabChannel<LiveMessage>(`quire-live:${this.#key}`, this.#tabId);
      session.channel = channel;
      channel.subscribe((message) => {
        if (message?.kind !== 'entry' || signal.aborted || session.leadership?.leading) return;
        this.#dispatch(message.entry);
      });
      this.#send({ type: 'follow' });
    }
    session.leadership = lead(lock, `quire-live:${this.#key}`, (leading) =>
      this.#connect(found, leading, (entry) => session.channel?.post({ kind: 'entry', entry })),
    );
  }

  #stop(): void {
    const session = this.#session;
    this.#session = null;
    if (!session) return;
    session.abort.abort();
    void session.leadership?.release();
    session.channel?.close();
    this.#send({ type: 'stop' });
  }

  /** Holds the connection while this tab leads (until `signal` aborts), reconnecting after failures. */
  async #connect(mode: LiveMode, signal: AbortSignal, forward: EntryListener): Promise<void> {
    const received = (entry: ChangeEntry) => {
      this.#dispatch(entry);
      forward(entry);
    };
    let etag: string | null = null;
    for (let failures = 0; !signal.aborted; ) {
      await this.#whenOnline(signal);
      if (signal.aborted) break;
      this.#send({ type: 'connect' });
      // Going offline ends this connection at once: no waiting for it to time out.
      const connection = new AbortController();
      const end = () => connection.abort();
      signal.addEventListener('abort', end, { once: true });
      const unsubscribe = this.#online.subscribe((online) => online || end());
      let failure: unknown = null;
      try {
        if (mode === 'stream') {
          const lastEventId = this.#machine.status.lastEventId;
          await readChangeStream(
            this.#http,
            {
              lastEventId: lastEventId === null ? null : resumeFrom(lastEventId),
              signal: connection.signal,
              silenceMs: this.#silenceMs,
            },
            {
              onOpen: () => {
                failures = 0;
                this.#send({ type: 'open', at: Date.now() });
              },
              onContact: () => this.#send({ type: 'contact', at: Date.now() }),
              onEntry: received,
            },
          );
        } else {
          const since = this.#machine.status.lastEventId;
          const polled = await pollChangeMonitor(this.#http, {
            since: since === null ? null : resumeFrom(since),
            etag,
            signal: connection.signal,
          });
          etag = polled.etag;
          failures = 0;
          this.#send({ type: 'open', at: Date.now() });
          for (const entry of polled.entries) received(entry);
          await sleep(this.#pollMs, { signal: connection.signal, unref: true });
          continue;
        }
      } catch (error) {
        failures++;
        failure = error;
      } finally {
        unsubscribe();
        signal.removeEventListener('abort', end);
      }
      if (signal.aborted) break;
      this.#send({ type: 'retry' });
      if (!this.#online.isOnline()) continue; // waits for the network at the top of the loop
      // A stream that ended cleanly (server restart) reconnects at once the first time; the
      // network coming back ends the wait too.
      const woken = await this.#pause(
        failures === 0 ? 0 : retryDelay(this.#retry, failures - 1, serverWait(failure)),
        signal,
      );
      if (woken) failures = 0;
      else if (failures === 0) failures = 1; // the next end in a row waits
    }
  }

  async #whenOnline(signal: AbortSignal): Promise<void> {
    if (this.#online.isOnline()) return;
    this.#send({ type: 'offline' });
    await untilOnline(this.#online, signal);
  }

  /** Waits `ms`; resolves true when `reconnectNow()` cut the wait short. */
  async #pause(ms: number, signal: AbortSignal): Promise<boolean> {
    const controller = new AbortController();
    const end = () => controller.abort();
    signal.addEventListener('abort', end, { once: true });
    let woken = false;
    this.#wake = () => {
      woken = true;
      controller.abort();
    };
    await sleep(ms, { signal: controller.signal, unref: true });
    signal.removeEventListener('abort', end);
    this.#wake = null;
    return woken;
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
