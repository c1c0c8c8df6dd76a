/**
 * §1 error bodies for each status, §1.2 errno table, and robustness: garbage input never
 * produces a 5xx.
 */
import type { ErrorBody } from '../harness/bodies.js';
import { applicable } from '../harness/capabilities.js';
import { describe, expect, it } from 'vitest';
import { serverRoot } from '../harness/config.js';
import { createCollectionFixture, createRecord, type CollectionFixture } from '../harness/fixtures.js';
import { type HttpResponse, get, patch, post, put, request } from '../harness/http.js';
import { expectApiError, expectValidationError } from '../harness/matchers.js';
import { alice, bob } from '../harness/users.js';

const maxBodyBytes = Number(process.env.QUIRE_CONFORMANCE_MAX_BODY_BYTES ?? '') || null;

describe('§1.1 error envelope per status', () => {
  it('400 validation: code, errno 107, error "Invalid parameters", message, details list', async () => {
    const fx = await createCollectionFixture(alice);
    const body = expectValidationError(await post(fx.records, { auth: alice, body: { data: 'x' } }), {
      location: 'body',
    });
    expect(body.message).toBeTypeOf('string');
  });

  it('400 message rule: "<name> in <location>: <description>" unless the name occurs in the description', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(`${fx.records}?_limit=abc`, { auth: alice });
    const body = expectValidationError(res, { location: 'querystring', name: '_limit' });
    const first = body.details[0]!;
    const expected = first.description.includes(String(first.name))
      ? first.description
      : `${first.name} in ${first.location}: ${first.description}`;
    expect(body.message).toBe(expected);
  });

  it('401: errno 104 with WWW-Authenticate', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(fx.records);
    expectApiError(res, 401, 104, 'Please authenticate yourself to use this endpoint.');
    expect(res.headers.get('www-authenticate')).toBeTruthy();
  });

  it('403: errno 121 "This user cannot access this resource."', async () => {
    const fx = await createCollectionFixture(alice);
    expectApiError(await get(fx.records, { auth: bob }), 403, 121, 'This user cannot access this resource.');
  });

  it('404: errno 110 without message for a missing object, errno 111 for an unknown URL', async () => {
    const fx = await createCollectionFixture(alice);
    const missing = expectApiError(await get(fx.record('nope'), { auth: alice }), 404, 110);
    expect(missing).not.toHaveProperty('message');
    expectApiError(
      await get('/nothing/here', { auth: alice }),
      404,
      111,
      'The resource you are looking for could not be found.',
    );
  });

  it('405: errno 115', async () => {
    expectApiError(
      await request('PATCH', '/buckets', { auth: alice, body: { data: {} } }),
      405,
      115,
      'Method not allowed on this endpoint.',
    );
  });

  it('406 and 415: errno 107, error "Invalid parameters"', async () => {
    const fx = await createCollectionFixture(alice);
    // 406 per the reference, 415 per the interface spec (see http.test.ts §3): both accepted.
    const notAcceptable = await get(fx.records, { auth: alice, headers: { Accept: 'text/html' } });
    expect([406, 415]).toContain(notAcceptable.status);
    expectValidationError(notAcceptable, { location: 'header' }, notAcceptable.status);
    expectValidationError(
      await put(fx.record('x'), { auth: alice, rawBody: '{}', contentType: 'text/plain' }),
      { location: 'header' },
      415,
    );
  });

  it('412: errno 114 "Resource was modified meanwhile"', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    expectApiError(
      await put(fx.record(rec.id), { auth: alice, body: { data: {} }, headers: { 'If-Match': '"1"' } }),
      412,
      114,
      'Resource was modified meanwhile',
    );
  });

  it('never adds info outside 500 responses', async () => {
    const fx = await createCollectionFixture(alice);
    for (const res of [
      await get(fx.record('nope'), { auth: alice }),
      await get(fx.records, { auth: bob }),
      await get('/nothing', { auth: alice }),
    ]) {
      expect(res.json).not.toHaveProperty('info');
    }
  });

  it.runIf(
    applicable(
      maxBodyBytes !== null,
      '413 body limit',
      'body limit unknown: pass --max-body-bytes (QUIRE_CONFORMANCE_MAX_BODY_BYTES)',
    ),
  )('413 errno 113 for a body over the advertised limit (QUIRE_CONFORMANCE_MAX_BODY_BYTES)', async () => {
    const fx = await createCollectionFixture(alice);
    const big = JSON.stringify({ data: { blob: 'x'.repeat((maxBodyBytes as number) + 1) } });
    const res = await post(fx.records, { auth: alice, rawBody: big, contentType: 'application/json' });
    expectApiError(res, 413, 113);
  });
});

/** A response to garbage: never 5xx; when it is an error, it is the §1.1 envelope. */
// Soft assertions: one run reports every input that fails, not only the first.
function expectHandled(res: HttpResponse, what: string, isHead = false): void {
  expect.soft(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status >= 400 && !isHead) {
    const body = res.json as Partial<ErrorBody> | undefined;
    expect.soft(body?.code, `${what}: ${res.text.slice(0, 300)}`).toBe(res.status);
    expect.soft(body?.errno, what).toBeTypeOf('number');
  }
}

