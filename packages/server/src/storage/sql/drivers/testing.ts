/**
 * Tests every SQL driver passes (run by pg.test.ts and pglite.test.ts): what the storage
 * relies on beyond running statements.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendError } from '../../errors.js';
import { sqlState, type SqlDriver } from './types.js';

export function describeDriver(name: string, open: () => Promise<SqlDriver>): void {
  // The first test opens the driver: PGlite's boot alone can take seconds on a loaded machine.
  describe(`${name} driver`, { timeout: 30_000 }, () => {
    const table = `driver_probe_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    let opened: Promise<SqlDriver> | undefined;
    const driver = async () => {
      opened ??= open().then(async (each) => {
        await each.exec(`CREATE TABLE ${table} (n INTEGER PRIMARY KEY)`);
        return each;
      });
      return opened;
    };
    const rows = async () =>
      (await (await driver()).query<{ n: number }>(`SELECT n FROM ${table} ORDER BY n`)).map((row) => row.n);

    afterAll(async () => {
      if (!opened) return;
      const each = await opened;
      await each.exec(`DROP TABLE ${table}`);
      await each.close();
    });

    it('runs beforeCommit statements last, in order, inside the transaction', async () => {
      const db = await driver();
      await db.transaction(async (tx) => {
        tx.beforeCommit(`INSERT INTO ${table} (n) SELECT max(n) + 1 FROM ${table}`);
        tx.beforeCommit(`INSERT INTO ${table} (n) VALUES ($1)`, [100]);
        await tx.query(`INSERT INTO ${table} (n) VALUES ($1)`, [1]);
      });
      // The first deferred statement saw the transaction's own insert.
      expect(await rows()).toEqual([1, 2, 100]);
      await db.exec(`DELETE FROM ${table}`);
    });

    it('runs atCommit statements after the beforeCommit ones, built when the transaction ends', async () => {
      const db = await driver();
      const pending: number[] = [];
      await db.transaction(async (tx) => {
        tx.atCommit(() => pending.map((n) => ({ text: `INSERT INTO ${table} (n) VALUES ($1)`, params: [n] })));
        tx.beforeCommit(`INSERT INTO ${table} (n) VALUES ($1)`, [1]);
        pending.push(2, 3); // decided after atCommit was called: still written
      });
      expect(await rows()).toEqual([1, 2, 3]);
      await db.exec(`DELETE FROM ${table}`);
    });

    it('rolls everything back when a beforeCommit statement fails, and reports its error', async () => {
      const db = await driver();
      const failure = await db
        .transaction(async (tx) => {
          await tx.query(`INSERT INTO ${table} (n) VALUES ($1)`, [1]);
          tx.beforeCommit(`INSERT INTO ${table} (n) VALUES ($1)`, [1]); // duplicate key
          tx.beforeCommit(`INSERT INTO ${table} (n) VALUES ($1)`, [2]);
        })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BackendError);
      expect(sqlState(failure)).toBe('23505');
      expect(await rows()).toEqual([]);
      // The connection is usable afterwards.
      await db.transaction(async (tx) => void (await tx.query(`INSERT INTO ${table} (n) VALUES (3)`)));
      expect(await rows()).toEqual([3]);
      await db.exec(`DELETE FROM ${table}`);
    });

    it('never runs beforeCommit statements of a transaction that throws', async () => {
      const db = await driver();
      await expect(
        db.transaction(async (tx) => {
          tx.beforeCommit(`INSERT INTO ${table} (n) VALUES (1)`);
          throw new Error('abandoned');
        }),
      ).rejects.toThrow('abandoned');
      expect(await rows()).toEqual([]);
    });
  });
}
