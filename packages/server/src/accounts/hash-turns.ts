/**
 * Turns at argon2 (issue 36, shared caps). Each hash or verification holds one of libuv's
 * threads (4 by default, which file reads and DNS share) and ~19 MiB for tens of milliseconds.
 * At most `capacity` run at once per process; the others wait in one queue per client address
 * (its /64 for IPv6), and a free turn goes to the addresses in rotation: one address's flood of
 * logins (or of sign-ups) delays another address's by one turn per address waiting, not by the
 * flood's length. An address with `maxQueued` waiting is refused at once (429); a turn that does
 * not come within `waitMs` ends in 503 with Retry-After (the process is busy, not the caller).
 */
import { addressKey } from '../auth/client-address.js';
import { ApiError, ERRNO } from '../errors.js';

export interface HashTurnLimits {
  capacity: number;
  maxQueued: number;
  waitMs: number;
}

type Waiter = () => void;

export class HashTurns {
  readonly #limits: HashTurnLimits;
  #running = 0;
  /** Waiting addresses in rotation order (a Map keeps insertion order): the first is served next. */
  readonly #queues = new Map<string, Waiter[]>();

  constructor(limits: HashTurnLimits) {
    this.#limits = limits;
  }

  /** Hashes running and waiting (tests, metrics). */
  get stats(): { running: number; waiting: number } {
    let waiting = 0;
    for (const queue of this.#queues.values()) waiting += queue.length;
    return { running: this.#running, waiting };
  }

  /** `work` run in `address`'s turn. */
  async run<T>(address: string, work: () => Promise<T>): Promise<T> {
    await this.#turn(addressKey(address));
    try {
      return await work();
    } finally {
      this.#running--;
      this.#next();
    }
  }

  #turn(key: string): Promise<void> {
    const { capacity, maxQueued, waitMs } = this.#limits;
    if (this.#running < capacity && this.#queues.size === 0) {
      this.#running++;
      return Promise.resolve();
    }
    const queue = this.#queues.get(key) ?? [];
    if (queue.length >= maxQueued)
      return Promise.reject(refused(429, `account_password_checks_max_queued_per_address: ${maxQueued}`, waitMs));
    this.#queues.set(key, queue);
    return new Promise((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(grant), 1);
        if (queue.length === 0 && this.#queues.get(key) === queue) this.#queues.delete(key);
        reject(refused(503, `no turn within account_password_checks_queue_timeout_seconds`, waitMs));
      }, waitMs);
      queue.push(grant);
    });
  }

  /** The next address in rotation gets the free turn, and goes to the end of the rotation. */
  #next(): void {
    const first = this.#queues.entries().next();
    if (first.done) return;
    const [key, queue] = first.value;
    const grant = queue.shift();
    this.#queues.delete(key);
    if (queue.length > 0) this.#queues.set(key, queue);
    if (grant) {
      this.#running++;
      grant();
    }
  }
}

function refused(status: 429 | 503, reason: string, waitMs: number): ApiError {
  return new ApiError(status, status === 429 ? ERRNO.CLIENT_REACHED_CAPACITY : ERRNO.BACKEND, {
    message: `Too many password checks at once (${reason}); retry later.`,
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))) },
  });
}
