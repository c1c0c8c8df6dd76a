/**
 * Requests in progress per identity (issue 36, CPU): the work a request does on the event loop
 * (projection, sorting, serialisation) runs in slices that yield, and every request in progress
 * gets a slice in turn; twelve heavy requests of one user would put twelve slices before each
 * step of anybody else's. So one owner (an identity, or an address for anonymous callers:
 * session-budget.ts `sessionOwner`) has at most `perOwner` requests in progress; its next ones
 * wait, in arrival order, in a queue of at most `queued` for at most `waitMs`, and are refused
 * past either (429 with Retry-After). Other owners are not held back: each owner's queue moves
 * only as that owner's own requests end. A waiting request whose client goes away leaves the queue.
 * A batch's sub-requests run inside their batch's admission (app.ts admits network requests only).
 */
import type { FastifyReply } from 'fastify';
import { ApiError, ERRNO } from '../errors.js';

interface Owner {
  running: number;
  waiting: Array<() => void>;
}

export interface AdmissionLimits {
  /** Requests in progress per owner; 0: no limit. */
  perOwner: number;
  /** Requests waiting per owner; one more is refused at once. */
  queued: number;
  /** Longest wait in the queue before a refusal. */
  waitMs: number;
}

export class FairAdmission {
  readonly #limits: AdmissionLimits;
  readonly #owners = new Map<string, Owner>();

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  /** Owners with requests in progress or waiting (tests, metrics). */
  get stats(): { running: number; waiting: number } {
    let running = 0;
    let waiting = 0;
    for (const owner of this.#owners.values()) {
      running += owner.running;
      waiting += owner.waiting.length;
    }
    return { running, waiting };
  }

  /**
   * A release (call it once, when the request ends) when `key` may run at once; null when it must
   * wait its turn (`admit`). Nothing is allocated for the common case of a free owner.
   */
  tryAdmit(key: string): (() => void) | null {
    const owner = this.#owners.get(key);
    if (!owner) return this.#run(key, this.#owner(key));
    if (this.#limits.perOwner <= 0 || (owner.running < this.#limits.perOwner && owner.waiting.length === 0))
      return this.#run(key, owner);
    return null;
  }

  /**
   * Resolves with a release (call it once, when the request ends) when `key` may run; rejects
   * with 429 when its queue is full or the wait passes `waitMs`, or when `signal` aborts.
   */
  admit(key: string, signal: AbortSignal): Promise<() => void> {
    const { queued, waitMs } = this.#limits;
    const now = this.tryAdmit(key);
    if (now) return Promise.resolve(now);
    const owner = this.#owners.get(key)!;
    if (owner.waiting.length >= queued) {
      this.#forget(key, owner);
      return Promise.reject(refused(`more than ${queued} requests waiting`, waitMs));
    }
    return new Promise((resolve, reject) => {
      const leave = (error: Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        owner.waiting.splice(owner.waiting.indexOf(grant), 1);
        this.#forget(key, owner);
        reject(error);
      };
      const grant = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(this.#run(key, owner));
      };
      // Nobody reads the answer; the error only ends the request's hooks.
      const onAbort = () => leave(refused('the client went away', waitMs));
      const timer = setTimeout(() => leave(refused(`no turn within ${waitMs} ms`, waitMs)), waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      owner.waiting.push(grant);
    });
  }

  #owner(key: string): Owner {
    const owner: Owner = { running: 0, waiting: [] };
    this.#owners.set(key, owner);
    return owner;
  }

  #run(key: string, owner: Owner): () => void {
    owner.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      owner.running--;
      const next = owner.waiting.shift();
      if (next) next();
      else this.#forget(key, owner);
    };
  }

  #forget(key: string, owner: Owner): void {
    if (owner.running === 0 && owner.waiting.length === 0) this.#owners.delete(key);
  }
}

function refused(why: string, waitMs: number): ApiError {
  return new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
    message: `Too many requests in progress for this user or address (${why}; max_requests_in_progress_per_identity).`,
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))) },
  });
}

/**
 * Admits `request` for `owner`, releasing its place when its response ends or its client goes
 * away. A refusal is thrown (the error handler answers it). Undefined, not a promise, when the
 * owner may run at once (most requests): no controller, no wait.
 */
export function admitRequest(admission: FairAdmission, owner: string, reply: FastifyReply): Promise<void> | undefined {
  const now = admission.tryAdmit(owner);
  if (!now) return waitForTurn(admission, owner, reply);
  holdUntilClosed(reply.raw, now);
  return undefined;
}

async function waitForTurn(admission: FairAdmission, owner: string, reply: FastifyReply): Promise<void> {
  const response = reply.raw;
  const gone = new AbortController();
  const onClose = () => gone.abort();
  response.once('close', onClose);
  let release: () => void;
  try {
    release = await admission.admit(owner, gone.signal);
  } finally {
    response.removeListener('close', onClose);
  }
  holdUntilClosed(response, release);
}

/** Keeps an admitted request's place until its response closes (at once if it has). */
function holdUntilClosed(response: FastifyReply['raw'], release: () => void): void {
  if (response.destroyed || response.writableFinished) {
    release();
    return;
  }
  response.once('close', release);
}
