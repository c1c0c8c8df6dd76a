/**
 * Issue 19 item 9: the Host header was echoed in absolute URLs (`Host: evil.example` →
 * `Location: http://evil.example/v1/…`), so a client, or a cache in front of the server, could be
 * handed links to another site. URLs now come from `http_host`, from the forwarded host behind a
 * proxy (`trust_proxy`), from a Host that names the address the request came in on or is listed
 * in `http_allowed_hosts`, or else from that address. Real HTTP, written on a socket.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.js';
import { basicAuth, useEmbeddedStore } from '../helpers/embedded-server.js';
import { listen, rawRequest, type RawResponse } from './protocol.js';

const AUTH = basicAuth('alice').authorization;

function send(
  port: number,
  method: string,
  path: string,
  host: string | null,
  { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const lines = [`${method} ${path} HTTP/1.1`];
  if (host !== null) lines.push(`Host: ${host}`);
  lines.push(`Authorization: ${AUTH}`, 'Connection: close');
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(payload)}`);
  return rawRequest(port, `${lines.join('\r\n')}\r\n\r\n${payload}`);
}

describe('absolute URLs never echo an untrusted Host (issue 19.9)', { timeout: 60_000 }, () => {
  const { serverWith } = useEmbeddedStore();
  let port: number;
  let own: string;

  async function start(overrides: Partial<Settings>): Promise<number> {
    return listen(await serverWith(overrides));
  }

  beforeAll(async () => {
    port = await start({});
    own = `http://127.0.0.1:${port}`;
    expect((await send(port, 'PUT', '/v1/buckets/b', '127.0.0.1', { body: {} })).status).toBe(201);
    for (const id of ['c1', 'c2', 'c3'])
      expect((await send(port, 'PUT', `/v1/buckets/b/collections/${id}`, '127.0.0.1', { body: {} })).status).toBe(201);
  });

  it('redirects to the listening address, not to the Host sent', async () => {
    const versionless = await send(port, 'GET', '/buckets?x=1', 'evil.example');
    expect(versionless.status).toBe(307);
    expect(versionless.headers.location).toBe(`${own}/v1/buckets?x=1`);
    const slash = await send(port, 'GET', '/v1/buckets/', 'evil.example:8080');
    expect(slash.status).toBe(307);
    expect(slash.headers.location).toBe(`${own}/v1/buckets`);
  });

  it('builds `url` and Next-Page from the listening address too', async () => {
    const hello = await send(port, 'GET', '/v1/', 'evil.example');
    expect(JSON.parse(hello.body).url).toBe(`${own}/v1/`);
    const page = await send(port, 'GET', '/v1/buckets/b/collections?_limit=1', 'evil.example');
    expect(page.headers['next-page']).toMatch(new RegExp(`^${own}/v1/buckets/b/collections\\?`));
    const api = await send(port, 'GET', '/v1/__api__', 'evil.example');
    expect(JSON.parse(api.body).host).toBe(`127.0.0.1:${port}`);
  });

  it('keeps a Host that names the address used: Next-Page works through it', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      const page = await send(port, 'GET', '/v1/buckets/b/collections?_limit=1', host);
      expect(page.headers['next-page']).toMatch(new RegExp(`^http://${host}/v1/`));
    }
    // Another port is another server.
    const other = await send(port, 'GET', '/v1/', `127.0.0.1:${port + 1}`);
    expect(JSON.parse(other.body).url).toBe(`${own}/v1/`);
  });

  it('answers a request without Host with URLs of the listening address', async () => {
    const hello = await send(port, 'GET', '/v1/', null);
    expect(hello.status).toBe(200);
    expect(JSON.parse(hello.body).url).toBe(`${own}/v1/`);
  });

  it('uses http_host (and http_scheme) when set, whatever the Host', async () => {
    const configured = await start({ http_host: 'api.example.com', http_scheme: 'https' });
    const redirect = await send(configured, 'GET', '/buckets', 'evil.example');
    expect(redirect.headers.location).toBe('https://api.example.com/v1/buckets');
  });

  it('takes a Host listed in http_allowed_hosts', async () => {
    const allowed = await start({ http_allowed_hosts: ['api.example.com', 'api.example.com:8443'] });
    expect(JSON.parse((await send(allowed, 'GET', '/v1/', 'api.example.com')).body).url).toBe(
      'http://api.example.com/v1/',
    );
    expect(JSON.parse((await send(allowed, 'GET', '/v1/', 'API.example.com:8443')).body).url).toBe(
      'http://API.example.com:8443/v1/',
    );
    expect(JSON.parse((await send(allowed, 'GET', '/v1/', 'evil.example')).body).url).toBe(
      `http://127.0.0.1:${allowed}/v1/`,
    );
  });

  it('behind a trusted proxy (trust_proxy), takes the forwarded host and scheme', async () => {
    const proxied = await start({ trust_proxy: true });
    const forwarded = await send(proxied, 'GET', '/buckets', '127.0.0.1', {
      headers: { 'X-Forwarded-Host': 'public.example', 'X-Forwarded-Proto': 'https' },
    });
    expect(forwarded.headers.location).toBe('https://public.example/v1/buckets');
    const plain = await send(proxied, 'GET', '/buckets', 'public.example');
    expect(plain.headers.location).toBe('http://public.example/v1/buckets');
    // Never a Host that is no host name.
    const hostile = await send(proxied, 'GET', '/buckets', '127.0.0.1', {
      headers: { 'X-Forwarded-Host': 'evil.example/path?' },
    });
    expect(hostile.headers.location).toBe(`http://127.0.0.1:${proxied}/v1/buckets`);
    // Without trust_proxy the forwarded headers mean nothing.
    const ignored = await send(port, 'GET', '/buckets', '127.0.0.1', {
      headers: { 'X-Forwarded-Host': 'public.example' },
    });
    expect(ignored.headers.location).toBe(`http://127.0.0.1:${port}/v1/buckets`);
  });

  it('gives batch sub-requests the URLs of their batch, whatever Host they or the batch send', async () => {
    const body = {
      requests: [
        { path: '/buckets/b/collections?_limit=1' },
        {
          path: '/buckets/b/collections?_limit=1',
          headers: { Host: 'evil.example', 'X-Forwarded-Host': 'evil.example' },
        },
      ],
    };
    for (const host of ['evil.example', `127.0.0.1:${port}`]) {
      const batch = await send(port, 'POST', '/v1/batch', host, { body });
      expect(batch.status).toBe(200);
      expect(batch.body).not.toContain('evil.example');
      for (const response of JSON.parse(batch.body).responses as Array<{ headers: Record<string, string> }>) {
        expect(response.headers['Next-Page']).toMatch(new RegExp(`^${own}/v1/`));
      }
    }
  });

  it('gives /buckets/default the URLs of the request', async () => {
    expect((await send(port, 'PUT', '/v1/buckets/default/collections/d', '127.0.0.1', { body: {} })).status).toBe(201);
    for (const id of ['r1', 'r2']) {
      expect(
        (await send(port, 'PUT', `/v1/buckets/default/collections/d/records/${id}`, '127.0.0.1', { body: {} })).status,
      ).toBe(201);
    }
    const page = await send(port, 'GET', '/v1/buckets/default/collections/d/records?_limit=1', 'evil.example');
    expect(page.status).toBe(200);
    expect(page.headers['next-page']).toMatch(new RegExp(`^${own}/v1/buckets/`));
  });
});
