/**
 * §0 conventions (version prefix, trailing slash, JSON), §3 content negotiation, §12.4 CORS,
 * §12.6 security headers, §12.8 405.
 */
import { describe, expect, it } from 'vitest';
import { serverRoot } from '../harness/config.js';
import { createCollectionFixture, createBucket, createRecord } from '../harness/fixtures.js';
import { del, get, head, patch, post, put, request } from '../harness/http.js';
import { expectApiError, expectValidationError } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

const ORIGIN = 'http://example.org';

function locationOf(res: { headers: Headers }, requested: string): URL {
  const loc = res.headers.get('location');
  expect(loc, 'Location header').not.toBeNull();
  return new URL(loc as string, requested);
}

function exposed(res: { headers: Headers }): string[] {
  return (res.headers.get('access-control-expose-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

describe('§0 version prefix redirect', () => {
  it('redirects GET / (no prefix) with 307 to /v1/', async () => {
    const requested = `${serverRoot()}/`;
    const res = await request('GET', requested);
    expect(res.status).toBe(307);
    const loc = locationOf(res, requested);
    expect(loc.pathname).toBe('/v1/');
  });

  it('redirects an unprefixed path with 307 to /v1<path>, keeping the query string', async () => {
    const requested = `${serverRoot()}/buckets?_limit=1&foo=bar`;
    const res = await request('GET', requested, { auth: alice });
    expect(res.status).toBe(307);
    const loc = locationOf(res, requested);
    expect(loc.pathname).toBe('/v1/buckets');
    expect(loc.searchParams.get('_limit')).toBe('1');
    expect(loc.searchParams.get('foo')).toBe('bar');
  });

  it('gives an absolute Location (wire example "GET / (redirect to /v1/)")', async () => {
    const res = await request('GET', `${serverRoot()}/`);
    expect(res.headers.get('location')).toMatch(/^https?:\/\//);
  });

  it('answers OPTIONS on an unprefixed path with 200 and CORS headers instead of redirecting', async () => {
    const res = await request('OPTIONS', `${serverRoot()}/buckets`, {
      headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'GET' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).not.toBeNull();
  });

  it('answers 404 errno 116 for another version prefix (/v2)', async () => {
    const res = await request('GET', `${serverRoot()}/v2/buckets`, { auth: alice });
    expectApiError(res, 404, 116, 'The requested API version is not available on this server.');
  });
});

describe('§0 trailing slash redirect (only when the URL does not exist)', () => {
  it('redirects /v1/buckets/ with 307 to /v1/buckets (absolute Location)', async () => {
    const res = await get('/buckets/', { auth: alice });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toMatch(/^https?:\/\//);
    expect(locationOf(res, 'http://x/').pathname).toBe('/v1/buckets');
  });

  it('keeps the query string when redirecting', async () => {
    const res = await get('/buckets/?_limit=2&_sort=id', { auth: alice });
    expect(res.status).toBe(307);
    const loc = locationOf(res, 'http://x/');
    expect(loc.pathname).toBe('/v1/buckets');
    expect(loc.searchParams.get('_limit')).toBe('2');
    expect(loc.searchParams.get('_sort')).toBe('id');
  });

  it('redirects an object URL with a trailing slash to the URL without it', async () => {
    const bucket = await createBucket(alice);
    const res = await get(`/buckets/${bucket}/`, { auth: alice });
    expect(res.status).toBe(307);
    expect(locationOf(res, 'http://x/').pathname).toBe(`/v1/buckets/${bucket}`);
  });

  it('redirects /v1 to /v1/', async () => {
    const res = await request('GET', `${serverRoot()}/v1`);
    expect(res.status).toBe(307);
    expect(locationOf(res, `${serverRoot()}/v1`).pathname).toBe('/v1/');
  });

  it('does not redirect /v1/, which exists', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
  });
});

describe('§0 JSON responses', () => {
  it('does not escape forward slashes', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, { auth: alice, body: { data: { url: 'http://a.example/b/c' } } });
    expect(res.status).toBe(201);
    expect(res.text).toContain('"http://a.example/b/c"');
    expect(res.text).not.toContain('\\/');
  });

  it('answers application/json on object, list and error responses', async () => {
    const fx = await createCollectionFixture(alice);
    for (const res of [
      await get(fx.path, { auth: alice }),
      await get(fx.records, { auth: alice }),
      await get(`${fx.records}/missing`, { auth: alice }),
    ]) {
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it('keeps integers as integers and round-trips JSON types', async () => {
    const fx = await createCollectionFixture(alice);
    const data = {
      int: 42,
      neg: -7,
      float: 1.5,
      big: 9007199254740991,
      t: true,
      f: false,
      n: null,
      s: 'é ✓ 😀',
      arr: [1, 'a', null, [2]],
      obj: { a: { b: [] } },
    };
    const created = await post(fx.records, { auth: alice, body: { data } });
    expect(created.status).toBe(201);
    const res = await get(fx.record(created.json.data.id), { auth: alice });
    expect(res.json.data).toMatchObject(data);
    expect(res.text).toContain('"int":42');
  });
});

describe('§3 content negotiation', () => {
  // Ambiguous: the interface spec ("Endpoints", rule 1) says a client that cannot accept JSON
  // gets 415; the reference (§3, DOC≠SPEC) and the original server answer 406. Both accepted.
  it('answers 406 (reference) or 415 (interface spec) errno 107 to an Accept that excludes JSON', async () => {
    const res = await get('/buckets', { auth: alice, headers: { Accept: 'text/plain' } });
    expect([406, 415], `${res.status} ${res.text}`).toContain(res.status);
    expectValidationError(
      res,
      { location: 'header', name: 'Accept', description: "Accept header should be one of ['application/json']" },
      res.status,
      "Accept header should be one of ['application/json']",
    );
  });

  it('accepts a missing Accept, */* and a list containing application/json', async () => {
    for (const accept of ['*/*', 'application/json', 'text/plain, application/json', 'application/*']) {
      const res = await get('/buckets', { auth: alice, headers: { Accept: accept } });
      expect(res.status, accept).toBe(200);
    }
  });

  it('answers 415 errno 107 to a POST with Content-Type text/plain (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, { auth: alice, rawBody: 'title=hello', contentType: 'text/plain' });
    expect(res.status).toBe(415);
    expect(res.json).toEqual({
      code: 415,
      errno: 107,
      error: 'Invalid parameters',
      message: "Content-Type header should be one of ['application/json']",
      details: [
        {
          location: 'header',
          name: 'Content-Type',
          description: "Content-Type header should be one of ['application/json']",
        },
      ],
    });
  });

  it('answers 415 to a PUT with a non-JSON Content-Type', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/c1`, {
      auth: alice,
      rawBody: '{"data":{}}',
      contentType: 'application/xml',
    });
    expectValidationError(res, { location: 'header', name: 'Content-Type' }, 415);
  });

  it('answers 415 to a PATCH with a Content-Type outside the three accepted ones', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await patch(fx.record(rec.id), { auth: alice, rawBody: '{"data":{"a":2}}', contentType: 'text/plain' });
    expectValidationError(res, { location: 'header', name: 'Content-Type' }, 415);
  });

  it('ignores Content-Type parameters such as charset', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, {
      auth: alice,
      body: { data: { a: 1 } },
      contentType: 'application/json; charset=utf-8',
    });
    expect(res.status).toBe(201);
  });

  it('accepts a PUT without body and without Content-Type (wire example "PUT bucket (no body)")', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/nobody`, { auth: alice });
    expect(res.status).toBe(201);
  });

  it('ignores bodies on DELETE (kinto-http.py sends {})', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await del(fx.record(rec.id), { auth: alice, body: {} });
    expect(res.status).toBe(200);
    expect(res.json.data.deleted).toBe(true);
  });
});

describe('§1.2 unknown URL and §12.8 method not allowed', () => {
  it('answers 404 errno 111 with the standard message for an unknown URL', async () => {
    const res = await get('/unknown', { auth: alice });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 404,
      errno: 111,
      error: 'Not Found',
      message: 'The resource you are looking for could not be found.',
    });
  });

  it('answers 405 errno 115 with Allow for POST on an object URL (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    const res = await post(fx.record(rec.id), { auth: alice, contentType: 'application/json' });
    expect(res.status).toBe(405);
    expect(res.json).toEqual({
      code: 405,
      errno: 115,
      error: 'Method Not Allowed',
      message: 'Method not allowed on this endpoint.',
    });
    const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allow).toEqual(expect.arrayContaining(['GET', 'PUT', 'PATCH', 'DELETE']));
    expect(allow).not.toContain('POST');
  });

  it('answers 405 for PUT and PATCH on plural endpoints', async () => {
    const bucket = await createBucket(alice);
    for (const [method, path] of [
      ['PUT', '/buckets'],
      ['PATCH', '/buckets'],
      ['PUT', `/buckets/${bucket}/collections`],
      ['PATCH', `/buckets/${bucket}/groups`],
    ] as const) {
      const res = await request(method, path, { auth: alice, body: { data: {} } });
      expectApiError(res, 405, 115, 'Method not allowed on this endpoint.');
    }
  });

  it('answers 405 for POST on the root endpoint', async () => {
    const res = await post('/', { auth: alice, body: {} });
    expectApiError(res, 405, 115);
  });
});

