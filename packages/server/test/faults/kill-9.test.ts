/**
 * A server process killed with SIGKILL (power cut, OOM killer) in the middle of work, on both
 * stores: a batch is all or nothing, every write that was acknowledged (2xx) is there after a
 * restart, and the store reopens. Real `quire start` processes; prints its figures.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type Dispatcher, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from '../helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, runAsAdmin } from '../helpers/postgres.js';

const auth = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const start = useCli();
const pgReason = await postgresUnavailable('kill-9.test.ts (PostgreSQL copy)');
const BATCH_SIZE = 1000;
const ROUNDS = 3;
/** When each round's kill comes after its batch was sent. */
const KILL_AFTER_MS = [100, 400, 6000];

interface Store {
  name: string;
  env: () => Record<string, string>;
  before?: () => Promise<void>;
  after?: () => Promise<void>;
}

const schema = newSchemaName();
const stores: Store[] = [
  {
    name: 'embedded',
    env: (() => {
      const dir = mkdtempSync(join(tmpdir(), 'quire-kill-'));
      return () => ({ QUIRE_DATA_DIR: dir });
    })(),
  },
  {
    name: 'postgresql',
    env: () => ({
      QUIRE_STORAGE_URL:
        `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}` + `options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
    }),
    before: () => runAsAdmin(`CREATE SCHEMA ${schema}`),
    after: () => dropSchema(schema),
  },
];

async function call(
  dispatcher: Agent,
  url: string,
  method: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const response = await request(url, {
    method: method as 'GET',
    dispatcher,
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text ? JSON.parse(text) : null };
}

/** Every record id of a collection, following Next-Page. */
async function ids(dispatcher: Agent, base: string, collection: string): Promise<Set<string>> {
  const found = new Set<string>();
  let next: string | null = `${base}buckets/k/collections/${collection}/records?_limit=10000`;
  while (next) {
    const response: Dispatcher.ResponseData = await request(next, { dispatcher, headers: { authorization: auth } });
    const page = (await response.body.json()) as { data: Array<{ id: string }> };
    for (const record of page.data) found.add(record.id);
    const nextPage = response.headers['next-page'];
    next = typeof nextPage === 'string' ? nextPage : null;
  }
  return found;
}

for (const store of stores) {
  describe.skipIf(store.name === 'postgresql' && pgReason !== undefined)(
    `kill -9 [${store.name}]`,
    { timeout: 120_000 },
    () => {
      beforeAll(async () => store.before?.());
      afterAll(async () => store.after?.());
      const env = () => ({
        ...store.env(),
        PORT: '0',
        QUIRE_USERID_HMAC_SECRET: 'kill-9',
        // Bodies of 1,000 creations: within the limits, whatever their defaults.
        QUIRE_BATCH_MAX_REQUESTS: String(BATCH_SIZE),
      });

      it('a batch killed half-way is all or nothing, and acknowledged single writes all survive', async () => {
        const dispatcher = new Agent({ connections: 16, headersTimeout: 30_000, bodyTimeout: 30_000 });
        let server = start(['start'], env());
        let base = await server.listening;
        expect((await call(dispatcher, `${base}buckets/k`, 'PUT')).status).toBeLessThan(300);
        for (const c of ['batched', 'single'])
          expect((await call(dispatcher, `${base}buckets/k/collections/${c}`, 'PUT')).status).toBeLessThan(300);

        const acknowledged = new Set<string>();
        const figures = {
          batches: 0,
          batchesCommitted: 0,
          batchesLost: 0,
          writesSent: 0,
          writesAcknowledged: 0,
          killed: 0,
          lost: 0,
        };
        for (let round = 0; round < ROUNDS; round++) {
          let stop = false;
          const writers = Array.from({ length: 8 }, async (_, w) => {
            for (let n = 0; !stop; n++) {
              const id = `w${round}-${w}-${n}`;
              figures.writesSent++;
              const answer = await call(dispatcher, `${base}buckets/k/collections/single/records/${id}`, 'PUT', {
                data: { n },
              }).catch(() => null);
              if (answer && answer.status >= 200 && answer.status < 300) acknowledged.add(id);
              if (!answer) return; // the connection died with the server
            }
          });
          // Single writes first (on the embedded store, its one writer then goes to the batch),
          // then a batch of creations with ids of this round, killed while it runs, or, in the
          // last round, most likely after it committed.
          await new Promise((resolve) => setTimeout(resolve, 300));
          const batch = call(dispatcher, `${base}batch`, 'POST', {
            defaults: { method: 'PUT' },
            requests: Array.from({ length: BATCH_SIZE }, (_, i) => ({
              path: `/buckets/k/collections/batched/records/r${round}-${i}`,
              body: { data: { round, i } },
            })),
          }).catch(() => null);
          figures.batches++;
          await new Promise((resolve) => setTimeout(resolve, KILL_AFTER_MS[round]));
          server.child.kill('SIGKILL');
          figures.killed++;
          stop = true;
          await server.exited;
          const batchAnswer = await batch;
          await Promise.all(writers);

          server = start(['start'], env());
          base = await server.listening;
          const stored = await ids(dispatcher, base, 'batched');
          const ofRound = [...stored].filter((id) => id.startsWith(`r${round}-`)).length;
          // All or nothing; and if it answered 200 before the kill, all.
          expect([0, BATCH_SIZE]).toContain(ofRound);
          if (batchAnswer?.status === 200) expect(ofRound).toBe(BATCH_SIZE);
          if (ofRound === BATCH_SIZE) figures.batchesCommitted++;
          else figures.batchesLost++;
          const single = await ids(dispatcher, base, 'single');
          const missing = [...acknowledged].filter((id) => !single.has(id));
          figures.lost += missing.length;
          expect(missing).toEqual([]);
        }
        figures.writesAcknowledged = acknowledged.size;
        console.log(`[faults] kill -9 on ${store.name}: ${JSON.stringify(figures)}`);
        server.child.kill('SIGTERM');
        await server.exited;
        await dispatcher.close();
      });
    },
  );
}