describe('robustness: malformed input never gives a 5xx', () => {
  let fx: CollectionFixture;
  let recordPath: string;

  async function setup(): Promise<void> {
    if (fx) return;
    fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { n: 1, s: 'x', tags: ['a'] });
    recordPath = fx.record(rec.id);
  }

  const bodies: [string, string | Uint8Array][] = [
    ['empty', ''],
    ['null', 'null'],
    ['number', '123'],
    ['string', '"str"'],
    ['array', '[]'],
    ['data null', '{"data": null}'],
    ['data array', '{"data": []}'],
    ['permissions string', '{"permissions": "x"}'],
    ['permissions list of ints', '{"permissions": {"read": [1, 2]}}'],
    ['permissions null list', '{"permissions": {"read": null}}'],
    ['id number', '{"data": {"id": 5}}'],
    ['id null', '{"data": {"id": null}}'],
    ['last_modified string', '{"data": {"last_modified": "abc"}}'],
    ['last_modified negative', '{"data": {"last_modified": -1}}'],
    ['last_modified huge', '{"data": {"last_modified": 1e300}}'],
    ['last_modified bool', '{"data": {"last_modified": true}}'],
    ['deleted true', '{"data": {"deleted": true}}'],
    ['proto', '{"data": {"__proto__": {"polluted": 1}, "constructor": {"prototype": {}}}}'],
    ['deep nesting', `{"data": ${'{"a":'.repeat(500)}1${'}'.repeat(500)}}`],
    ['lone surrogate', '{"data": {"s": "\\ud800"}}'],
    ['nul in string', '{"data": {"s": "a\\u0000b"}}'],
    ['duplicate keys', '{"data": {"a": 1, "a": 2}}'],
    ['BOM', '\ufeff{"data": {}}'],
    ['truncated', '{"data": {"a": '],
    ['trailing garbage', '{"data": {}} xyz'],
    ['invalid utf-8', new Uint8Array([0x7b, 0x22, 0x64, 0x22, 0x3a, 0xff, 0xfe, 0x7d])],
    [
      'invalid utf-8 in string',
      new Uint8Array([...new TextEncoder().encode('{"data": {"s": "'), 0xc3, 0x28, ...new TextEncoder().encode('"}}')]),
    ],
  ];

  it('on POST records', async () => {
    await setup();
    for (const [name, raw] of bodies)
      expectHandled(
        await post(fx.records, { auth: alice, rawBody: raw, contentType: 'application/json' }),
        `POST ${name}`,
      );
  });

  it('on PUT and PATCH of a record', async () => {
    await setup();
    for (const [name, raw] of bodies) {
      expectHandled(
        await put(recordPath, { auth: alice, rawBody: raw, contentType: 'application/json' }),
        `PUT ${name}`,
      );
      expectHandled(
        await patch(recordPath, { auth: alice, rawBody: raw, contentType: 'application/json' }),
        `PATCH ${name}`,
      );
      expectHandled(
        await patch(recordPath, { auth: alice, rawBody: raw, contentType: 'application/merge-patch+json' }),
        `merge-PATCH ${name}`,
      );
      expectHandled(
        await patch(recordPath, { auth: alice, rawBody: raw, contentType: 'application/json-patch+json' }),
        `json-PATCH ${name}`,
      );
    }
  });

  it('on PUT of buckets, collections and groups', async () => {
    await setup();
    for (const [name, raw] of bodies) {
      for (const path of [`/buckets/${fx.bucket}`, fx.path, `/buckets/${fx.bucket}/groups/g`]) {
        expectHandled(
          await put(path, { auth: alice, rawBody: raw, contentType: 'application/json' }),
          `PUT ${path} ${name}`,
        );
      }
    }
  });

  it('on JSON-Patch operations', async () => {
    await setup();
    const ops = [
      [{ op: 'add', path: '/data', value: 'x' }],
      [{ op: 'remove', path: '/data' }],
      [{ op: 'replace', path: '/data/id', value: 'other' }],
      [{ op: 'add', path: '/permissions/read', value: 'x' }],
      [{ op: 'add', path: '/permissions/frobnicate/x' }],
      [{ op: 'add', path: '/nothing', value: 1 }],
      [{ op: 'move', from: '/data/n', path: '/data/n/child' }],
      [{ op: 'add', path: '', value: {} }],
      [{ op: 'add', path: '/data/last_modified', value: 'x' }],
      [1, 2],
      [null],
    ];
    for (const body of ops)
      expectHandled(
        await patch(recordPath, { auth: alice, body, contentType: 'application/json-patch+json' }),
        JSON.stringify(body),
      );
  });

  it('on batch bodies', async () => {
    const bodies2: unknown[] = [
      { requests: [null] },
      { requests: [1] },
      { requests: [{ path: '/', headers: null }] },
      { requests: [{ path: '/', headers: [] }] },
      { requests: [{ path: '/', body: null }] },
      { requests: [{ path: '//' }] },
      { requests: [{ path: '/%ff' }] },
      { requests: [{ path: '/buckets/../../etc' }] },
      { requests: [{ path: '/' }], defaults: null },
      { requests: [{ path: '/' }], defaults: [] },
      { requests: [{ path: '/', method: 'PUT', body: { data: { id: 'x' } } }] },
    ];
    for (const body of bodies2) expectHandled(await post('/batch', { auth: alice, body }), JSON.stringify(body));
  });

  it('on malformed headers', async () => {
    await setup();
    const headerSets: Record<string, string>[] = [
      { 'If-Match': '"99999999999999999999999999"' },
      { 'If-Match': '"-1"' },
      { 'If-None-Match': '"1" , *' },
      { 'If-Match': '*, *' },
      { 'Response-Behavior': '' },
      { Accept: ';;;' },
      { Accept: 'application/json;q=abc' },
      { Authorization: 'Basic' },
      { Authorization: 'Basic =' },
      { Authorization: 'Basic %%%' },
      { Authorization: `Basic ${Buffer.from(':').toString('base64')}` },
      { Authorization: `Basic ${Buffer.from('\u00e9t\u00e9:\u00fc').toString('base64')}` },
      { Authorization: `Bearer ${'x'.repeat(5000)}` },
      { 'Content-Type': 'application/json; charset=latin1' },
      { 'Access-Control-Request-Method': 'FOO', Origin: 'null' },
    ];
    for (const headers of headerSets) {
      // A given Authorization header replaces alice's.
      expectHandled(await get(recordPath, { auth: alice, headers }), `GET ${JSON.stringify(headers)}`);
      expectHandled(
        await put(recordPath, { auth: alice, headers, body: { data: { n: 2 } } }),
        `PUT ${JSON.stringify(headers)}`,
      );
    }
    for (const contentType of ['application/jsonx', 'application/json-patch', 'multipart/form-data; boundary=x', ';']) {
      expectHandled(await post(fx.records, { auth: alice, rawBody: '{}', contentType }), `Content-Type ${contentType}`);
    }
  });

  it('on malformed query strings', async () => {
    await setup();
    const queries = [
      '_limit=99999999999999999999',
      '_limit=9223372036854775808',
      '_since=1e10',
      '_since=99999999999999999999999',
      '_before=""',
      '_since="abc"',
      '_sort=,,,',
      '_sort=-',
      '_sort=a..b',
      '_fields=,',
      '_fields=..',
      '_token=',
      '_token=%%%',
      'in_n=',
      'in_n=,,,',
      'gt_last_modified=-5',
      'like_s=*',
      'like_s=%25_%25',
      'like_s="\\\\"',
      'has_x=maybe',
      'contains_tags={',
      'contains_tags=[[[]]]',
      'a.b.c.d.e.f=1',
      'person..name=1',
      '.=1',
      'n=%ZZ',
      'n=%00',
      '__proto__=1',
      'constructor.prototype=1',
      'id=%00',
      'in_id=',
      'last_modified=',
      '_since=&_before=',
      `n=${'9'.repeat(400)}`,
      `s=${'x'.repeat(8000)}`,
    ];
    for (const q of queries) {
      expectHandled(await get(`${fx.records}?${q}`, { auth: alice }), `GET ?${q}`);
      expectHandled(await request('HEAD', `${fx.records}?${q}`, { auth: alice }), `HEAD ?${q}`, true);
    }
  });

  it('on malformed paths', async () => {
    await setup();
    const paths = [
      '/buckets/%00',
      `/buckets/${'a'.repeat(3000)}`,
      `/buckets/${fx.bucket}/collections/%2e%2e`,
      `/buckets/${fx.bucket}/collections/a%2Fb/records`,
      '/buckets//collections',
      `/buckets/${fx.bucket}/collections/${fx.collection}/records/%ff`,
      '/buckets/%E2%82',
      `/buckets/${fx.bucket}/groups/%20`,
      `/buckets/${fx.bucket}/collections/${fx.collection}/records/..%2f..%2f`,
      `/buckets/${fx.bucket}/unknown/x`,
    ];
    for (const path of paths) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        expectHandled(
          await request(method, path, { auth: alice, ...(method === 'PUT' ? { body: { data: {} } } : {}) }),
          `${method} ${path}`,
        );
      }
    }
    expectHandled(await request('GET', `${serverRoot()}/v1/%ff`), 'GET /v1/%ff');
    expectHandled(await request('GET', `${serverRoot()}/%ff`), 'GET /%ff');
  });

  it('on unusual methods', async () => {
    await setup();
    // (fetch refuses to send TRACE/CONNECT.)
    for (const method of ['OPTIONS', 'PROPFIND', 'FOO']) {
      const res = await request(method, recordPath, { auth: alice });
      expect(res.status, `${method} ${res.status}`).toBeLessThan(500);
    }
  });
});
