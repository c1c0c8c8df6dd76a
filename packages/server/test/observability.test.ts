/**
 * Operators' view of a running server: Prometheus metrics scraped over HTTP (on the API's port
 * or a port of their own) and one log line per request.
 */
import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { describeOnBackends } from './helpers/backends.js';
import { logCapture } from './helpers/logs.js';
import { basicAuth, testSettings } from './helpers/embedded-server.js';

const RECORD = '/v1/buckets/metrics/collections/tasks/records/secret-record-id';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The value of one sample of the exposition text (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describeOnBackends('metrics and request log', { timeout: 60_000 }, (backend) => {
  const { name, serverWith } = backend;
  it('serves no metrics unless enabled', async () => {
    const app = await serverWith();
    expect((await app.inject({ url: '/__metrics__' })).statusCode).not.toBe(200);
    expect((await app.inject({ url: '/v1/__metrics__' })).statusCode).toBe(404);
  });

  it('counts requests by route pattern, _since polls, batch sizes, storage time and refused logins', async () => {
    const app = await serverWith({
      metrics_enabled: true,
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
    });
    const auth = basicAuth('alice');
    expect((await app.inject({ method: 'PUT', url: '/v1/buckets/metrics', headers: auth })).statusCode).toBe(201);
    expect(
      (await app.inject({ method: 'PUT', url: '/v1/buckets/metrics/collections/tasks', headers: auth })).statusCode,
    ).toBe(201);
    expect(
      (await app.inject({ method: 'PUT', url: RECORD, headers: auth, payload: { data: { n: 1 } } })).statusCode,
    ).toBe(201);
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: RECORD, headers: auth })).statusCode).toBe(200);
    const list = await app.inject({ url: '/v1/buckets/metrics/collections/tasks/records?_since=0', headers: auth });
    expect(list.statusCode).toBe(200);
    const etag = list.headers.etag as string;
    const poll = await app.inject({
      url: `/v1/buckets/metrics/collections/tasks/records?_since=${etag.replaceAll('"', '')}`,
      headers: { ...auth, 'if-none-match': etag },
    });
    expect(poll.statusCode).toBe(304);
    const batch = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: auth,
      payload: {
        defaults: { method: 'POST', path: '/buckets/metrics/collections/tasks/records' },
        requests: [{ body: { data: {} } }, { body: { data: {} } }, { body: { data: {} } }],
      },
    });
    expect(batch.statusCode).toBe(200);
    // An account with a wrong password: refused (401), counted as a login failure.
    expect(
      (await app.inject({ method: 'PUT', url: '/v1/accounts/bob', payload: { data: { password: 'right-password' } } }))
        .statusCode,
    ).toBe(201);
    expect((await app.inject({ url: '/v1/', headers: basicAuth('bob', 'wrong-password') })).statusCode).toBe(401);

    const scrape = await app.inject({ url: '/__metrics__' });
    expect(scrape.statusCode).toBe(200);
    expect(scrape.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = scrape.body;
    const recordRoute = {
      method: 'GET',
      route: '/v1/buckets/:bucket_id/collections/:collection_id/records/:record_id',
      status: '200',
    };
    expect(sample(text, 'quire_http_requests_total', recordRoute)).toBe(3);
    expect(
      sample(text, 'quire_http_request_duration_seconds_count', {
        method: 'GET',
        route: recordRoute.route,
        status_class: '2xx',
      }),
    ).toBe(3);
    // Sub-requests are counted under their own route: 3 creations in the batch.
    expect(
      sample(text, 'quire_http_requests_total', {
        method: 'POST',
        route: '/v1/buckets/:bucket_id/collections/:collection_id/records',
        status: '201',
      }),
    ).toBe(3);
    expect(sample(text, 'quire_since_polls_total', { answer: 'not_modified' })).toBe(1);
    expect(sample(text, 'quire_since_polls_total', { answer: 'changed' })).toBe(1);
    expect(sample(text, 'quire_batch_requests_count')).toBe(1);
    expect(sample(text, 'quire_batch_requests_sum')).toBe(3);
    expect(sample(text, 'quire_login_failures_total', { scheme: 'basic', reason: 'rejected' })).toBe(1);
    expect(sample(text, 'quire_storage_session_duration_seconds_count', { kind: 'transaction' })).toBeGreaterThan(0);
    expect(sample(text, 'quire_process_cpu_seconds_total')).toBeGreaterThan(0);
    if (name === 'postgresql')
      expect(sample(text, 'quire_storage_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    // Bounded labels: no id of a bucket, record or user is ever a label value.
    expect(text).not.toContain('secret-record-id');
    expect(text).not.toContain('alice');
    expect(text).not.toMatch(/route="\/v1\/buckets\/metrics/);
  });

  it('serves the metrics on metrics_port only, when set', async () => {
    const metricsPort = await freePort();
    const app = await serverWith({ metrics_enabled: true, metrics_port: metricsPort });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    expect((await fetch(`http://127.0.0.1:${port}/v1/__heartbeat__`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/__metrics__`)).status).toBe(404);
    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/__metrics__`);
    expect(scraped.status).toBe(200);
    expect(
      sample(await scraped.text(), 'quire_http_requests_total', { route: '/v1/__heartbeat__', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    const elsewhere = await fetch(`http://127.0.0.1:${metricsPort}/v1/`);
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({ code: 404, errno: 111, error: 'Not Found' });
    await app.close();
    await expect(fetch(`http://127.0.0.1:${metricsPort}/__metrics__`)).rejects.toThrow();
  });

  it('logs one line per request, health checks and 304 polls at debug, with the request id', async () => {
    const { stream, lines } = logCapture();
    const settings = testSettings({ log_level: 'info', log_format: 'json' });
    const app = await buildServer({ settings, storage: backend.storage, logger: { stream } });
    try {
      const auth = basicAuth('carol');
      const created = await app.inject({
        method: 'PUT',
        url: '/v1/buckets/logged',
        headers: { ...auth, 'x-request-id': 'from-the-proxy' },
      });
      expect(created.statusCode).toBe(201);
      expect(created.headers['x-request-id']).toBe('from-the-proxy');
      expect((await app.inject({ url: '/v1/__heartbeat__' })).statusCode).toBe(200);
      const first = await app.inject({ url: '/v1/buckets/logged', headers: auth });
      const etag = first.headers.etag as string;
      expect(
        (await app.inject({ url: '/v1/buckets/logged', headers: { ...auth, 'if-none-match': etag } })).statusCode,
      ).toBe(304);
      await app.close();

      const requests = lines.filter((line) => line.route !== undefined);
      expect(requests.map((line) => `${line.method} ${line.route} ${line.status}`)).toEqual([
        'PUT /v1/buckets/:bucket_id 201',
        'GET /v1/buckets/:bucket_id 200',
      ]);
      const [put] = requests;
      expect(put).toMatchObject({ level: 30, reqId: 'from-the-proxy', msg: 'PUT /v1/buckets/:bucket_id 201' });
      expect(typeof put!.ms).toBe('number');
      expect(put!.user).toMatch(/^[\w-]{12}$/);
      // Nothing of the credentials, nor the user id itself.
      expect(JSON.stringify(lines)).not.toContain(auth.authorization.slice('Basic '.length));
      expect(JSON.stringify(lines)).not.toContain('basicauth:');
    } finally {
      await app.close();
    }
  });
});
