/**
 * §13.5 `POST /__flush__` (capability `flush_endpoint`): deletes everything and answers 202 `{}`.
 *
 * Destructive: the flush itself runs only with QUIRE_CONFORMANCE_ALLOW_FLUSH=1, and then this
 * file must run alone against a server nobody else uses (a flush wipes the data of any test
 * running at the same time). Quire's own test run checks the flush on a server of its own
 * (packages/server/test/flush.test.ts) and leaves this variable unset.
 */
import { describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { createBucket } from '../harness/fixtures.js';
import { get, post } from '../harness/http.js';
import { expectApiError } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

const info = await serverInfo();
const offered = applicable(info.hasCapability('flush_endpoint'), '§13.5 flush', 'no capability "flush_endpoint"');
const allowed =
  offered &&
  applicable(
    process.env.QUIRE_CONFORMANCE_ALLOW_FLUSH === '1',
    '§13.5 flush (destructive part)',
    'QUIRE_CONFORMANCE_ALLOW_FLUSH is not 1',
  );

describe.runIf(offered)('§13.5 /__flush__ (capability "flush_endpoint")', () => {
  it('describes the capability with description and url', () => {
    expect(info.capabilities.flush_endpoint).toEqual({ description: expect.any(String), url: expect.any(String) });
  });

  it('answers 405 to GET: only POST flushes', async () => {
    expectApiError(await get('/__flush__'), 405, 115);
  });

  it.runIf(allowed)('POST deletes every bucket and answers 202 with an empty object', async () => {
    const bucket = await createBucket(alice);
    const res = await post('/__flush__');
    expect(res.status).toBe(202);
    expect(res.json).toEqual({});
    expect((await get(`/buckets/${bucket}`, { auth: alice })).status).toBe(403);
    expect((await get<ListBody>('/buckets', { auth: alice })).json.data).toEqual([]);
  });
});
