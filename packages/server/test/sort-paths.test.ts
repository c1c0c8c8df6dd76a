/**
 * Sorting by a path through an array (`_sort=tags.0`, as PostgreSQL's `#>` reads it) pages to the
 * end: the Next-Page token carries the element the sort read. (Kinto's token reads only objects'
 * keys, so its pages by such a path stop after the first; issue 29.)
 */
import type { FastifyInstance } from 'fastify';
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = basicAuth('alice');

async function pagedIds(app: FastifyInstance, first: string): Promise<string[]> {
  const seen: string[] = [];
  let url: string | undefined = first;
  while (url !== undefined && seen.length < 20) {
    const response = await app.inject({ url, headers: alice });
    expect(response.statusCode, response.body).toBe(200);
    seen.push(...(response.json().data as Array<{ id: string }>).map((record) => record.id));
    const next = response.headers['next-page'] as string | undefined;
    url = next === undefined ? undefined : `${new URL(next).pathname}${new URL(next).search}`;
  }
  return seen;
}

describeOnBackends('sorting by array elements', { timeout: 30_000 }, ({ serverWith }) => {
  it('pages by _sort=tags.0 and -tags.0 to the end, missing elements last ascending', async () => {
    const app = await serverWith({});
    await app.inject({ method: 'PUT', url: '/v1/buckets/sp', headers: alice, payload: {} });
    await app.inject({ method: 'PUT', url: '/v1/buckets/sp/collections/c', headers: alice, payload: {} });
    const tags: Record<string, unknown> = { r1: [3, 0], r2: [1], r3: [2, 9], r4: [], r5: 'x' };
    for (const [id, value] of Object.entries(tags)) {
      await app.inject({
        method: 'PUT',
        url: `/v1/buckets/sp/collections/c/records/${id}`,
        headers: alice,
        payload: { data: { tags: value } },
      });
    }
    const records = '/v1/buckets/sp/collections/c/records';
    expect(await pagedIds(app, `${records}?_sort=tags.0,id&_limit=1`)).toEqual(['r2', 'r3', 'r1', 'r4', 'r5']);
    expect(await pagedIds(app, `${records}?_sort=-tags.0,id&_limit=2`)).toEqual(['r4', 'r5', 'r1', 'r3', 'r2']);
    expect(await pagedIds(app, `${records}?_sort=tags.1&_limit=1`)).toEqual(['r1', 'r3', 'r5', 'r4', 'r2']);
  });
});
