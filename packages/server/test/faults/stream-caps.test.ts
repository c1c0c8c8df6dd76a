/**
 * Issue 36 item 7: shared caps one client can fill. Open sign-up mints accounts in milliseconds:
 * 16 accounts × 20 change streams from one address filled a server-wide cap of 300, after which
 * every other user (account, Basic Auth, anonymous) got 503 "Too many change streams". Streams
 * now count against their address whoever opens them, and a full cap admits a lighter holder in
 * place of the heaviest one's oldest stream. Real streams from distinct loopback addresses
 * (127.0.0.2 = the hostile client, others = everybody else), both stores.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import type { Settings } from '../../src/config.js';
import { describeOnBackends } from '../helpers/backends.js';
import { basic, clientFrom, listen, type Client } from '../helpers/from-address.js';
import { type HeldStream, holdStream } from '../helpers/held-streams.js';

const HOSTILE = '127.0.0.2';

describeOnBackends('shared stream caps one client cannot fill (issue 36.7)', { timeout: 120_000 }, ({ serverWith }) => {
  const held: HeldStream[] = [];
  const clients: Client[] = [];
  afterEach(() => {
    for (const stream of held.splice(0)) stream.close();
    for (const client of clients.splice(0)) client.close();
  });

  async function start(overrides: Partial<Settings>): Promise<{ app: FastifyInstance; origin: string; port: number }> {
    const app = await serverWith({
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
      ...overrides,
    });
    const port = await listen(app);
    return { app, origin: `http://127.0.0.1:${port}`, port };
  }

  async function signUp(port: number, from: string, id: string): Promise<Record<string, string>> {
    const client = clientFrom(from, port);
    clients.push(client);
    expect((await client.send('PUT', `/v1/accounts/${id}`, { body: { data: { password: 'pw' } } })).status).toBe(201);
    return basic(id, 'pw');
  }

  async function hold(origin: string, from: string, headers: Record<string, string> = {}): Promise<HeldStream> {
    const stream = await holdStream(origin, from, headers);
    held.push(stream);
    return stream;
  }

  it('16 accounts × 20 streams from one address leave a stream for every other user, there and elsewhere', async () => {
    const { origin, port } = await start({ changes_stream_max_per_process: 300 });
    const accounts = await Promise.all(
      Array.from({ length: 16 }, (_, index) => signUp(port, HOSTILE, `mint-${index}`)),
    );
    const opened = await Promise.all(
      accounts.flatMap((headers) => Array.from({ length: 20 }, () => hold(origin, HOSTILE, headers))),
    );
    // The address's cap (100), whatever the identities: the rest refused with 429, never 503.
    const refused = opened.filter((stream) => stream.status !== 200);
    expect(new Set(refused.map((stream) => stream.status))).toEqual(new Set([429]));
    expect(refused[0]?.body).toMatchObject({ errno: 117 });
    const stillOpen = () => opened.filter((stream) => stream.status === 200 && !stream.isEnded).length;
    await expect.poll(stillOpen).toBeLessThanOrEqual(100);

    // Everybody else: an account, a Basic Auth user and an anonymous reader elsewhere, and an
    // account behind the same address (a NAT neighbour), which takes one of the heavy holder's places.
    const others = await Promise.all([
      hold(origin, '127.0.0.3', await signUp(port, '127.0.0.3', 'bystander')),
      hold(origin, '127.0.0.4', basic('someone', 'anything')),
      hold(origin, '127.0.0.5'),
      hold(origin, HOSTILE, await signUp(port, HOSTILE, 'neighbour')),
    ]);
    expect(others.map((stream) => stream.status)).toEqual([200, 200, 200, 200]);
    expect(stillOpen()).toBeLessThanOrEqual(99);
  });

  it('a process full of one address’s streams still opens one for each newcomer, in place of the oldest', async () => {
    const { origin, port } = await start({ changes_stream_max_per_process: 40, changes_stream_max_per_address: 1000 });
    const hostile: HeldStream[] = [];
    for (let index = 0; index < 40; index++) hostile.push(await hold(origin, HOSTILE));
    expect(hostile.every((stream) => stream.status === 200)).toBe(true);
    // The process is full, and nobody holds more than the hostile address itself: 503.
    expect(await hold(origin, HOSTILE)).toMatchObject({ status: 503, retryAfter: expect.any(String) });

    const others = [
      await hold(origin, '127.0.0.3', await signUp(port, '127.0.0.3', 'reader')),
      await hold(origin, '127.0.0.4', basic('someone', 'anything')),
      await hold(origin, '127.0.0.5'),
    ];
    expect(others.map((stream) => stream.status)).toEqual([200, 200, 200]);
    // The hostile address's three oldest streams made room; its others stay.
    await Promise.all(hostile.slice(0, 3).map((stream) => stream.ended));
    expect(hostile.slice(3).some((stream) => stream.isEnded)).toBe(false);
    expect(await hold(origin, HOSTILE)).toMatchObject({ status: 503 });
  });
});
