import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStorage, randomScope } from '../testing.js';
import { createPgliteDriver } from './drivers/pglite.js';
import type { SqlDriver } from './drivers/types.js';
import { EmbeddedMaintenance } from './maintenance.js';
import { describeDriver } from './drivers/testing.js';
import { migrate } from './migrate.js';
import { createPgliteStorage, SqlStorage } from './sql-storage.js';
import { HISTORY_RESOURCE } from '../types.js';

// One in-memory database for the file: starting PGlite takes a while, and every test of the
// suite works in its own random scope.
let shared: Promise<SqlStorage> | undefined;
const storage = () => (shared ??= createPgliteStorage());

// Opened before the suite, with time to spare: on a loaded machine booting and migrating it
// took longer than the default hook timeout of the suite's first test.
beforeAll(async () => {
  await storage();
}, 60_000);

afterAll(async () => {
  await (await shared)?.close();
});

describeStorage('pglite', storage);
describeDriver('pglite', async () => createPgliteDriver());

describe('pglite persistence', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'quire-pglite-'));
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps objects, timestamps and permissions across a restart', async () => {
    const scope = randomScope();
    const uri = `${scope.parentId}/records/${randomUUID()}`;
    const first = await createPgliteStorage({ dataDir });
    const created = await first.transaction((session) => session.objects.create(scope, 'a', { title: 'persisted' }));
    await first.transaction((session) => session.permissions.set(uri, { write: ['alice'] }));
    const timestamp = await first.read((session) => session.objects.timestamp(scope));
    await first.close();

    const second = await createPgliteStorage({ dataDir });
    try {
      expect(await second.read((session) => session.objects.get(scope, 'a'))).toEqual(created);
      expect(await second.read((session) => session.objects.timestamp(scope))).toBe(timestamp);
      expect((await second.read((session) => session.permissions.get([uri]))).get(uri)).toEqual({ write: ['alice'] });
      expect(
        (await second.transaction((session) => session.objects.update(scope, 'a', {}))).last_modified,
      ).toBeGreaterThan(timestamp);
    } finally {
      await second.close();
    }
  }, 30_000); // two PGlite boots: slow on a loaded 2-core machine
});

describe('pglite tables', () => {
  it('keeps history entries in the history table, apart from every other object', async () => {
    const driver = createPgliteDriver();
    const storage = new SqlStorage(driver);
    try {
      await migrate(driver);
      await storage.transaction((session) => session.objects.create({ parentId: '', resourceName: 'bucket' }, 'b', {}));
      await storage.transaction((session) =>
        session.objects.create({ parentId: '/buckets/b/collections/c', resourceName: 'record' }, 'r', {}),
      );
      await storage.transaction((session) =>
        session.outbox.enqueue('history', [{ key: '/buckets/b', payload: [{ n: 1 }, { n: 2 }] }]),
      );
      const target = {
        scope: { parentId: '/buckets/b', resourceName: HISTORY_RESOURCE },
        whileExists: { scope: { parentId: '', resourceName: 'bucket' }, id: 'b' },
      };
      expect(
        await storage.transaction((session) => session.outbox.moveToScope('history', '/buckets/b', 10, target)),
      ).toBe(1);

      const objects = await driver.query<{ resource_name: string }>(
        'SELECT resource_name FROM objects ORDER BY resource_name',
      );
      expect(objects.map((row) => row.resource_name)).toEqual(['bucket', 'record']);
      const entries = await driver.query<{ parent_id: string; data: unknown }>(
        'SELECT parent_id, data FROM history ORDER BY last_modified',
      );
      expect(entries).toEqual([
        { parent_id: '/buckets/b', data: { n: 1 } },
        { parent_id: '/buckets/b', data: { n: 2 } },
      ]);
    } finally {
      await storage.close();
    }
  }, 30_000);
});