describe('§0 invalid UTF-8 in the path', () => {
  it('answers 400 errno 107 "Invalid URL path."', async () => {
    const res = await get('/buckets/%FF%FE', { auth: alice });
    expectApiError(res, 400, 107, { message: 'Invalid URL path.', error: 'Bad Request' });
  });
});

describe('§12.4 CORS', () => {
  it('sends Access-Control-Allow-Origin when an Origin is given', async () => {
    const res = await get('/', { headers: { Origin: ORIGIN } });
    const allow = res.headers.get('access-control-allow-origin');
    expect(allow === '*' || allow === ORIGIN, String(allow)).toBe(true);
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('always exposes Backoff, Retry-After, Alert, Content-Length, Content-Type', async () => {
    const bucket = await createBucket(alice);
    for (const res of [
      await get('/', { headers: { Origin: ORIGIN } }),
      await put(`/buckets/${bucket}`, { auth: alice, body: { data: {} }, headers: { Origin: ORIGIN } }),
      await get('/unknown', { headers: { Origin: ORIGIN } }),
    ]) {
      expect(exposed(res)).toEqual(
        expect.arrayContaining(['backoff', 'retry-after', 'alert', 'content-length', 'content-type']),
      );
    }
  });

  it('exposes Next-Page, ETag and Last-Modified on plural GET', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(fx.records, { auth: alice, headers: { Origin: ORIGIN } });
    expect(exposed(res)).toEqual(
      expect.arrayContaining(['next-page', 'etag', 'last-modified', 'cache-control', 'expires', 'pragma']),
    );
  });

  it('exposes Total-Objects and Total-Records on plural HEAD', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await head(fx.records, { auth: alice, headers: { Origin: ORIGIN } });
    expect(exposed(res)).toEqual(expect.arrayContaining(['total-objects', 'total-records']));
  });

  it('exposes ETag and Last-Modified on object GET', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(fx.path, { auth: alice, headers: { Origin: ORIGIN } });
    expect(exposed(res)).toEqual(expect.arrayContaining(['etag', 'last-modified']));
  });

  it('answers a preflight OPTIONS with 200, the route methods and the requested headers', async () => {
    const bucket = await createBucket(alice);
    const res = await request('OPTIONS', `/buckets/${bucket}`, {
      headers: {
        Origin: ORIGIN,
        'Access-Control-Request-Method': 'PUT',
        'Access-Control-Request-Headers': 'authorization,content-type,if-match',
      },
    });
    expect(res.status).toBe(200);
    const allowOrigin = res.headers.get('access-control-allow-origin');
    expect(allowOrigin === '*' || allowOrigin === ORIGIN).toBe(true);
    const methods = (res.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    expect(methods).toEqual(expect.arrayContaining(['GET', 'PUT', 'PATCH', 'DELETE']));
    const allowHeaders = (res.headers.get('access-control-allow-headers') ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase());
    expect(allowHeaders).toEqual(expect.arrayContaining(['authorization', 'content-type', 'if-match']));
    expect(res.headers.get('access-control-max-age')).toMatch(/^\d+$/);
  });

  it('lists GET, POST and DELETE in the preflight of a plural endpoint', async () => {
    const res = await request('OPTIONS', '/buckets', {
      headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST' },
    });
    expect(res.status).toBe(200);
    const methods = (res.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    expect(methods).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']));
  });

  it('refuses a preflight without Access-Control-Request-Method with 400', async () => {
    const res = await request('OPTIONS', '/buckets', { headers: { Origin: ORIGIN } });
    expect(res.status).toBe(400);
  });
});

describe('§12.5 cache headers and §12.2 Retry-After', () => {
  it('sends Cache-Control: no-cache, no-store on authenticated GETs', async () => {
    const fx = await createCollectionFixture(alice);
    for (const path of [fx.path, fx.records]) {
      const res = await get(path, { auth: alice });
      const cc = (res.headers.get('cache-control') ?? '').split(',').map((v) => v.trim());
      expect(cc, path).toEqual(expect.arrayContaining(['no-cache', 'no-store']));
    }
  });

  it(
    "lets anonymous readers cache a collection's records for its `cache_expires` seconds; " +
      'authenticated readers never',
    async () => {
      const fx = await createCollectionFixture(alice, {
        collection: { data: { cache_expires: 3600 }, permissions: { read: ['system.Everyone'] } },
      });
      const rec = await createRecord(alice, fx.bucket, fx.collection, { n: 1 });
      for (const path of [fx.records, fx.record(rec.id)]) {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        expect(res.headers.get('cache-control'), path).toBe('max-age=3600');
        // Expires is the response date plus the lifetime (HTTP dates have whole seconds).
        const lifetime =
          (Date.parse(res.headers.get('expires') ?? '') - Date.parse(res.headers.get('date') ?? '')) / 1000;
        expect(Math.abs(lifetime - 3600), `Expires - Date = ${lifetime}s`).toBeLessThanOrEqual(2);
        const cc = (await get(path, { auth: alice })).headers.get('cache-control') ?? '';
        expect(
          cc.split(',').map((v) => v.trim()),
          path,
        ).toEqual(expect.arrayContaining(['no-cache', 'no-store']));
      }
    },
  );

  it('`cache_expires: 0` makes anonymous reads of the records uncacheable', async () => {
    const fx = await createCollectionFixture(alice, {
      collection: { data: { cache_expires: 0 }, permissions: { read: ['system.Everyone'] } },
    });
    const cc = (await get(fx.records)).headers.get('cache-control') ?? '';
    expect(cc).not.toMatch(/max-age=[1-9]/);
    expect(cc.split(',').map((v) => v.trim())).toContain('no-cache');
  });

  it('§4.1 refuses a collection whose `cache_expires` is not a number', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/c`, {
      auth: alice,
      body: { data: { cache_expires: 'soon' } },
    });
    expectValidationError(res, { location: 'body', name: 'data.cache_expires' });
  });

  it('never sends Retry-After on successful responses', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    for (const res of [
      await get('/'),
      await get(fx.records, { auth: alice }),
      await get(fx.record(rec.id), { auth: alice }),
      await del(fx.record(rec.id), { auth: alice }),
    ]) {
      expect(res.status).toBeLessThan(300);
      expect(res.headers.get('retry-after')).toBeNull();
    }
  });
});

describe('§12.6 security headers', () => {
  it('sends X-Content-Type-Options: nosniff and a restrictive Content-Security-Policy', async () => {
    const fx = await createCollectionFixture(alice);
    for (const res of [await get('/'), await get(fx.records, { auth: alice }), await get('/unknown')]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy') ?? '').toContain("default-src 'none'");
    }
  });
});
