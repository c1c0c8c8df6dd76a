/**
 * Issue 29, defect 2: one user must not be able to cut everyone's change stream. A user who owns
 * a bucket readable by everyone fills it with collections of the longest ids allowed; a
 * bystander's new stream still gets its status line, every entry and then its own changes, paced
 * by how fast it reads, and ids that no URL could address are refused at creation.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';
import { openEventStream, type EventStreamReader } from './helpers/sse.js';

const MONITOR = '/v1/buckets/monitor/collections/changes/records';
const mallory = basicAuth('mallory');
const bob = basicAuth('bob');
let unique = 0;
const name = (prefix: string) => `${prefix}${Date.now().toString(36)}${unique++}`;

describeOnBackends('a bystander’s change stream (issue 29, defect 2)', { timeout: 60_000 }, ({ serverWith }) => {
  const open: Array<EventStreamReader | FastifyInstance> = [];
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close();
  });

  it('refuses ids over max_object_id_length (no URL could address them) and says the limit in GET /', async () => {
    const app = await serverWith({});
    open.push(app);
    const bucket = name('pub');
    expect((await app.inject({ method: 'PUT', url: `/v1/buckets/${bucket}`, headers: mallory })).statusCode).toBe(201);
    const hello = (await app.inject({ url: '/v1/' })).json();
    expect(hello.settings.max_object_id_length).toBe(256);

    const tooLong = 'a'.repeat(20_000);
    for (const [method, url, payload] of [
      ['POST', `/v1/buckets/${bucket}/collections`, { data: { id: tooLong } }],
      ['POST', '/v1/buckets', { data: { id: 'b'.repeat(257) } }],
      ['PUT', `/v1/buckets/${bucket}/collections/${'c'.repeat(257)}`, {}],
      ['PUT', `/v1/buckets/${bucket}/groups/${'g'.repeat(257)}`, { data: { members: [] } }],
    ] as const) {
      const response = await app.inject({ method, url, headers: mallory, payload });
      expect(response.statusCode, `${method} ${url.slice(0, 60)}`).toBe(400);
      expect(response.json()).toMatchObject({
        errno: 107,
        details: [{ location: 'path', description: 'Invalid object id: longer than 256 characters' }],
      });
    }
    // Through a batch too, and nothing was written.
    const batch = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: mallory,
      payload: {
        requests: [{ method: 'POST', path: `/buckets/${bucket}/collections`, body: { data: { id: tooLong } } }],
      },
    });
    expect(batch.json().responses[0].status).toBe(400);
    expect((await app.inject({ url: `/v1/buckets/${bucket}/collections`, headers: mallory })).json().data).toEqual([]);
    // The longest allowed id works everywhere, its URL included.
    const longest = 'c'.repeat(256);
    expect(
      (await app.inject({ method: 'PUT', url: `/v1/buckets/${bucket}/collections/${longest}`, headers: mallory }))
        .statusCode,
    ).toBe(201);
    expect(
      (
        await app.inject({
          method: 'PUT',
          url: `/v1/buckets/${bucket}/collections/${longest}/records/${'r'.repeat(256)}`,
          headers: mallory,
          payload: { data: {} },
        })
      ).statusCode,
    ).toBe(201);
  });

  it('a bystander’s new stream: status line, every entry, its changes, however many a stranger opened', async () => {
    // A small buffer allowance, as in the report: 400 short collections were enough to cut every new stream.
    const app = await serverWith({
      changes_stream_max_buffer_bytes: 20_000,
      changes_stream_coalesce_ms: 0,
      paginate_by: 100,
    });
    open.push(app);
    const everyone = name('everyone');
    await app.inject({
      method: 'PUT',
      url: `/v1/buckets/${everyone}`,
      headers: mallory,
      payload: { permissions: { read: ['system.Everyone'] } },
    });
    const count = 400;
    for (let start = 0; start < count; start += 25) {
      const requests = Array.from({ length: 25 }, (_, i) => ({
        method: 'PUT',
        path: `/buckets/${everyone}/collections/${`${start + i}-`.padEnd(256, 'x')}`,
      }));
      const batch = await app.inject({ method: 'POST', url: '/v1/batch', headers: mallory, payload: { requests } });
      expect(batch.json().responses.every((response: { status: number }) => response.status === 201)).toBe(true);
    }
    const own = name('own');
    await app.inject({ method: 'PUT', url: `/v1/buckets/${own}`, headers: bob });
    await app.inject({ method: 'PUT', url: `/v1/buckets/${own}/collections/tasks`, headers: bob });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });

    // The poll is a page (paginate_by), not every entry at once.
    const page = await app.inject({ url: `${MONITOR}?bucket=${everyone}`, headers: bob });
    expect(page.json().data).toHaveLength(100);
    expect(page.headers['next-page']).toBeDefined();

    // Three bystanders at once: each gets the status line at once and every entry, in timestamp order.
    const streams = await Promise.all([0, 1, 2].map(() => openEventStream(`${base}${MONITOR}`, bob)));
    open.push(...streams);
    for (const stream of streams) {
      expect(stream.response.status).toBe(200);
      const events = [];
      const collections = new Set<string>();
      while (collections.size < count + 1) {
        const event = await stream.next(10_000);
        events.push(event);
        const entry = JSON.parse(event.data) as { bucket: string; collection: string };
        if (entry.bucket === everyone || entry.bucket === own) collections.add(`${entry.bucket}/${entry.collection}`);
      }
      const stamps = events.map((event) => Number(event.id));
      expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    }
    // Then their own changes, live.
    const written = (
      await app.inject({
        method: 'PUT',
        url: `/v1/buckets/${own}/collections/tasks/records/r1`,
        headers: bob,
        payload: { data: {} },
      })
    ).json();
    for (const stream of streams) {
      const events = await stream.until((event) => Number(event.id) === written.data.last_modified, 10_000);
      expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ bucket: own, collection: 'tasks' });
    }
  });
});
