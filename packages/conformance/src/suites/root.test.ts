/**
 * §11 Root and utility endpoints; §9.1 principals as shown by `GET /`.
 */
import { describe, expect, it } from 'vitest';
import { serverInfo, applicable } from '../harness/capabilities.js';
import { baseUrl } from '../harness/config.js';
import type { AuthenticatedRootBody, RootBody } from '../harness/bodies.js';
import { basic, get } from '../harness/http.js';
import { alice, bob, createUser, usesCreatedAccounts, usesGivenCredentials } from '../harness/users.js';

const info = await serverInfo();

describe('§11.1 GET /v1/ (hello)', () => {
  it('answers 200 JSON with the project fields', async () => {
    const res = await get<RootBody>('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json.project_name).toBeTypeOf('string');
    expect(res.json.project_version).toBeTypeOf('string');
    expect(res.json.project_docs).toBeTypeOf('string');
  });

  it(
    'announces http_api_version as a "MAJOR.MINOR" string: 1.22, or a later 1.x (the original 26.x says 1.23): ' +
      'both accepted',
    async () => {
      // Clients compare the version (kinto-http.js splits it on "."): a later minor version of
      // the same major keeps 1.22's contract (1.23 only adds the `config` field).
      const res = await get<RootBody>('/');
      const version = res.json.http_api_version;
      expect(version).toBeTypeOf('string');
      const m = /^1\.(\d+)$/.exec(version);
      expect(m, `http_api_version ${JSON.stringify(version)}`).not.toBeNull();
      expect(Number(m?.[1])).toBeGreaterThanOrEqual(22);
    },
  );

  it('gives an absolute url ending with /v1/ (DOC≠CODE: with the trailing slash)', async () => {
    const res = await get<RootBody>('/');
    const u = res.json.url;
    expect(u).toBeTypeOf('string');
    expect(u).toMatch(/^https?:\/\//);
    expect(u.endsWith('/v1/')).toBe(true);
    expect(new URL(u).pathname).toBe(`${new URL(baseUrl()).pathname}/`);
  });

  it('exposes settings.batch_max_requests (number or null) and settings.readonly', async () => {
    const res = await get<RootBody>('/');
    const s = res.json.settings;
    expect(s).toBeTypeOf('object');
    expect('batch_max_requests' in s).toBe(true);
    expect(s.batch_max_requests === null || Number.isInteger(s.batch_max_requests)).toBe(true);
    expect(s.readonly).toBeTypeOf('boolean');
    if ('explicit_permissions' in s) expect(s.explicit_permissions).toBeTypeOf('boolean');
  });

  it('has a capabilities object whose entries carry description and url', async () => {
    const res = await get<RootBody>('/');
    const caps = res.json.capabilities;
    expect(caps).toBeTypeOf('object');
    expect(Array.isArray(caps)).toBe(false);
    for (const [name, cap] of Object.entries<Record<string, unknown>>(caps)) {
      expect(cap, name).toBeTypeOf('object');
      expect(cap.description, `${name}.description`).toBeTypeOf('string');
      expect(cap.url, `${name}.url`).toBeTypeOf('string');
    }
  });

  it.runIf(applicable(info.hasCapability('openid'), 'openid capability fields', 'capability openid not offered'))(
    'describes each openid provider with auth_path, client_id, header_type, issuer, name, userinfo_endpoint ' +
      '(interface spec "Authentication")',
    async () => {
      const res = await get<RootBody>('/');
      const providers = res.json.capabilities.openid!.providers;
      expect(Array.isArray(providers)).toBe(true);
      for (const p of providers as Record<string, unknown>[]) {
        for (const field of ['auth_path', 'client_id', 'header_type', 'issuer', 'name', 'userinfo_endpoint'])
          expect(p[field], `${String(p.name)}.${field}`).toBeTypeOf('string');
      }
    },
  );

  it.runIf(
    applicable(info.hasCapability('basicauth'), 'basicauth capability label', 'capability basicauth not offered'),
  )('labels the basicauth method as not for production use (interface spec "Authentication" 9)', () => {
    expect(String(info.capabilities.basicauth?.description)).toMatch(/not for production/i);
  });

  it('offers identities to the suite: the basicauth capability, or credentials were given, or accounts created', () => {
    expect(
      info.hasCapability('basicauth') || usesGivenCredentials() || usesCreatedAccounts(),
      'no basicauth capability, no --user credentials, no --create-accounts',
    ).toBe(true);
  });

  it('has no user field for an anonymous caller', async () => {
    const res = await get<RootBody>('/');
    expect(res.status).toBe(200);
    expect('user' in res.json).toBe(false);
  });

  it('shows user.id basicauth:<64 hex> and the principals for an authenticated caller', async () => {
    const res = await get<AuthenticatedRootBody>('/', { auth: alice });
    expect(res.status).toBe(200);
    const user = res.json.user;
    // §9.1 user ids are `<policy>:<id>`; random Basic Auth pairs give `basicauth:<64 hex>`,
    // accounts `account:<account id>`.
    if (usesCreatedAccounts()) expect(user.id).toBe(`account:${alice.name}`);
    else expect(user.id).toMatch(usesGivenCredentials() ? /^[a-z][a-z0-9_]*:.+$/ : /^basicauth:[0-9a-f]{64}$/);
    expect(user.principals).toEqual(expect.arrayContaining([user.id, 'system.Everyone', 'system.Authenticated']));
  });

  it.runIf(applicable(info.hasCapability('default_bucket'), 'user.bucket', 'capability default_bucket not offered'))(
    'shows user.bucket (UUID-shaped) with the default_bucket plugin',
    async () => {
      const res = await get<AuthenticatedRootBody>('/', { auth: alice });
      expect(res.json.user.bucket).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    },
  );

  it.runIf(applicable(info.hasCapability('basicauth'), 'basicauth user ids', 'capability basicauth not offered'))(
    'derives a stable id from the same user:password pair and distinct ids from distinct pairs',
    async () => {
      const a1 = await get<AuthenticatedRootBody>('/', { auth: alice });
      const a2 = await get<AuthenticatedRootBody>('/', { auth: basic(alice.name, alice.password) });
      const b = await get<AuthenticatedRootBody>('/', { auth: bob });
      const samePasswordOtherUser = await get<AuthenticatedRootBody>('/', {
        auth: basic(createUser().name, alice.password),
      });
      const otherPassword = await get<AuthenticatedRootBody>('/', { auth: basic(alice.name, `${alice.password}x`) });
      expect(a1.json.user.id).toBe(a2.json.user.id);
      expect(b.json.user.id).not.toBe(a1.json.user.id);
      expect(samePasswordOtherUser.json.user.id).not.toBe(a1.json.user.id);
      expect(otherPassword.json.user.id).not.toBe(a1.json.user.id);
    },
  );

  it('treats an empty Basic user name as anonymous (§9.1)', async () => {
    const res = await get<RootBody>('/', { auth: basic('', 'secret') });
    expect(res.status).toBe(200);
    expect('user' in res.json).toBe(false);
  });

  it('treats an unparsable Authorization header as anonymous, not as an error (§9.1)', async () => {
    for (const auth of [
      'Basic !!!not-base64!!!',
      'Basic',
      'Bogus abc',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
    ]) {
      const res = await get<RootBody>('/', { auth });
      expect(res.status, auth).toBe(200);
      expect('user' in res.json, auth).toBe(false);
    }
  });
});

describe('§11.2 utility endpoints', () => {
  it('GET /__heartbeat__ answers 200 with a JSON object of probe results (true, or null = OK)', async () => {
    const res = await get<Record<string, unknown>>('/__heartbeat__');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json).toBeTypeOf('object');
    expect(Array.isArray(res.json)).toBe(false);
    for (const [probe, value] of Object.entries(res.json)) {
      expect(value === true || value === null, `${probe}: ${String(value)}`).toBe(true);
    }
  });

  it('GET /__lbheartbeat__ answers 200 {}', async () => {
    const res = await get<unknown>('/__lbheartbeat__');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
  });

  it('GET /__version__ answers 200 with a JSON object', async () => {
    const res = await get<unknown>('/__version__');
    expect(res.status).toBe(200);
    expect(res.json).toBeTypeOf('object');
    expect(Array.isArray(res.json)).toBe(false);
  });

  it('GET /contribute.json answers 200 with a JSON object with a name', async () => {
    const res = await get<{ name: unknown }>('/contribute.json');
    expect(res.status).toBe(200);
    expect(res.json).toBeTypeOf('object');
    expect(res.json.name).toBeTypeOf('string');
  });

  it('GET /__api__ answers 200 with an OpenAPI 2.0 document (interface spec "Versioning" 1.14)', async () => {
    const res = await get<{ swagger: unknown }>('/__api__');
    expect(res.status).toBe(200);
    expect(res.json.swagger).toBe('2.0');
  });

  it('utility endpoints need no authentication but accept it', async () => {
    for (const path of ['/__heartbeat__', '/__lbheartbeat__', '/__version__', '/contribute.json']) {
      const res = await get(path, { auth: alice });
      expect(res.status, path).toBe(200);
    }
  });
});
