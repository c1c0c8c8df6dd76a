/**
 * What a request tells the store when its unit of work opens a session (storage/types.ts
 * `SessionOptions`, issue 36): a signal aborted when its client goes away before the answer is
 * sent — the store then cancels its statements — and who it is for, the keys the store shares its
 * connections by: the identity (the client's address for anonymous callers), and the address
 * (an IPv6 one by /64), whose identities share one cap.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { addressKey } from '../auth/client-address.js';
import { loopTurns } from '../engine/loop-turns.js';
import type { SessionOptions } from '../storage/types.js';

/** The owner key of a caller. */
export function sessionOwner(userId: string | null | undefined, ip: string): string {
  return userId ? `user:${userId}` : `address:${addressKey(ip)}`;
}

/** Who a session works for: its owner, and the address whose identities share one cap. */
export function sessionClaim(userId: string | null | undefined, ip: string): { owner: string; address: string } {
  return { owner: sessionOwner(userId, ip), address: addressKey(ip) };
}

/**
 * The budget of `request`, made on first use (most requests open one session): one AbortController
 * and one 'close' listener for the request's life, made only when a store reads the signal (a
 * statement on a pooled connection, a wait for one: fair-share.ts, pg-cancel.ts). Most reads never
 * do (a fixed statement on a shared connection, an answer from the read cache): creating the
 * controller and its listener for them was ~4% of a GET's server CPU (bench/README.md).
 */
export function sessionBudget(request: FastifyRequest, reply: FastifyReply): () => SessionOptions {
  let controller: AbortController | null = null;
  const signal = (): AbortSignal => {
    if (!controller) {
      const made = new AbortController();
      controller = made;
      const response = reply.raw;
      // Read after the client went away (or after the answer): stopped already.
      if (response.writableFinished || response.destroyed) made.abort(new Error('the client went away'));
      else
        response.once('close', () => {
          if (!response.writableFinished) made.abort(new Error('the client went away'));
        });
    }
    return controller.signal;
  };
  return () => new RequestBudget(request.identity?.userId ?? null, request.ip, signal);
}

/** A session's options, the owner's key and the signal made when first read. */
class RequestBudget implements SessionOptions {
  #owner: string | null = null;
  #address: string | null = null;

  constructor(
    readonly userId: string | null,
    readonly ip: string,
    readonly lazySignal: () => AbortSignal,
  ) {}

  get signal(): AbortSignal {
    return this.lazySignal();
  }

  get owner(): string {
    this.#owner ??= sessionOwner(this.userId, this.ip);
    return this.#owner;
  }

  get address(): string {
    this.#address ??= addressKey(this.ip);
    return this.#address;
  }

  /** The database time of its costly statements counts against its owner's turns of the loop. */
  readonly spent = (ms: number): void => loopTurns.charge(this.owner, ms);
}
