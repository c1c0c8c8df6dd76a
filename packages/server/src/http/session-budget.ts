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
 * and one 'close' listener for the request's life.
 */
export function sessionBudget(request: FastifyRequest, reply: FastifyReply): () => SessionOptions {
  let controller: AbortController | null = null;
  return () => {
    if (!controller) {
      const made = new AbortController();
      controller = made;
      const response = reply.raw;
      if (response.writableFinished || response.destroyed) made.abort(new Error('the client went away'));
      else
        response.once('close', () => {
          if (!response.writableFinished) made.abort(new Error('the client went away'));
        });
    }
    const claim = sessionClaim(request.identity?.userId, request.ip);
    // The database time of its costly statements counts against its owner's turns of the loop.
    return { signal: controller.signal, ...claim, spent: (ms: number) => loopTurns.charge(claim.owner, ms) };
  };
}
