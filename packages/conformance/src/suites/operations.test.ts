/**
 * §12 operating modes, as the deployment announces them: readonly mode (§12.7, `settings.readonly`
 * in `GET /`), end of service (§12.3, `eos` in `GET /`) and Backoff (§12.1). Each section runs
 * only when the deployment is in that mode, and is otherwise skipped with the reason.
 *
 * Against a readonly server the suite sends writes to check they are refused — on random ids,
 * and even in --read-only mode (the server says it refuses them). The Backoff section checks
 * the header's form wherever it appears; told the deployment's value (`--backoff`,
 * QUIRE_CONFORMANCE_BACKOFF), it checks that every response carries it.
 */
import { describe, expect, it } from 'vitest';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { randomId } from '../harness/fixtures.js';
import { get, head, request, type HttpResponse } from '../harness/http.js';
import { expectApiError } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

const info = await serverInfo();

const readonly = applicable(
  info.settings.readonly === true,
  '§12.7 readonly mode',
  'GET / says settings.readonly is not true',
);
const eos: unknown = info.root.eos;
const eosApplies = applicable(typeof eos === 'string', '§12.3 end of service', 'GET / announces no eos date');
const announcedBackoff = process.env.QUIRE_CONFORMANCE_BACKOFF;
const backoffAlways = applicable(
  announcedBackoff !== undefined,
  '§12.1 Backoff on every response',
  'QUIRE_CONFORMANCE_BACKOFF (--backoff) not given',
);

/** A few responses of different kinds: success, listing, 304, 401, 404. */
async function assortedResponses(): Promise<Array<[string, HttpResponse]>> {
  const root = await get('/');
  const buckets = await get('/buckets', { auth: alice });
  const etag = buckets.headers.get('etag');
  const notModified = await get('/buckets', { auth: alice, headers: etag ? { 'If-None-Match': etag } : {} });
  return [
    ['GET /', root],
    ['GET /buckets', buckets],
    ['GET /buckets If-None-Match', notModified],
    ['anonymous GET /buckets (401)', await get('/buckets')],
    ['GET /unknown (404)', await get('/unknown')],
  ];
}

describe.runIf(readonly)('§12.7 readonly mode (settings.readonly is true)', () => {
  it('refuses every write with 405 errno 115 and the exact message', async () => {
    const bucket = randomId();
    const writes: Array<[string, string, unknown]> = [
      ['PUT', `/buckets/${bucket}`, { data: {} }],
      ['POST', '/buckets', { data: { id: bucket } }],
      ['PATCH', `/buckets/${bucket}`, { data: { a: 1 } }],
      ['DELETE', `/buckets/${bucket}`, undefined],
      ['PUT', `/buckets/${bucket}/collections/c`, { data: {} }],
      ['POST', `/buckets/${bucket}/collections/c/records`, { data: {} }],
      ['DELETE', `/buckets/${bucket}/collections/c/records`, undefined],
    ];
    for (const [method, path, body] of writes) {
      const res = await request(method, path, {
        auth: alice,
        readonlyProbe: true,
        ...(body !== undefined ? { body } : {}),
      });
      expectApiError(res, 405, 115, { error: 'Method Not Allowed', message: 'Method not allowed on this endpoint.' });
    }
  });

  it('refuses POST /batch as a whole, even with only reads inside', async () => {
    const res = await request('POST', '/batch', {
      auth: alice,
      readonlyProbe: true,
      body: { requests: [{ method: 'GET', path: '/buckets' }] },
    });
    expectApiError(res, 405, 115);
  });

  it.runIf(info.hasCapability('default_bucket'))('refuses writes to the personal bucket too (§13.1)', async () => {
    const res = await request('PUT', `/buckets/default/collections/${randomId('col')}`, {
      auth: alice,
      readonlyProbe: true,
      body: { data: {} },
    });
    expectApiError(res, 405, 115);
  });

  it('still answers reads: GET, HEAD and CORS preflights', async () => {
    expect((await get('/buckets', { auth: alice })).status).toBe(200);
    expect((await head('/buckets', { auth: alice })).status).toBe(200);
    const preflight = await request('OPTIONS', '/buckets', {
      headers: { Origin: 'http://example.org', 'Access-Control-Request-Method': 'GET' },
    });
    expect(preflight.status).toBe(200);
  });

  it('§11.1 lets GET / be cached (root_cache_expires_seconds)', async () => {
    expect((await get('/')).headers.get('cache-control') ?? '').toMatch(/max-age=\d+/);
  });
});

describe.runIf(eosApplies)('§12.3 end of service (`eos` in GET /)', () => {
  it('announces the date as YYYY-MM-DD', () => {
    expect(eos).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('sends an Alert on every response: soft-eol before the date, with a message and a url', async () => {
    // GET / itself answers, so the date has not passed (hard-eol turns every answer into 410).
    for (const [label, res] of await assortedResponses()) {
      const raw = res.headers.get('alert');
      expect(raw, `${label}: Alert header`).not.toBeNull();
      const alert = JSON.parse(raw as string);
      expect(Object.keys(alert).sort(), label).toEqual(['code', 'message', 'url']);
      expect(alert.code, label).toBe('soft-eol');
      expect(alert.message === null || typeof alert.message === 'string', `${label}: message ${raw}`).toBe(true);
      expect(alert.url, label).toBeTypeOf('string');
    }
  });

  it('exposes Alert to browsers (CORS)', async () => {
    const res = await get('/', { headers: { Origin: 'http://example.org' } });
    const exposed = (res.headers.get('access-control-expose-headers') ?? '')
      .toLowerCase()
      .split(',')
      .map((h) => h.trim());
    expect(exposed).toContain('alert');
  });
});

describe('§12.1 Backoff', () => {
  it('is a whole number of seconds wherever it is sent, and never comes with Retry-After on a success', async () => {
    for (const [label, res] of await assortedResponses()) {
      const backoff = res.headers.get('backoff');
      if (backoff !== null) expect(backoff, label).toMatch(/^\d+$/);
      if (res.status < 400) expect(res.headers.get('retry-after'), label).toBeNull();
    }
  });

  it.runIf(backoffAlways)('is on every response, errors and 304 included, with the announced value', async () => {
    for (const [label, res] of await assortedResponses())
      expect(res.headers.get('backoff'), label).toBe(announcedBackoff);
  });
});
