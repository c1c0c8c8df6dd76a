/**
 * A number JSON can write but a double cannot hold (`1e400`, `-1e400`) is bad input, 400, on every
 * write path of the API: parsed, it would be Infinity, which JSON.stringify stores as `null`
 * (issue 37, item 2). Its neighbours that a double does hold (`1e308`, `1e-400` → 0) are kept.
 */
import { expect, it } from 'vitest';
import { basicAuth, useEmbeddedStore } from './helpers/embedded-server.js';

const store = useEmbeddedStore();
const alice = { ...basicAuth('alice'), 'content-type': 'application/json' };

it('refuses 1e400 and -1e400 in a body with 400 (never stored as null), in a record, a patch and a batch', async () => {
  const app = await store.serverWith();
  await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: alice });
  await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: alice });
  const url = '/v1/buckets/b/collections/c/records/r';
  for (const number of ['1e400', '-1e400', '12e999', `1${'0'.repeat(400)}`]) {
    for (const [method, payload] of [
      ['PUT', `{"data":{"n":${number}}}`],
      ['PATCH', `{"data":{"deep":[{"n":${number}}]}}`],
      [
        'POST',
        `{"requests":[{"method":"PUT","path":"/buckets/b/collections/c/records/r","body":{"data":{"n":${number}}}}]}`,
      ],
    ] as const) {
      const response = await app.inject({
        method,
        url: method === 'POST' ? '/v1/batch' : url,
        headers: alice,
        payload,
      });
      expect(response.statusCode, `${method} ${number}`).toBe(400);
      expect(response.json().message).toContain('a number too large to store');
    }
  }
  expect((await app.inject({ method: 'GET', url, headers: alice })).statusCode).toBe(404);
  const kept = await app.inject({
    method: 'PUT',
    url,
    headers: alice,
    payload: '{"data":{"big":1e308,"tiny":1e-400}}',
  });
  expect(kept.statusCode).toBe(201);
  expect(kept.json().data).toMatchObject({ big: 1e308, tiny: 0 });
});
