/**
 * The PostgreSQL pool shared per client address as well as per identity (issue 36, shared caps):
 * open sign-up makes identities cheap, so six identities from one address (127.0.0.2) send two
 * slow listings each (`like_` that needs `translate` over 2.5 MB strings), all at once, over real
 * HTTP. Their statements running at once, sampled in pg_stat_activity, never pass the address's
 * share — of the pooled connections (`storage_pool_max_share_per_address`: 4 of 8), or, with the
 * defaults, of the costly statements (`storage_costly_statements_per_address`: 2) — and a listing
 * from another address (127.0.0.3) is answered promptly beside them instead of waiting behind
 * them. Before, each identity had its own share only (2 connections): the six took all 8 and the
 * other address waited for one of their statements to end (QUIRE_TEST_ADDRESS_SHARE=1 shows it).
 * Our backends are told apart from other tests' by an `application_name` of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/app.js';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { postgresSkipReason } from '../helpers/backends.js';
import { basicAuth, testSettings } from '../helpers/embedded-server.js';
import { clientFrom, listen } from '../helpers/from-address.js';
import { dropSchema, newSchemaName, PG_URL, runningTranslates } from '../helpers/postgres.js';

const ADDRESS_SHARE = Number(process.env.QUIRE_TEST_ADDRESS_SHARE ?? 0.5);
const RECORDS = 4;
const IDENTITIES = 6;
/** Slow listings per identity: 12 in all, more than the 8 pooled connections. */
const EACH = 2;
/** As in database-budget.test.ts: `translate` over every character of each string, ~0.3 s a row. */
const SLOW = `/v1/buckets/a/collections/big/records?like_s=${encodeURIComponent('*абвгдеёжзийклмнопрст*')}`;
const QUICK = '/v1/buckets/a/collections/small/records?like_title=x';
const alice = basicAuth('alice');

describe.skipIf(postgresSkipReason !== undefined)('the pool per address [postgresql]', { timeout: 120_000 }, () => {
  const schema = newSchemaName();
  const applicationName = `quire-address-${schema.slice(-8)}`;
  const opened: Array<{ storage: Storage; app: FastifyInstance }> = [];

  /** A server on this file's schema with these shares of the costly statements. */
  async function serve(costlyPerOwner: number, costlyPerAddress: number): Promise<number> {
    const storage = await createPostgresStorage({
      url: `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${applicationName}`,
      schema,
      autoMigrate: true,
      poolSize: 10,
      statementTimeoutMs: 60_000,
      ownerShare: 0.25,
      addressShare: ADDRESS_SHARE,
      costlyPerOwner,
      costlyPerAddress,
    });
    const app = await buildServer({ settings: testSettings(), storage, logger: false });
    opened.push({ storage, app });
    return listen(app);
  }

  /** Slow listings of this file's servers running now (those that call translate). */
  const running = () => runningTranslates(applicationName);

  beforeAll(async () => {
    const port = await serve(1, 2);
    const owner = clientFrom('127.0.0.1', port);
    const everyone = { permissions: { read: ['system.Authenticated'] } };
    expect((await owner.send('PUT', '/v1/buckets/a', { headers: alice, body: everyone })).status).toBe(201);
    for (const name of ['big', 'small'])
      expect((await owner.send('PUT', `/v1/buckets/a/collections/${name}`, { headers: alice })).status).toBe(201);
    owner.close();
    const { storage } = opened[0]!;
    for (let i = 0; i < RECORDS; i++) {
      await storage.transaction((session) =>
        session.objects.insertMany({ resourceName: 'record', parentId: '/buckets/a/collections/big' }, [
          { id: `r${i}`, data: { s: 'ab'.repeat(1_250_000) } },
        ]),
      );
    }
  }, 120_000);

  afterAll(async () => {
    for (const { app, storage } of opened) {
      await app.close();
      await storage.close();
    }
    await dropSchema(schema);
  });

  /**
   * Six identities of 127.0.0.2 send two slow listings each; once their statements run, 127.0.0.3
   * sends a quick one. Returns the most of theirs seen running at once and the quick one's time.
   */
  async function flood(port: number): Promise<{ most: number; quickMs: number; quickStatus: number }> {
    // An earlier flood's statements are being cancelled (its clients closed): not this one's to count.
    for (const since = Date.now(); (await running()) > 0 && Date.now() - since < 15_000; )
      await new Promise((resolve) => setTimeout(resolve, 25));
    const crowd = clientFrom('127.0.0.2', port, IDENTITIES * EACH);
    const other = clientFrom('127.0.0.3', port);
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, await running());
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    try {
      const slow = Array.from({ length: IDENTITIES * EACH }, (_, i) =>
        crowd.send('GET', SLOW, { headers: basicAuth(`crowd${i % IDENTITIES}`) }).catch(() => null),
      );
      // Their statements are running (as many as the share lets through).
      const started = performance.now();
      while (most === 0 && performance.now() - started < 10_000) await new Promise((r) => setTimeout(r, 25));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const quick = await other.send('GET', QUICK, { headers: basicAuth('bystander') });
      // Enough time for more of the crowd's to start, were the share not holding them.
      await new Promise((resolve) => setTimeout(resolve, 300));
      sampling = false;
      await sampler;
      crowd.close(); // the server cancels their statements
      await Promise.all(slow);
      return { most, quickMs: quick.ms, quickStatus: quick.status };
    } finally {
      sampling = false;
      crowd.close();
      other.close();
    }
  }

  it('holds six identities of one address to its share of the pooled connections', async () => {
    // Costly statements uncapped here: the connections are the share that holds.
    const port = await serve(8, 8);
    const { most, quickMs, quickStatus } = await flood(port);
    console.log(
      `[pool per address] share ${ADDRESS_SHARE} of 8 connections: the crowd's statements at most ${most} at once;`,
      `another address's listing answered ${quickStatus} in ${Math.round(quickMs)} ms`,
    );
    expect(quickStatus).toBe(200);
    expect(most).toBe(Math.ceil(8 * ADDRESS_SHARE));
    expect(quickMs).toBeLessThan(1_500);
  });

  it('holds them to the costly statements of one address (defaults: 1 per identity, 2 per address)', async () => {
    const port = await serve(1, 2);
    const { most, quickMs, quickStatus } = await flood(port);
    console.log(
      `[pool per address] costly statements: the crowd's at most ${most} at once;`,
      `another address's listing answered ${quickStatus} in ${Math.round(quickMs)} ms`,
    );
    expect(quickStatus).toBe(200);
    expect(most).toBe(2);
    expect(quickMs).toBeLessThan(1_500);
  });
});
