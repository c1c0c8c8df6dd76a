/**
 * Behaviours switched on by settings, which the deployment-agnostic conformance suite cannot
 * turn on: Backoff, end-of-service Alert / 410, readonly mode, paginate_by, heartbeat failure.
 */
import { expect, it } from 'vitest';
import { describeOnBackends } from '../../test/helpers/backends.js';
import { testSettings } from '../../test/helpers/embedded-server.js';
import { buildServer } from '../app.js';

const auth = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };

describeOnBackends('settings that shape responses', {}, ({ serverWith }) => {
  it('sends Backoff on every response when `backoff` is set, and never Retry-After on success', async () => {
    const app = await serverWith({ backoff: 60 });
    for (const url of ['/v1/', '/v1/buckets', '/v1/nowhere']) {
      const response = await app.inject({ url, headers: auth });
      expect(response.headers.backoff).toBe('60');
      if (response.statusCode < 400) expect(response.headers['retry-after']).toBeUndefined();
    }
    await app.close();
  });

  it('announces a future end of service with a soft-eol Alert and `eos` in GET /', async () => {
    const app = await serverWith({ eos: '2999-01-01', eos_message: 'Moving', eos_url: 'https://example.org/move' });
    const response = await app.inject({ url: '/v1/' });
    expect(JSON.parse(String(response.headers.alert))).toEqual({
      code: 'soft-eol',
      message: 'Moving',
      url: 'https://example.org/move',
    });
    expect(response.json().eos).toBe('2999-01-01');
    await app.close();
  });

  it('answers 410 errno 202 with a hard-eol Alert once the end of service has passed', async () => {
    const app = await serverWith({ eos: '2000-01-01' });
    const response = await app.inject({ url: '/v1/buckets', headers: auth });
    expect(response.statusCode).toBe(410);
    expect(response.json()).toMatchObject({ code: 410, errno: 202 });
    expect(JSON.parse(String(response.headers.alert)).code).toBe('hard-eol');
    await app.close();
  });

  it('refuses every write with 405 in readonly mode, batch included, and says so in GET /', async () => {
    const app = await serverWith({ readonly: true });
    for (const [method, url] of [
      ['PUT', '/v1/buckets/ro'],
      ['POST', '/v1/batch'],
      ['DELETE', '/v1/buckets'],
    ] as const) {
      const response = await app.inject({
        method,
        url,
        headers: auth,
        ...(method === 'POST' ? { payload: { requests: [] } } : {}),
      });
      expect(response.statusCode).toBe(405);
      expect(response.json()).toMatchObject({ errno: 115 });
    }
    expect((await app.inject({ url: '/v1/' })).json().settings.readonly).toBe(true);
    expect((await app.inject({ url: '/v1/buckets', headers: auth })).statusCode).toBe(200);
    await app.close();
  });

  it('caps pages at paginate_by, even when _limit asks for more', async () => {
    const app = await serverWith({ paginate_by: 2 });
    await app.inject({ method: 'PUT', url: '/v1/buckets/paged', headers: auth });
    await app.inject({ method: 'PUT', url: '/v1/buckets/paged/collections/c', headers: auth });
    for (let i = 0; i < 5; i++) {
      await app.inject({
        method: 'POST',
        url: '/v1/buckets/paged/collections/c/records',
        headers: auth,
        payload: { data: { i } },
      });
    }
    const page = await app.inject({ url: '/v1/buckets/paged/collections/c/records?_limit=10', headers: auth });
    expect(page.json().data).toHaveLength(2);
    expect(String(page.headers['next-page'])).toContain('_limit=2');
    await app.close();
  });

  it('answers 413 errno 113 to a body over max_body_bytes', async () => {
    const app = await serverWith({ max_body_bytes: 2048 });
    const response = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/big',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ data: { text: 'x'.repeat(4096) } }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ code: 413, errno: 113 });
    await app.close();
  });
});

describeOnBackends('__heartbeat__', {}, (backend) => {
  it('answers 200 with every probe true', async () => {
    const app = await backend.serverWith({});
    const response = await app.inject({ url: '/v1/__heartbeat__' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ storage: true, permission: true });
  });

  it('answers 503 with the probe results when the backend fails', async () => {
    const broken = new Proxy(backend.storage, {
      get(target, property, receiver) {
        if (property === 'ping') return async () => false;
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const app = await buildServer({ settings: testSettings({}), storage: broken, logger: false });
    const response = await app.inject({ url: '/v1/__heartbeat__' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ storage: false, permission: true });
    await app.close();
  });
});
