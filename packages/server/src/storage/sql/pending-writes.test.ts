/**
 * PendingWrites on its own: which timestamps it gives out for the scopes a transaction holds,
 * and what its statements leave in a real PostgreSQL (a throw-away schema) when they run as the
 * transaction commits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, newSchemaName, PG_URL as url, postgresUnavailable } from '../../../test/helpers/postgres.js';
import { BackendError } from '../errors.js';
import { createPgDriver } from './drivers/pg.js';
import { sqlState, type SqlDriver, type SqlTransaction } from './drivers/types.js';
import { PendingWrites, type PendingRow } from './pending-writes.js';
import { createPostgresStorage } from './sql-storage.js';

const SCOPE = { parentId: '/buckets/b/collections/c', resourceName: 'record' };

/** A pending row of SCOPE. */
function row(id: string, lastModified: number | null, extra: Partial<PendingRow> = {}): PendingRow {
  return { ...SCOPE, id, lastModified, data: { id }, deleted: false, fresh: false, ...extra };
}

describe('PendingWrites: timestamps of held scopes', () => {
  it('gives out the held timestamp + 1, + 2, … and reports the last one as the scope timestamp', () => {
    const pending = new PendingWrites();
    expect(pending.next(SCOPE.parentId, SCOPE.resourceName)).toBeUndefined();
    pending.hold(SCOPE.parentId, SCOPE.resourceName, 100);
    expect(pending.timestamp(SCOPE.parentId, SCOPE.resourceName)).toBe(100);
    expect(pending.next(SCOPE.parentId, SCOPE.resourceName)).toBe(101);
    expect(pending.next(SCOPE.parentId, SCOPE.resourceName)).toBe(102);
    expect(pending.timestamp(SCOPE.parentId, SCOPE.resourceName)).toBe(102);
  });

  it('never gives out less than the floor (the database clock when the scope was locked)', () => {
    const pending = new PendingWrites();
    pending.hold(SCOPE.parentId, SCOPE.resourceName, 100, 5_000);
    expect(pending.next(SCOPE.parentId, SCOPE.resourceName)).toBe(5_000);
    expect(pending.next(SCOPE.parentId, SCOPE.resourceName)).toBe(5_001);
  });

  it('forgets a released scope, and the scopes of a deleted tree but not those of a longer name', () => {
    const pending = new PendingWrites();
    for (const parentId of ['/buckets/b', '/buckets/b/collections/c', '/buckets/bb/collections/c'])
      pending.hold(parentId, 'record', 10);
    pending.releaseTree('/buckets/b');
    expect(pending.timestamp('/buckets/b', 'record')).toBeUndefined();
    expect(pending.timestamp('/buckets/b/collections/c', 'record')).toBeUndefined();
    expect(pending.timestamp('/buckets/bb/collections/c', 'record')).toBe(10);
    pending.release('/buckets/bb/collections/c', 'record');
    expect(pending.next('/buckets/bb/collections/c', 'record')).toBeUndefined();
  });

  it('tells which scopes have rows stamped at commit, and take() leaves nothing pending', () => {
    const pending = new PendingWrites();
    pending.add(row('early', 10));
    expect(pending.hasLate(SCOPE.parentId, SCOPE.resourceName)).toBe(false);
    pending.add(row('late', null, { stamped: [{ last_modified: Number.NaN }] }));
    expect(pending.hasLate(SCOPE.parentId, SCOPE.resourceName)).toBe(true);
    expect(pending.hasLate('/buckets/other/collections/c', 'record')).toBe(false);
    expect(pending.take()).toHaveLength(2); // the stamped rows' statement, then one per scope of late rows
    expect(pending.hasLate(SCOPE.parentId, SCOPE.resourceName)).toBe(false);
    expect(pending.take()).toEqual([]);
  });

  it('keeps a fresh row an insert when it is written again', () => {
    const pending = new PendingWrites();
    pending.add(row('a', 10, { fresh: true }));
    pending.add(row('a', 11, { data: { v: 2 } }));
    const [statement] = pending.take();
    // $4-$9 are the columns of the fresh rows (inserted), $10-$15 those of the others (upserted).
    expect(statement!.params.slice(3, 9)).toEqual([
      [SCOPE.parentId],
      [SCOPE.resourceName],
      ['a'],
      [11],
      ['{"v":2}'],
      [false],
    ]);
    expect(statement!.params[11]).toEqual([]);
  });
});

const reason = await postgresUnavailable('pending-writes.test.ts');