describe('pglite maintenance (its stand-in for autovacuum)', () => {
  const lookup =
    "SELECT id FROM objects WHERE parent_id = '/buckets/b/collections/c' AND resource_name = 'record' " +
    "AND id = 'r7'";
  async function indexOfLookup(driver: SqlDriver): Promise<string> {
    const plan = await driver.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${lookup}`);
    return /using (\w+)/.exec(plan[0]!['QUERY PLAN'])?.[1] ?? plan[0]!['QUERY PLAN'];
  }
  const fill = (driver: SqlDriver, rows: number) =>
    driver.query(
      `INSERT INTO objects SELECT '/buckets/b/collections/c', 'record', 'r' || n, n, '{}', false
       FROM generate_series(1, ${rows}) n`,
    );

  it('analyses a store whose tables never were when it opens: a get by id uses the primary key', async () => {
    const driver = createPgliteDriver();
    try {
      await migrate(driver);
      await fill(driver, 5000);
      await new EmbeddedMaintenance(driver).start();
      expect(await indexOfLookup(driver)).toBe('objects_pkey');
    } finally {
      await driver.close();
    }
  }, 30_000);

  it('analyses again once enough objects were written since', async () => {
    const driver = createPgliteDriver();
    const maintenance = new EmbeddedMaintenance(driver);
    const storage = new SqlStorage(driver, { maintenance });
    try {
      await migrate(driver);
      await maintenance.start(); // analyses the empty tables
      await fill(driver, 5000); // behind the storage's back: the statistics still say empty
      const other = { parentId: '/buckets/b/collections/d', resourceName: 'record' };
      // Counted in objects, not transactions: 16 transactions, 55 objects (> 50).
      await storage.transaction((session) =>
        session.objects.insertMany(
          other,
          Array.from({ length: 40 }, (_, i) => ({ id: `m${i}`, data: {} })),
        ),
      );
      for (let i = 0; i < 15; i++) await storage.transaction((session) => session.objects.create(other, `w${i}`, {}));
      await maintenance.idle();
      expect(await indexOfLookup(driver)).toBe('objects_pkey');
      const [objects] = await driver.query<{ rows: number }>(
        `SELECT reltuples::int AS rows FROM pg_class WHERE relname = 'objects'`,
      );
      expect(objects!.rows).toBeGreaterThanOrEqual(5000);
    } finally {
      await storage.close();
    }
  }, 30_000);
});

describe('pglite migrations', () => {
  it('4 completes the history entries an older server left pending in the outbox', async () => {
    const driver = createPgliteDriver();
    try {
      expect(await migrate(driver, { upTo: 3 })).toHaveLength(3);
      const record = '/buckets/b/collections/c/records/r';
      const pending = [
        {
          uri: record,
          readerUris: ['/buckets/b', '/buckets/b/collections/c', record],
          entry: { action: 'create', target: { data: { id: 'r' } } },
        },
        {
          uri: '/buckets/b/collections/c',
          readerUris: ['/buckets/b', '/buckets/b/collections/c'],
          entry: { action: 'update', target: { data: { id: 'c' } } },
        },
      ];
      const snapshot = [
        ['/buckets/b', 'write', 'alice'],
        ['/buckets/b/collections/c', 'read', 'bob'],
        [record, 'write', 'carol'],
        [record, 'read', 'dave'],
      ];
      await driver.query(
        `INSERT INTO outbox (topic, key, payload, permissions) VALUES ('history', '/buckets/b', $1::jsonb, $2::jsonb)`,
        [JSON.stringify(pending), JSON.stringify(snapshot)],
      );

      expect(await migrate(driver, { upTo: 4 })).toEqual(['004-outbox-complete-entries']);
      const [row] = await driver.query<{ payload: unknown }>('SELECT payload FROM outbox');
      expect(row!.payload).toEqual([
        {
          action: 'create',
          target: { data: { id: 'r' }, permissions: { read: ['dave'], write: ['carol'] } },
          _read_principals: ['alice', 'bob', 'carol', 'dave'],
        },
        {
          action: 'update',
          target: { data: { id: 'c' }, permissions: { read: ['bob'] } },
          _read_principals: ['alice', 'bob'],
        },
      ]);
      const columns = await driver.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_name = 'outbox' ORDER BY column_name`,
      );
      expect(columns.map((column) => column.column_name)).toEqual(['key', 'payload', 'seq', 'topic']);
    } finally {
      await driver.close();
    }
  }, 30_000);

  it('5 keeps pending outbox payloads, in order, as text keyed by (topic, key, seq)', async () => {
    const driver = createPgliteDriver();
    try {
      expect(await migrate(driver, { upTo: 4 })).toHaveLength(4);
      const payloads = [
        [{ action: 'create', n: 1 }],
        [
          { action: 'update', n: 2 },
          { action: 'delete', n: 3 },
        ],
      ];
      for (const payload of payloads) {
        await driver.query(`INSERT INTO outbox (topic, key, payload) VALUES ('history', '/buckets/b', $1::jsonb)`, [
          JSON.stringify(payload),
        ]);
      }

      expect(await migrate(driver, { upTo: 5 })).toEqual(['005-outbox-text-payload']);
      const rows = await driver.query<{ payload: unknown; type: string }>(
        'SELECT payload::jsonb AS payload, pg_typeof(payload)::text AS type FROM outbox ORDER BY seq',
      );
      expect(rows).toEqual(payloads.map((payload) => ({ payload, type: 'text' })));
      const keyColumns = await driver.query<{ column_name: string }>(
        `SELECT kcu.column_name FROM information_schema.table_constraints tc
         JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
         WHERE tc.table_name = 'outbox' AND tc.constraint_type = 'PRIMARY KEY' ORDER BY kcu.ordinal_position`,
      );
      expect(keyColumns.map((column) => column.column_name)).toEqual(['topic', 'key', 'seq']);
      const indexes = await driver.query<{ indexname: string }>(
        `SELECT indexname FROM pg_indexes WHERE tablename = 'outbox'`,
      );
      expect(indexes).toHaveLength(1);
    } finally {
      await driver.close();
    }
  }, 30_000);

  it('6 moves the history entries, live and deleted, out of the objects table into their own', async () => {
    const driver = createPgliteDriver();
    try {
      expect(await migrate(driver, { upTo: 5 })).toHaveLength(5);
      const rows = [
        ['/buckets/b', 'history', 'e1', 10, '{"action": "create", "uri": "/buckets/b"}', false],
        ['/buckets/b', 'history', 'e2', 12, '{"deleted": true}', true],
        ['/buckets/b', 'collection', 'c', 11, '{}', false],
        ['/buckets/b/collections/c', 'record', 'history', 13, '{"title": "named history"}', false],
      ];
      for (const row of rows) {
        await driver.query(
          'INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted) ' +
            'VALUES ($1, $2, $3, $4, $5::jsonb, $6)',
          row,
        );
      }

      expect(await migrate(driver, { upTo: 6 })).toEqual(['006-history-table']);
      const listed = (table: string) =>
        driver.query(
          `SELECT parent_id, resource_name, id, last_modified, data, deleted FROM ${table} ORDER BY last_modified`,
        );
      expect(await listed('history')).toEqual([
        {
          parent_id: '/buckets/b',
          resource_name: 'history',
          id: 'e1',
          last_modified: 10,
          data: { action: 'create', uri: '/buckets/b' },
          deleted: false,
        },
        {
          parent_id: '/buckets/b',
          resource_name: 'history',
          id: 'e2',
          last_modified: 12,
          data: { deleted: true },
          deleted: true,
        },
      ]);
      expect((await listed('objects')).map((row) => row.id)).toEqual(['c', 'history']);
    } finally {
      await driver.close();
    }
  }, 30_000);
});
