/**
 * The state of the live-changes connection, as one small machine: what happened (an event) →
 * the next status. Pure; live.ts feeds it and tells listeners when the status changed.
 *
 *   idle ──watch──► detecting ──mode──► (follower tab) following ◄──┐
 *     ▲               │ offline                  │ lead             │ follow
 *     │               ▼                          ▼                  │
 *     │            offline ◄──offline── connecting ──open──► connected
 *     │               │ online               ▲   │ failed         │ ended / failed
 *     │               └──────► (detecting or connecting)  ◄── retrying ◄┘
 *     └── stop (from any state)
 */
/** How changes are learnt: `stream` (pushed), `poll` (the monitor on a timer), `none` (no monitor). */
export type LiveMode = 'stream' | 'poll' | 'none';

export type LiveState = 'idle' | 'offline' | 'detecting' | 'following' | 'connecting' | 'connected' | 'retrying';

export interface LiveStatus {
  /** How changes are learnt: `stream` (pushed), `poll` (the monitor, on a timer), `none` (each collection polls). */
  mode: LiveMode;
  state: LiveState;
  /** The connection (stream) or the last poll is up: `state === 'connected'`. */
  connected: boolean;
  /** Another tab holds the connection and forwards its entries to this one: `state === 'following'`. */
  follower: boolean;
  /** When the server last confirmed the entries are current (an event, a heartbeat or a poll), ms since epoch. */
  lastContact: number | null;
  /** The newest entry timestamp received (the stream's `Last-Event-ID`). */
  lastEventId: number | null;
}

export type LiveEvent =
  /** Collections watch: find out what the server offers. */
  | { type: 'detect' }
  | { type: 'mode'; mode: LiveMode }
  /** The network is gone (the browser says so): nothing is tried until it is back. */
  | { type: 'offline' }
  /** Waiting for the tab that holds the connection: its entries arrive through the channel. */
  | { type: 'follow' }
  /** This tab holds the connection: opening it. */
  | { type: 'connect' }
  | { type: 'open'; at: number }
  /** An event, a heartbeat, a poll answered, or an entry forwarded by the leading tab. */
  | { type: 'contact'; at: number }
  | { type: 'entry'; lastModified: number; at: number }
  /** The connection failed or ended: waiting before the next attempt. */
  | { type: 'retry' }
  | { type: 'stop' };

export const INITIAL_LIVE_STATUS: LiveStatus = {
  mode: 'none',
  state: 'idle',
  connected: false,
  follower: false,
  lastContact: null,
  lastEventId: null,
};

function withState(status: LiveStatus, state: LiveState): LiveStatus {
  return { ...status, state, connected: state === 'connected', follower: state === 'following' };
}

export function nextLiveStatus(status: LiveStatus, event: LiveEvent): LiveStatus {
  switch (event.type) {
    case 'detect':
      return withState(status, 'detecting');
    case 'mode':
      // `none`: no monitor, collections poll on their own: nothing to connect.
      return event.mode === 'none' ? withState({ ...status, mode: 'none' }, 'idle') : { ...status, mode: event.mode };
    case 'offline':
      return withState(status, 'offline');
    case 'follow':
      return withState(status, 'following');
    case 'connect':
      return withState(status, 'connecting');
    case 'open':
      return withState({ ...status, lastContact: event.at }, 'connected');
    case 'contact':
      return status.state === 'connected' || status.state === 'following'
        ? { ...status, lastContact: event.at }
        : status;
    case 'entry': {
      const lastEventId =
        status.lastEventId === null ? event.lastModified : Math.max(status.lastEventId, event.lastModified);
      return { ...status, lastEventId, lastContact: event.at };
    }
    case 'retry':
      return status.state === 'idle' ? status : withState(status, 'retrying');
    case 'stop':
      return withState(status, 'idle');
  }
}

/** The current status and who listens to it; listeners hear only real changes. */
export class LiveStatusMachine {
  #status: LiveStatus = INITIAL_LIVE_STATUS;
  readonly #listeners = new Set<(status: LiveStatus) => void>();

  get status(): LiveStatus {
    return this.#status;
  }

  send(event: LiveEvent): void {
    const next = nextLiveStatus(this.#status, event);
    if (next === this.#status || sameStatus(next, this.#status)) return;
    this.#status = next;
    for (const listener of [...this.#listeners]) listener(next);
  }

  subscribe(listener: (status: LiveStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function sameStatus(a: LiveStatus, b: LiveStatus): boolean {
  return a.mode === b.mode && a.state === b.state && a.lastContact === b.lastContact && a.lastEventId === b.lastEventId;
}