describe.skipIf(reason !== undefined)('PendingWrites: its statements on PostgreSQL', () => {
  const schema = newSchemaName();
  let driver: SqlDriver;

  beforeAll(async () => {
    const storage = await createPostgresStorage({ url, schema, autoMigrate: true, concurrentIndexBuilds: false });
    await storage.close();
    driver = createPgDriver({ url, schema, poolSize: 2 });
  }, 60_000);

  afterAll(async () => {
    await driver?.close();
    await dropSchema(schema);
  });

  /** Runs what `pending.take()` gives in one transaction, as the session does when it commits. */
  async function commit(pending: PendingWrites, before?: (tx: SqlTransaction) => Promise<void>): Promise<void> {
    await driver.transaction(async (tx) => {
      await before?.(tx);
      for (const statement of pending.take()) {
        const rows = await tx.query(statement.text, statement.params); // not inside `onRows?.(…)`: skipped there
        statement.onRows?.(rows);
      }
    });
  }

  const stored = async (parentId: string) =>
    driver.query<{ id: string; last_modified: number; data: unknown; deleted: boolean }>(
      'SELECT id, last_modified, data, deleted FROM objects WHERE parent_id = $1 ORDER BY id',
      [parentId],
    );
  const scopeTimestamp = async (parentId: string) =>
    (
      await driver.query<{ last_modified: number }>(
        "SELECT last_modified FROM timestamps WHERE parent_id = $1 AND resource_name = 'record'",
        [parentId],
      )
    )[0]?.last_modified;

  it('stores the stamped rows (inserted or upserted) and moves a held scope to its last timestamp', async () => {
    const parentId = `/buckets/${schema}/collections/stamped`;
    await driver.query("INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'record', 100)", [
      parentId,
    ]);
    await driver.query(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data)
       VALUES ($1, 'record', 'old', 50, '{"v": 1}')`,
      [parentId],
    );
    const pending = new PendingWrites();
    pending.hold(parentId, 'record', 100);
    const first = pending.next(parentId, 'record')!;
    const second = pending.next(parentId, 'record')!;
    pending.add({ ...row('new', first, { fresh: true }), parentId, data: { v: 'new' } });
    pending.add({ ...row('old', second), parentId, data: { deleted: true }, deleted: true });
    await commit(pending);
    expect(await stored(parentId)).toEqual([
      { id: 'new', last_modified: 101, data: { v: 'new' }, deleted: false },
      { id: 'old', last_modified: 102, data: { deleted: true }, deleted: true },
    ]);
    expect(await scopeTimestamp(parentId)).toBe(102);
  });

  it('stamps late rows above the scope at commit, in order, and hands their objects the timestamps', async () => {
    const parentId = `/buckets/${schema}/collections/late`;
    const future = Date.now() + 3_600_000; // above the database clock: the stamps follow it
    await driver.query("INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'record', $2)", [
      parentId,
      future,
    ]);
    const pending = new PendingWrites();
    const objects = [{ last_modified: Number.NaN }, { last_modified: Number.NaN }, { last_modified: Number.NaN }];
    pending.add({ ...row('a', null, { stamped: [objects[0]!] }), parentId });
    pending.add({ ...row('b', null, { stamped: [objects[1]!], fresh: true }), parentId });
    pending.add({ ...row('a', null, { stamped: [objects[2]!] }), parentId, data: { v: 2 } });
    await commit(pending);
    // Three writes, three timestamps; `a` is stored at its last write's.
    expect(objects.map((object) => object.last_modified)).toEqual([future + 1, future + 2, future + 3]);
    expect((await stored(parentId)).map((each) => [each.id, each.last_modified, each.data])).toEqual([
      ['a', future + 3, { v: 2 }],
      ['b', future + 2, { id: 'b' }],
    ]);
    expect(await scopeTimestamp(parentId)).toBe(future + 3);
    // Once run, the statement holds the scope: the transaction's next write follows at once.
    expect(pending.next(parentId, 'record')).toBe(future + 4);
  });

  it('fails the commit, writing nothing, when a fresh row meets an object of its id', async () => {
    const parentId = `/buckets/${schema}/collections/fresh`;
    await driver.query(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified) VALUES ($1, 'record', 'taken', 5)`,
      [parentId],
    );
    const pending = new PendingWrites();
    pending.hold(parentId, 'record', 10);
    pending.add({ ...row('other', pending.next(parentId, 'record')!), parentId });
    pending.add({ ...row('taken', pending.next(parentId, 'record')!, { fresh: true }), parentId });
    const failure = await commit(pending).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BackendError);
    expect(sqlState(failure)).toBe('23505');
    expect((await stored(parentId)).map((each) => each.id)).toEqual(['taken']);
  });
});
