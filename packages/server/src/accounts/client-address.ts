/**
 * The client address of the request whose headers a policy is reading. Policies only see the
 * headers (AuthPolicy.authenticate), yet the login limiter counts failures per address: an
 * early onRequest hook records the address against the very headers object Fastify later
 * hands to the policies. Batch sub-requests (injected, always from 127.0.0.1) get none, so
 * they cannot exhaust the loopback address's allowance; the per-account limit still applies.
 */
import type { FastifyInstance } from 'fastify';
import { batchSession } from '../request-context.js';

const addresses = new WeakMap<object, string>();

export function clientAddressOf(headers: object): string | undefined {
  return addresses.get(headers);
}

/** Must be registered before the authentication hook. */
export function registerClientAddressHook(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (batchSession() === undefined) addresses.set(request.headers, request.ip);
  });
}
