/**
 * Accounts behaviour the HTTP conformance suite cannot observe from outside: e-mail validation
 * and reset-password through a real SMTP server on loopback, the login failure limits, the
 * verified-password cache (invalidation here, expiry elsewhere) and how passwords are stored.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_SCOPE } from '../src/accounts/ids.js';
import { buildServer } from '../src/app.js';
import { loadSettings, type Settings } from '../src/config.js';
import type { ResourceEvent } from '../src/events/types.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';

type App = Awaited<ReturnType<typeof buildServer>>;

interface ReceivedMail {
  to: string[];
  subject: string;
  body: string;
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives. */
async function startSmtp(): Promise<{
  port: number;
  mails: ReceivedMail[];
  next(): Promise<ReceivedMail>;
  close(): Promise<void>;
}> {
  const mails: ReceivedMail[] = [];
  const waiters: Array<(mail: ReceivedMail) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const split = raw.indexOf('\r\n\r\n');
        const headers = raw.slice(0, split);
        const subject = /^Subject: (.*)$/im.exec(headers)?.[1] ?? '';
        let body = raw.slice(split + 4);
        if (/^Content-Transfer-Encoding: quoted-printable$/im.test(headers)) {
          body = body
            .replace(/=\r\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
        }
        const mail = { to: session.envelope.rcptTo.map((rcpt) => rcpt.address), subject, body: body.trim() };
        const waiter = waiters.shift();
        if (waiter) waiter(mail);
        else mails.push(mail);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    mails,
    next: () => {
      const queued = mails.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        waiters.push(resolve);
        setTimeout(() => reject(new Error('no mail received within 5 s')), 5000).unref();
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
}

async function userOf(app: App, headers: Record<string, string>): Promise<string | undefined> {
  const response = await app.inject({ method: 'GET', url: '/v1/', headers });
  return (response.json() as { user?: { id: string } }).user?.id;
}

// One embedded store for the file (each describe uses its own account ids).
let storage: Storage;
beforeAll(async () => {
  storage = await createSqliteStorage();
}, 60_000);
afterAll(async () => {
  await storage.close();
});

function settingsWith(overrides: Partial<Settings>): Settings {
  return loadSettings({
    env: {},
    configFile: null,
    overrides: {
      log_level: 'silent',
      userid_hmac_secret: 'test-secret',
      multiauth_policies: ['account'],
      account_create_principals: ['system.Everyone'],
      ...overrides,
    },
  });
}

describe('account validation by e-mail (1.22)', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let app: App;

  beforeAll(async () => {
    smtp = await startSmtp();
    app = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({
        account_validation: true,
        mail_host: '127.0.0.1',
        mail_port: smtp.port,
        mail_sender: 'accounts@quire.test',
        account_validation_link_template: 'https://app.test/validate/{id}/{activation-key}',
        account_validation_email_body_template: 'Hello {name}, open {validation-link} (key {activation-key})',
      }),
    });
  });
  afterAll(async () => {
    await app.close();
    await smtp.close();
  });

  it('advertises validation_enabled in the accounts capability', async () => {
    const root = (await app.inject({ method: 'GET', url: '/v1/' })).json();
    expect(root.capabilities.accounts).toEqual({
      description: 'Manage user accounts.',
      url: expect.any(String),
      validation_enabled: true,
    });
  });

  it('refuses ids that are not e-mail addresses', async () => {
    const response = await app.inject({
      method: 'PUT',
      url: '/v1/accounts/bob',
      payload: { data: { password: 'pw' } },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ errno: 107, details: [{ location: 'body', name: 'data.id' }] });
  });

  it('mails a key on sign-up; the account logs in only once validated', async () => {
    const id = 'ann@example.com';
    const created = await app.inject({
      method: 'PUT',
      url: `/v1/accounts/${id}`,
      payload: {
        data: { password: 'pw-ann', name: 'Ann', 'email-context': { name: 'Mallory', 'activation-key': 'forged' } },
      },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data).toEqual({ id, name: 'Ann', validated: false, last_modified: expect.any(Number) });

    const mail = await smtp.next();
    expect(mail.to).toEqual([id]);
    expect(mail.subject).toBe('activate your account');
    // Account fields and the key win over a client-sent email-context.
    const match =
      /^Hello Ann, open https:\/\/app\.test\/validate\/ann%40example\.com\/([0-9a-f-]{36}) \(key \1\)$/.exec(mail.body);
    expect(match, mail.body).not.toBeNull();
    const key = match?.[1] as string;

    expect(await userOf(app, basic(id, 'pw-ann'))).toBeUndefined();

    const wrong = await app.inject({
      method: 'POST',
      url: `/v1/accounts/${id}/validate/00000000-0000-4000-8000-000000000000`,
    });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json()).toEqual({
      code: 403,
      errno: 999,
      error: 'Forbidden',
      message: 'Account ID and activation key do not match',
    });
    const unknown = await app.inject({ method: 'POST', url: `/v1/accounts/nobody@example.com/validate/${key}` });
    expect(unknown.json()).toEqual(wrong.json());

    const validated = await app.inject({ method: 'POST', url: `/v1/accounts/${id}/validate/${key}` });
    expect(validated.statusCode).toBe(200);
    // The bare account, as Kinto answers it.
    expect(validated.json()).toEqual({ id, name: 'Ann', validated: true, last_modified: expect.any(Number) });
    const confirmation = await smtp.next();
    expect(confirmation).toMatchObject({
      to: [id],
      subject: 'Account active',
      body: `The account ${id} is now active`,
    });

    expect(await userOf(app, basic(id, 'pw-ann'))).toBe(`account:${id}`);
    const again = await app.inject({ method: 'POST', url: `/v1/accounts/${id}/validate/${key}` });
    expect(again.statusCode).toBe(403);
  });

  it('reset-password mails a single-use temporary password that can only set a new password', async () => {
    const id = 'reset@example.com';
    await app.inject({ method: 'PUT', url: `/v1/accounts/${id}`, payload: { data: { password: 'forgotten' } } });
    const key = /([0-9a-f-]{36})/.exec((await smtp.next()).body)?.[1];
    await app.inject({ method: 'POST', url: `/v1/accounts/${id}/validate/${key}` });
    await smtp.next();

    const response = await app.inject({ method: 'POST', url: `/v1/accounts/${id}/reset-password` });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ message: 'A temporary reset password has been sent by mail' });
    const mail = await smtp.next();
    expect(mail.subject).toBe('Reset password');
    const temporary = mail.body;
    expect(temporary).toMatch(/^[0-9a-f-]{36}$/);

    // Not a login: it only authorises setting a new password, and only with that one field.
    expect(await userOf(app, basic(id, temporary))).toBeUndefined();
    const withMore = await app.inject({
      method: 'PATCH',
      url: `/v1/accounts/${id}`,
      headers: basic(id, temporary),
      payload: { data: { password: 'x', validated: true } },
    });
    expect(withMore.statusCode).toBe(401);
    const changed = await app.inject({
      method: 'PATCH',
      url: `/v1/accounts/${id}`,
      headers: basic(id, temporary),
      payload: { data: { password: 'remembered' } },
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().data).toEqual({ id, validated: true, last_modified: expect.any(Number) });

    const reused = await app.inject({
      method: 'PATCH',
      url: `/v1/accounts/${id}`,
      headers: basic(id, temporary),
      payload: { data: { password: 'again' } },
    });
    expect(reused.statusCode).toBe(401);
    expect(await userOf(app, basic(id, 'remembered'))).toBe(`account:${id}`);
    expect(await userOf(app, basic(id, 'forgotten'))).toBeUndefined();
  });

  it('a temporary password gets through a login lockout, and the new password lifts it', async () => {
    const id = 'locked@example.com';
    await app.inject({ method: 'PUT', url: `/v1/accounts/${id}`, payload: { data: { password: 'forgotten' } } });
    const key = /([0-9a-f-]{36})/.exec((await smtp.next()).body)?.[1];
    await app.inject({ method: 'POST', url: `/v1/accounts/${id}/validate/${key}` });
    await smtp.next();
    for (let attempt = 0; attempt < 10; attempt++) await userOf(app, basic(id, `guess-${attempt}`));
    expect((await app.inject({ method: 'GET', url: '/v1/', headers: basic(id, 'forgotten') })).statusCode).toBe(429);

    await app.inject({ method: 'POST', url: `/v1/accounts/${id}/reset-password` });
    const temporary = (await smtp.next()).body;
    const changed = await app.inject({
      method: 'PUT',
      url: `/v1/accounts/${id}`,
      headers: basic(id, temporary),
      payload: { data: { password: 'fresh' } },
    });
    expect(changed.statusCode).toBe(200);
    expect(await userOf(app, basic(id, 'fresh'))).toBe(`account:${id}`);
  });

  it('answers reset-password for unknown ids exactly as for known ones, and mails nothing', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/accounts/ghost@example.com/reset-password',
      payload: { data: { 'email-context': {} } },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ message: 'A temporary reset password has been sent by mail' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.mails).toEqual([]);
  });

  it('creates nothing when the validation mail cannot be sent (503, retry later)', async () => {
    const closed = await startSmtp();
    const port = closed.port;
    await closed.close();
    const failing = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_validation: true, mail_host: '127.0.0.1', mail_port: port }),
    });
    try {
      const response = await failing.inject({
        method: 'PUT',
        url: '/v1/accounts/lost@example.com',
        payload: { data: { password: 'pw' } },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ errno: 201 });
      expect(response.headers['retry-after']).toBeDefined();
      expect(await storage.read((session) => session.objects.get(ACCOUNT_SCOPE, 'lost@example.com'))).toBeNull();
    } finally {
      await failing.close();
    }
  });
});

