/**
 * Requests in progress per identity (http/fair-admission.ts, issue 36), on both stores, with real
 * concurrency over HTTP: one identity's requests past `max_requests_in_progress_per_identity` wait
 * their turn, past `max_requests_queued_per_identity` are refused 429 (errno 117, Retry-After),
 * another identity is not held back, a batch is one request (its sub-requests do not queue behind
 * it), and a client that goes away leaves the queue.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnBackends } from '../helpers/backends.js';
import { basicAuth } from '../helpers/embedded-server.js';
import { type HostileTarget, hostileTarget } from './hostile.js';

const RECORDS = '/v1/buckets/b/collections/c/records';
// Costly enough (projection and sort of every record) for the requests sent at once to overlap.
const HEAVY = `${RECORDS}?_fields=${Array.from({ length: 100 }, (_, i) => `f${i}.a`).join(',')}&_sort=-title`;
let agent: Agent;

interface Reply {
  status: number;
  errno?: number;
  retryAfter?: string;
}

async function get(target: HostileTarget, path: string, options: { headers?: object; signal?: AbortSignal } = {}) {
  const response = await request(`${target.base}${path}`, { dispatcher: agent, ...options } as never);
  const body = (await response.body.json()) as { errno?: number };
  const retryAfter = response.headers['retry-after'];
  return { status: response.statusCode, errno: body.errno, retryAfter } as Reply;
}

describeOnBackends('fair admission', { timeout: 120_000 }, (backend) => {
  let target: HostileTarget;

  beforeAll(async () => {
    agent = new Agent({ connections: 64 });
    target = await hostileTarget(backend, {
      settings: {
        max_requests_in_progress_per_identity: 1,
        max_requests_queued_per_identity: 2,
        requests_queue_timeout_seconds: 60,
      },
      seed: async (storage) => {
        await storage.transaction((session) =>
          session.objects.insertMany(
            { resourceName: 'record', parentId: '/buckets/b/collections/c' },
            Array.from({ length: 1000 }, (_, i) => ({
              id: `r${i}`,
              data: { n: i, title: `title ${i} ${'lorem '.repeat(20)}`, body: 'x'.repeat(800) },
            })),
          ),
        );
      },
    });
    // Connections open before the tests: the requests sent at once then arrive at once.
    for (let round = 0; round < 4; round++)
      await Promise.all(Array.from({ length: 4 }, () => get(target, `${RECORDS}?_limit=1`)));
    await Promise.all(Array.from({ length: 16 }, () => get(target, '/v1/')));
  }, 120_000);
  afterAll(async () => {
    // Its keep-alive connections would hold the server's close.
    await agent.close();
    await target?.close();
  });

  it('queues one identity past its share, refuses past the queue (429), serves another identity', async () => {
    const heavy = Promise.all(Array.from({ length: 16 }, () => get(target, HEAVY)));
    const other = await get(target, `${RECORDS}?_limit=1`, { headers: basicAuth('other') });
    const answers = await heavy;
    expect(other.status).toBe(200);
    const refused = answers.filter((answer) => answer.status !== 200);
    // One in progress and two waiting at most while they all arrive: the others are refused.
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) expect(answer).toMatchObject({ status: 429, errno: 117, retryAfter: '60' });
  });

  it('does not let an event-stream Accept header skip the queue off the change monitor', async () => {
    const headers = { accept: 'text/event-stream, application/json' };
    const answers = await Promise.all(Array.from({ length: 16 }, () => get(target, HEAVY, { headers })));
    expect(answers.filter((answer) => answer.status === 429).length).toBeGreaterThan(0);
  });

  it('announces the share in GET / settings', async () => {
    const response = await request(`${target.base}/v1/`, { dispatcher: agent });
    const hello = (await response.body.json()) as { settings: Record<string, unknown> };
    expect(hello.settings.max_requests_in_progress_per_identity).toBe(1);
  });

  it('admits a batch as one request: its sub-requests do not wait behind it', async () => {
    const requests = Array.from({ length: 5 }, () => ({
      method: 'GET',
      path: '/buckets/b/collections/c/records?_limit=2',
    }));
    const response = await request(`${target.base}/v1/batch`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requests }),
    });
    const body = (await response.body.json()) as { responses: Array<{ status: number }> };
    expect(response.statusCode).toBe(200);
    expect(body.responses.map((entry) => entry.status)).toEqual([200, 200, 200, 200, 200]);
  });

  it('lets a client that goes away leave the queue', async () => {
    const running = get(target, HEAVY);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const gone = new AbortController();
    const leaving = [get(target, HEAVY, { signal: gone.signal }), get(target, HEAVY, { signal: gone.signal })];
    await new Promise((resolve) => setTimeout(resolve, 50));
    gone.abort();
    await Promise.allSettled(leaving);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Their places are free again: two more wait their turn (without it, both would be refused).
    const next = await Promise.all([get(target, `${RECORDS}?_limit=1`), get(target, `${RECORDS}?_limit=1`)]);
    expect((await running).status).toBe(200);
    expect(next.map((answer) => answer.status)).toEqual([200, 200]);
  });
});
