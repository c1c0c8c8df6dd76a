/**
 * A batch can neither call itself, nor outlive its client, nor run past its time budget, on
 * either store. Each failure mode used to freeze or exhaust the store: a nested batch waited
 * forever on its own transaction (embedded) or took one pooled connection per level
 * (PostgreSQL); an abandoned batch kept running and holding its locks until it committed.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = { ...basicAuth('alice'), 'content-type': 'application/json' };
const COLLECTION = '/v1/buckets/b/collections/c';
const RECURSION = 'Recursive call on /batch endpoint is forbidden.';

/** Fails instead of hanging: a frozen store must fail the test, not the run. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A batch nesting `depth` batches, the inner ones reached through `path`. */
function nestedBatch(path: string, depth: number): Record<string, unknown> {
  let body: Record<string, unknown> = { requests: [{ path: '/' }] };
  for (let level = 1; level < depth; level++) body = { requests: [{ method: 'POST', path, body }] };
  return body;
}

/** A batch that puts `first` then reads the collection `reads` times (a long batch). */
function longBatch(first: string, reads: number): Record<string, unknown> {
  return {
    requests: [
      { method: 'PUT', path: `${COLLECTION}/records/${first}`, body: { data: { n: 1 } } },
      ...Array.from({ length: reads }, () => ({ method: 'GET', path: `${COLLECTION}/records?_limit=1` })),
    ],
  };
}

/** POSTs `body` to /v1/batch over a real connection and destroys it after `ms`. */
function abandonBatch(port: number, body: unknown, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const outgoing = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/batch',
      headers: { ...alice, 'content-length': Buffer.byteLength(payload) },
    });
    outgoing.on('error', () => resolve());
    outgoing.on('response', () => resolve()); // answered before we left: the assertions will say
    outgoing.end(payload, () => setTimeout(() => outgoing.destroy(), ms));
  });
}

describeOnBackends('batch safety', { timeout: 120_000 }, ({ name, serverWith }) => {
  let app: FastifyInstance;

  beforeAll(async () => {
    // Long batches of thousands of requests are more keys than max_json_keys lets one body hold.
    app = await serverWith({ batch_max_requests: null, batch_timeout_seconds: 60, max_json_keys: 100_000 });
    for (const url of ['/v1/buckets/b', COLLECTION, '/v1/buckets/b/collections/other']) {
      expect((await app.inject({ method: 'PUT', url, headers: alice })).statusCode).toBe(201);
    }
  });

  async function storeAnswers(): Promise<void> {
    const heartbeat = await within(app.inject({ method: 'GET', url: '/v1/__heartbeat__' }), 5_000, 'the heartbeat');
    expect(heartbeat.json()).toEqual({ storage: true, permission: true });
    const write = await within(
      app.inject({ method: 'PUT', url: `${COLLECTION}/records/after`, headers: alice, payload: { data: {} } }),
      5_000,
      'a write',
    );
    expect(write.statusCode).toBeLessThan(300);
  }

  const disguises = [
    '/batch',
    '/v1/batch',
    '/%62atch',
    '/v1/./batch',
    '/v1/batch#x',
    '//batch',
    '/batch/',
    '/v1/%2e/batch',
    '/v1/a/../batch',
    '/bat%63h?x=1',
  ];
  it.each(disguises)(
    'refuses a sub-request to the batch endpoint written %s, as a 400 for the whole batch',
    async (path) => {
      const response = await within(
        app.inject({
          method: 'POST',
          url: '/v1/batch',
          headers: alice,
          payload: { requests: [{ method: 'POST', path, body: { requests: [{ path: '/' }] } }] },
        }),
        5_000,
        `a batch nesting ${path}`,
      );
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ errno: 107, message: `requests in body: ${RECURSION}` });
      await storeAnswers();
    },
  );

  it('refuses ten nested levels at once, without taking a connection per level', async () => {
    const response = await within(
      app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: nestedBatch('/%62atch', 10) }),
      5_000,
      'ten nested batches',
    );
    expect(response.statusCode).toBe(400);
    await storeAnswers();
  });

  it('still serves paths that merely contain "batch" (unlike the original server)', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          { method: 'PUT', path: '/buckets/batched' },
          { path: '/buckets/batched/collections/batch', method: 'PUT' },
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().responses.map((entry: { status: number }) => entry.status)).toEqual([201, 201]);
  });

  it('rolls back and stops a batch whose client went away', async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      await abandonBatch(port, longBatch('abandoned', 20_000), 300);
      // Once the server notices, the batch's locks are gone: a write to the same collection
      // goes through, and the batch's own write never appears.
      await storeAnswers();
      const abandoned = await app.inject({ method: 'GET', url: `${COLLECTION}/records/abandoned`, headers: alice });
      expect(abandoned.statusCode).toBe(404);
    } finally {
      await app.server.close();
    }
  });

  it('a long batch does not stall requests to other collections', async () => {
    const other = '/v1/buckets/b/collections/other/records';
    // A collection in use (the embedded store's first read of a never-written collection
    // stores its timestamp, a write).
    expect(
      (await app.inject({ method: 'PUT', url: `${other}/before`, headers: alice, payload: { data: {} } })).statusCode,
    ).toBe(201);
    const long = app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: longBatch('long', 8_000) });
    let batchDone = false;
    void long.then(() => (batchDone = true));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the batch holds its transaction now
    const read = await app.inject({ method: 'GET', url: other, headers: alice });
    expect(read.statusCode).toBe(200);
    expect(batchDone).toBe(false);
    // PostgreSQL locks per collection. The embedded store (SQLite) has one writer: a write
    // anywhere waits for the batch to end (within batch_timeout_seconds); reads never do.
    if (name === 'postgresql') {
      const write = await app.inject({
        method: 'PUT',
        url: `${other}/meanwhile`,
        headers: alice,
        payload: { data: {} },
      });
      expect(write.statusCode).toBe(201);
      expect(batchDone).toBe(false);
    }
    expect((await long).statusCode).toBe(200);
  });

  it('rolls back a batch past its time budget, with a clear error', async () => {
    const budgeted = await serverWith({ batch_max_requests: null, batch_timeout_seconds: 0.3, max_json_keys: 100_000 });
    const response = await within(
      budgeted.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: longBatch('late', 20_000) }),
      10_000,
      'a batch past its budget',
    );
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ errno: 201, message: expect.stringContaining('batch_timeout_seconds') });
    expect(response.headers['retry-after']).toBeDefined();
    const late = await budgeted.inject({ method: 'GET', url: `${COLLECTION}/records/late`, headers: alice });
    expect(late.statusCode).toBe(404);
  });
});