describe('account passwords and the verified-password cache', () => {
  let app: App;
  let otherProcess: App;

  beforeAll(async () => {
    app = await buildServer({ storage, logger: false, settings: settingsWith({ account_cache_ttl_seconds: 3600 }) });
    otherProcess = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_cache_ttl_seconds: 1 }),
    });
  });
  afterAll(async () => {
    await app.close();
    await otherProcess.close();
  });

  it('stores an argon2id hash, never the password, and never shows it', async () => {
    const created = await app.inject({
      method: 'PUT',
      url: '/v1/accounts/hashed',
      payload: { data: { password: 'clear-text' } },
    });
    expect(created.json().data).not.toHaveProperty('password');
    const stored = await storage.read((session) => session.objects.get(ACCOUNT_SCOPE, 'hashed'));
    expect(stored?.password).toMatch(/^\$argon2id\$/);
    expect(JSON.stringify(stored)).not.toContain('clear-text');
  });

  it('emits account events (§10) without the password hash', async () => {
    const seen: ResourceEvent[] = [];
    app.services.events.subscribe({
      name: 'test-recorder',
      actions: new Set(['create', 'update', 'delete'] as const),
      resources: new Set(['account']),
      async inTransaction(events) {
        seen.push(...events);
      },
    });
    await app.inject({ method: 'PUT', url: '/v1/accounts/evented', payload: { data: { password: 'pw' } } });
    await app.inject({ method: 'DELETE', url: '/v1/accounts/evented', headers: basic('evented', 'pw') });
    expect(seen.map((event) => [event.payload.action, event.payload.resource_name, event.payload.account_id])).toEqual([
      ['create', 'account', 'evented'],
      ['delete', 'account', 'evented'],
    ]);
    expect(seen[1]?.payload.user_id).toBe('account:evented');
    expect(JSON.stringify(seen)).not.toContain('argon2');
  });

  it('forgets a remembered password at once when it changes or the account is deleted', async () => {
    await app.inject({ method: 'PUT', url: '/v1/accounts/carol', payload: { data: { password: 'one' } } });
    expect(await userOf(app, basic('carol', 'one'))).toBe('account:carol');
    await app.inject({
      method: 'PUT',
      url: '/v1/accounts/carol',
      headers: basic('carol', 'one'),
      payload: { data: { password: 'two' } },
    });
    expect(await userOf(app, basic('carol', 'one'))).toBeUndefined();
    expect(await userOf(app, basic('carol', 'two'))).toBe('account:carol');
    await app.inject({ method: 'DELETE', url: '/v1/accounts/carol', headers: basic('carol', 'two') });
    expect(await userOf(app, basic('carol', 'two'))).toBeUndefined();
  });

  it('another process keeps a remembered password for at most account_cache_ttl_seconds', async () => {
    await app.inject({ method: 'PUT', url: '/v1/accounts/dave', payload: { data: { password: 'old' } } });
    expect(await userOf(otherProcess, basic('dave', 'old'))).toBe('account:dave');
    await app.inject({
      method: 'PATCH',
      url: '/v1/accounts/dave',
      headers: basic('dave', 'old'),
      payload: { data: { password: 'new' } },
    });
    expect(await userOf(otherProcess, basic('dave', 'old'))).toBe('account:dave');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await userOf(otherProcess, basic('dave', 'old'))).toBeUndefined();
    expect(await userOf(otherProcess, basic('dave', 'new'))).toBe('account:dave');
  });

  it('refuses boot when basicauth comes before account, or a creator is no administrator', async () => {
    await expect(
      buildServer({
        storage,
        logger: false,
        settings: settingsWith({ multiauth_policies: ['basicauth', 'account'], userid_hmac_secret: 's' }),
      }),
    ).rejects.toThrow(/basicauth/);
    await expect(
      buildServer({ storage, logger: false, settings: settingsWith({ account_create_principals: ['account:boss'] }) }),
    ).rejects.toThrow(/account_write_principals/);
  });
});

