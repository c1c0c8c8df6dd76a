/**
 * `/v1/admin/` (protocol-reference §13.7): the console's static files with the `admin` setting,
 * capability `admin`, the 307 from `/v1/admin`, `GET /permissions` turned on, and a clear page
 * when the console is not built.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testSettings, useEmbeddedStore } from '../../test/helpers/embedded-server.js';
import type { Settings } from '../config.js';
import { registerErrorHandler } from '../http/error-handler.js';
import { registerHeaders } from '../http/headers.js';
import { registerAdmin } from './admin.js';

const { serverWith } = useEmbeddedStore();

describe('the admin setting, through buildServer', () => {
  it('is off by default: no capability, and /v1/admin/ is not served', async () => {
    const app = await serverWith({});
    expect((await app.inject({ url: '/v1/' })).json().capabilities.admin).toBeUndefined();
    const response = await app.inject({ url: '/v1/admin/' });
    expect(response.statusCode).toBe(307);
    expect(response.headers.location).toMatch(/\/v1\/admin$/);
    expect((await app.inject({ url: '/v1/admin' })).statusCode).toBe(404);
    await app.close();
  });

  it('on: capability admin, /v1/admin redirects to /v1/admin/, which answers without a redirect loop', async () => {
    const app = await serverWith({ admin: true });
    const { capabilities } = (await app.inject({ url: '/v1/' })).json();
    expect(capabilities.admin).toMatchObject({
      version: expect.any(String),
      description: 'Serves the admin console.',
      url: expect.stringMatching(/^https:\/\//),
    });
    const redirect = await app.inject({ url: '/v1/admin?x=1' });
    expect(redirect.statusCode).toBe(307);
    expect(redirect.headers.location).toBe('http://localhost:80/v1/admin/?x=1');
    // Built or not (this checkout may not have built the console): a page, never a redirect.
    const page = await app.inject({ url: '/v1/admin/', headers: { accept: 'text/html' } });
    expect([200, 404]).toContain(page.statusCode);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    if (page.statusCode === 404) expect(page.body).toContain('pnpm --filter @quire/console build');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect((await app.inject({ method: 'POST', url: '/v1/admin/' })).statusCode).toBe(405);
    await app.close();
  });

  it('turns GET /permissions on, as the admin plugin does', async () => {
    const app = await serverWith({ admin: true, experimental_permissions_endpoint: false });
    expect((await app.inject({ url: '/v1/permissions' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/' })).json().capabilities.permissions_endpoint).toBeDefined();
    await app.close();
  });
});

describe('registerAdmin serving a build', () => {
  let root: string;
  let app: FastifyInstance;

  async function appOn(dir: string, settings: Settings = testSettings({ admin: true })): Promise<FastifyInstance> {
    const instance = Fastify({ logger: false });
    instance.decorate('services', { settings, capabilities: {}, version: '9.9.9' } as never);
    registerErrorHandler(instance, settings);
    registerHeaders(instance, settings);
    registerAdmin(instance, dir);
    await instance.ready();
    return instance;
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'quire-admin-'));
    mkdirSync(join(root, 'assets'));
    writeFileSync(join(root, 'index.html'), '<!doctype html><title>Quire Console</title>');
    writeFileSync(join(root, 'assets', 'index-abc123.js'), `console.log(${JSON.stringify('x'.repeat(4000))});`);
    writeFileSync(join(root, 'version.json'), JSON.stringify({ version: '1.2.3' }));
    writeFileSync(join(root, '.secret'), 'no');
    writeFileSync(join(root, 'assets', 'index-abc123.js.map'), '{"version":3,"sources":["../src/secret-path.ts"]}');
    writeFileSync(join(root, '..', 'quire-admin-outside.txt'), 'OUTSIDE-CONTENT');
    app = await appOn(root);
  });

  afterAll(async () => {
    await app?.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(join(root, '..', 'quire-admin-outside.txt'), { force: true });
  });

  it('serves index.html at /v1/admin/ with the console policy and revalidation', async () => {
    const response = await app.inject({ url: '/v1/admin/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.body).toContain('Quire Console');
    expect(response.headers['cache-control']).toBe('no-cache');
    const policy = String(response.headers['content-security-policy']);
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("script-src 'self';");
    expect(policy).not.toMatch(/unsafe-eval|unsafe-inline|connect-src \*/);
    const again = await app.inject({ url: '/v1/admin/', headers: { 'if-none-match': String(response.headers.etag) } });
    expect(again.statusCode).toBe(304);
  });

  it('serves hashed assets as immutable, compressed when asked', async () => {
    const response = await app.inject({
      url: '/v1/admin/assets/index-abc123.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(response.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(response.rawPayload).toString()).toContain('console.log');
  });

  it('reports the build version in the capability', () => {
    expect((app.services.capabilities as Record<string, { version: string }>).admin?.version).toBe('1.2.3');
  });

  it('serves nothing outside the build, no dotfile, no directory, no source map', async () => {
    for (const url of [
      '/v1/admin/assets/index-abc123.js.map',
      '/v1/admin/../quire-admin-outside.txt',
      '/v1/admin/%2e%2e/quire-admin-outside.txt',
      '/v1/admin/.secret',
      '/v1/admin/assets',
      '/v1/admin/nope.js',
      '/v1/admin/%00',
    ]) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(404);
      expect(response.body, url).not.toContain('OUTSIDE-CONTENT');
    }
  });

  it('says how to build the console when it is missing', async () => {
    const missing = await appOn(join(root, 'does-not-exist'));
    const page = await missing.inject({ url: '/v1/admin/', headers: { accept: 'text/html,*/*' } });
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('Quire Console is not built');
    const json = await missing.inject({ url: '/v1/admin/', headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toMatchObject({ errno: 111, message: expect.stringContaining('not built') });
    await missing.close();
  });
});