describe('login failure limits', () => {
  let app: App | null = null;

  afterEach(async () => {
    await app?.close();
    app = null;
  });
  it('answers 429 errno 117 + Retry-After to an address out of wrong passwords, even with the right one', async () => {
    app = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_login_max_failures: 3, account_login_window_seconds: 60 }),
    });
    await app.inject({ method: 'PUT', url: '/v1/accounts/erin', payload: { data: { password: 'right' } } });
    for (let attempt = 0; attempt < 3; attempt++)
      expect(await userOf(app, basic('erin', `wrong-${attempt}`))).toBeUndefined();
    const blocked = await app.inject({ method: 'GET', url: '/v1/', headers: basic('erin', 'right') });
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json()).toMatchObject({ code: 429, errno: 117, error: 'Too Many Requests' });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Other accounts and anonymous requests are not affected.
    await app.inject({ method: 'PUT', url: '/v1/accounts/frank', payload: { data: { password: 'pw' } } });
    expect(await userOf(app, basic('frank', 'pw'))).toBe('account:frank');
    expect((await app.inject({ method: 'GET', url: '/v1/' })).statusCode).toBe(200);
  });

  it('a successful login resets the account counter', async () => {
    app = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_login_max_failures: 2, account_cache_ttl_seconds: 0 }),
    });
    await app.inject({ method: 'PUT', url: '/v1/accounts/gina', payload: { data: { password: 'right' } } });
    for (let round = 0; round < 3; round++) {
      expect(await userOf(app, basic('gina', 'wrong'))).toBeUndefined();
      expect(await userOf(app, basic('gina', 'right'))).toBe('account:gina');
    }
  });

  it('limits wrong passwords per client address across accounts', async () => {
    app = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_login_max_failures: 100, account_login_max_failures_per_ip: 3 }),
    });
    for (const id of ['hal', 'ivy', 'joe', 'kim'])
      await app.inject({ method: 'PUT', url: `/v1/accounts/${id}`, payload: { data: { password: 'pw' } } });
    for (const id of ['hal', 'ivy', 'joe']) expect(await userOf(app, basic(id, 'wrong'))).toBeUndefined();
    const blocked = await app.inject({ method: 'GET', url: '/v1/', headers: basic('kim', 'pw') });
    expect(blocked.statusCode).toBe(429);
    // From another address, kim logs in.
    const elsewhere = await app.inject({
      method: 'GET',
      url: '/v1/',
      headers: basic('kim', 'pw'),
      remoteAddress: '192.0.2.7',
    });
    expect(elsewhere.json().user.id).toBe('account:kim');
  });
});

describe('sign-ups (issue 36 items 7, 9)', () => {
  let app: App | null = null;

  afterEach(async () => {
    await app?.close();
    app = null;
  });

  const signUp = (server: App, id: string, remoteAddress: string, headers: Record<string, string> = {}) =>
    server.inject({
      method: 'PUT',
      url: `/v1/accounts/${id}`,
      headers,
      remoteAddress,
      payload: { data: { password: 'pw' } },
    });

  it('counts sign-ups per client address, an IPv6 one by its /64 network', async () => {
    app = await buildServer({ storage, logger: false, settings: settingsWith({ account_create_max_per_address: 2 }) });
    const statuses: number[] = [];
    for (const [index, address] of ['2001:db8:5:1::1', '2001:db8:5:1::2', '2001:db8:5:1:ffff::9'].entries())
      statuses.push((await signUp(app, `v6-${index}`, address)).statusCode);
    expect(statuses).toEqual([201, 201, 429]);
    expect((await signUp(app, 'v6-other-net', '2001:db8:5:2::1')).statusCode).toBe(201);
    expect((await signUp(app, 'v4-one', '192.0.2.1')).statusCode).toBe(201);
    expect((await signUp(app, 'v4-mapped', '::ffff:192.0.2.1')).statusCode).toBe(201);
    expect((await signUp(app, 'v4-three', '192.0.2.1')).statusCode).toBe(429);
  });

  it('gives back the login attempts the new credentials made before the account existed', async () => {
    app = await buildServer({
      storage,
      logger: false,
      settings: settingsWith({ account_login_max_failures: 3, account_login_max_failures_per_ip: 3 }),
    });
    const own = basic('early-bird', 'pw');
    // Two requests with the credentials of an account not made yet: anonymous, and counted.
    for (let attempt = 0; attempt < 2; attempt++) expect(await userOf(app, own)).toBeUndefined();
    expect((await signUp(app, 'early-bird', '127.0.0.1', own)).statusCode).toBe(201);
    expect(await userOf(app, own)).toBe('account:early-bird');
    // The address has its whole allowance again: three wrong passwords before a 429.
    await signUp(app, 'target', '127.0.0.1');
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++)
      statuses.push(
        (await app.inject({ method: 'GET', url: '/v1/', headers: basic('target', `x${attempt}`) })).statusCode,
      );
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
