/**
 * Sessions across facets: transactions (all or nothing, their own reads, concurrency),
 * `preload`, snapshots.
 */
import { expect } from 'vitest';
import { ObjectNotFoundError, StorageError, UnicityError } from '../errors.js';
import type { Scope, Storage } from '../types.js';
import { ids, randomScope, seedObjects, sleep, type Suite } from './context.js';

export function describeSessions(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

  section('transactions', () => {
    test('commits every write of the function together', async () => {
      const result = await storage.transaction(async (session) => {
        await session.objects.create(scope, 'a', {});
        await session.objects.update(scope, 'b', {});
        await session.permissions.set(`${scope.parentId}/records/a`, { write: ['me'] });
        expect(await session.objects.get(scope, 'a')).not.toBeNull(); // reads see the transaction's writes
        return 'done';
      });
      expect(result).toBe('done');
      expect(
        ids(await storage.read((session) => session.objects.list(scope, { sorting: [{ field: 'id', direction: 1 }] }))),
      ).toEqual(['a', 'b']);
    });

    test('a throwing function rolls everything back and its error comes out unchanged', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'kept', { v: 1 }));
      const before = await storage.read((session) => session.objects.timestamp(scope));
      const failure = new Error('boom');
      const error = await storage
        .transaction(async (session) => {
          await session.objects.create(scope, 'a', {});
          await session.objects.update(scope, 'kept', { v: 2 });
          await session.objects.delete(scope, 'a');
          await session.permissions.set(`${scope.parentId}/records/kept`, { write: ['me'] });
          throw failure;
        })
        .catch((e: unknown) => e);
      expect(error).toBe(failure);
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([
        expect.objectContaining({ id: 'kept', v: 1 }),
      ]);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(before);
      expect(
        (await storage.read((session) => session.permissions.get([`${scope.parentId}/records/kept`]))).get(
          `${scope.parentId}/records/kept`,
        ),
      ).toEqual({});
    });

    test('a refused create inside a transaction leaves it usable and the timestamp unchanged', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const before = await storage.read((session) => session.objects.timestamp(scope));
      const outcome = await storage.transaction(async (session) => {
        const refused = await session.objects.create(scope, 'a', {}).catch((e: unknown) => e);
        return { refused, timestamp: await session.objects.timestamp(scope) };
      });
      expect(outcome.refused).toBeInstanceOf(UnicityError);
      expect(outcome.timestamp).toBe(before);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(before);
    });

    test('many writes in one transaction: increasing timestamps, seen by its reads, stored as left', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'old', { v: 0 }));
      const other = randomScope();
      const outcome = await storage.transaction(async (session) => {
        const written = [
          await session.objects.create(scope, 'a', { v: 1 }),
          await session.objects.create(scope, 'fresh', { v: 2 }, { newId: true }),
          await session.objects.update(scope, 'a', { v: 3 }),
          await session.objects.update(other, 'elsewhere', { v: 4 }),
          await session.objects.delete(scope, 'old'),
          await session.objects.update(scope, 'b', { nested: { list: [1, 2] } }),
        ];
        const refused = await session.objects.create(scope, 'a', {}).catch((e: unknown) => e);
        const missing = await session.objects.delete(scope, 'old').catch((e: unknown) => e);
        return {
          written,
          refused,
          missing,
          a: await session.objects.get(scope, 'a', { forUpdate: true }),
          old: await session.objects.get(scope, 'old'),
          timestamp: await session.objects.timestamp(scope),
          listed: await session.objects.list(scope, {
            includeDeleted: true,
            sorting: [{ field: 'last_modified', direction: 1 }],
          }),
          count: await session.objects.count(scope),
        };
      });
      const stamps = outcome.written.filter((_, i) => i !== 3).map((object) => object.last_modified);
      expect(stamps).toEqual([...stamps].sort((x, y) => x - y));
      expect(new Set(stamps).size).toBe(stamps.length);
      expect(outcome.refused).toBeInstanceOf(UnicityError);
      expect((outcome.refused as UnicityError).existing).toMatchObject({ id: 'a', v: 3 });
      expect(outcome.missing).toBeInstanceOf(ObjectNotFoundError);
      expect(outcome.a).toMatchObject({ id: 'a', v: 3 });
      expect(outcome.old).toBeNull();
      expect(outcome.timestamp).toBe(Math.max(...stamps));
      expect(outcome.count).toBe(3);
      expect(ids(outcome.listed)).toEqual(['fresh', 'a', 'old', 'b']);
      // What the transaction left is what is stored, the scope timestamp included.
      expect(
        await storage.read((session) =>
          session.objects.list(scope, { includeDeleted: true, sorting: [{ field: 'last_modified', direction: 1 }] }),
        ),
      ).toEqual(outcome.listed);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(outcome.timestamp);
      expect(await storage.read((session) => session.objects.get(other, 'elsewhere'))).toMatchObject({ v: 4 });
      expect(await storage.read((session) => session.objects.get(scope, 'b'))).toEqual({
        id: 'b',
        last_modified: stamps.at(-1),
        nested: { list: [1, 2] },
      });
    });

    test(
      'stampAtCommit: the objects handed out get their timestamps by the end, increasing, and the scope ' + 'follows',
      async () => {
        await storage.transaction((session) => session.objects.create(scope, 'x', { v: 0 }));
        const before = await storage.read((session) => session.objects.timestamp(scope));
        const handed = await storage.transaction(async (session) => {
          const old = await session.objects.get(scope, 'x', { forUpdate: true });
          expect(old).toMatchObject({ v: 0 });
          return [
            await session.objects.update(scope, 'x', { v: 1 }, { stampAtCommit: true }),
            await session.objects.create(scope, 'y', { v: 2 }, { newId: true, stampAtCommit: true }),
            await session.objects.delete(scope, 'x', { stampAtCommit: true }),
          ];
        });
        const stamps = handed.map((object) => object.last_modified);
        expect(stamps.every((stamp) => Number.isSafeInteger(stamp) && stamp > before)).toBe(true);
        expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
        expect(await storage.read((session) => session.objects.get(scope, 'y'))).toEqual(handed[1]);
        expect(
          await storage.read((session) =>
            session.objects.list(scope, { includeDeleted: true, sorting: [{ field: 'last_modified', direction: -1 }] }),
          ),
        ).toEqual([handed[2], handed[1]]);
        expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(Math.max(...stamps));
      },
    );

    test('a new id that is taken after all fails the transaction with UnicityError', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'taken', { v: 1 }));
      const error = await storage
        .transaction(async (session) => {
          await session.objects.create(scope, 'before', {});
          await session.objects.create(scope, 'taken', { v: 2 }, { newId: true });
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnicityError);
      expect(await storage.read((session) => session.objects.get(scope, 'taken'))).toMatchObject({ v: 1 });
      expect(await storage.read((session) => session.objects.get(scope, 'before'))).toBeNull();
    });

    test('objects returned by a transaction are copies: changing them changes nothing stored', async () => {
      await storage.transaction(async (session) => {
        const created = await session.objects.create(scope, 'a', { list: [1] });
        (created.list as number[]).push(2);
        const read = (await session.objects.get(scope, 'a'))!;
        expect(read.list).toEqual([1]);
        (read.list as number[]).push(3);
        expect((await session.objects.get(scope, 'a', { forUpdate: true }))!.list).toEqual([1]);
      });
      expect((await storage.read((session) => session.objects.get(scope, 'a')))!.list).toEqual([1]);
    });

    test('concurrent transactions on one scope all commit with unique timestamps', async () => {
      const written = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          storage.transaction(async (session) => [
            await session.objects.create(scope, `x${i}`, {}),
            await session.objects.update(scope, `y${i}`, {}),
          ]),
        ),
      );
      const stamps = written.flat().map((object) => object.last_modified);
      expect(new Set(stamps).size).toBe(16);
      expect(await storage.read((session) => session.objects.count(scope))).toBe(16);
    });
  });

  section('preload', () => {
    test('a preloaded object and ACL read the same as without: live, deleted and missing', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'live', { v: 1 }));
      await storage.transaction((session) => session.objects.create(scope, 'gone', { v: 2 }));
      await storage.transaction((session) => session.objects.delete(scope, 'gone'));
      const uri = (id: string) => `${scope.parentId}/records/${id}`;
      await storage.transaction((session) => session.permissions.set(uri('live'), { write: ['b', 'a'], read: ['c'] }));
      for (const id of ['live', 'gone', 'missing']) {
        const [plain, preloaded] = await Promise.all(
          [false, true].map((preload) =>
            storage.read(async (session) => {
              if (preload) await session.preload?.(scope, id, uri(id));
              return {
                object: await session.objects.get(scope, id),
                acl: (await session.permissions.get([uri(id)])).get(uri(id)),
              };
            }),
          ),
        );
        expect(preloaded, id).toEqual(plain);
      }
    });
  });

  section('snapshot', () => {
    test('the timestamp and the objects read in a snapshot belong to the same moment', async () => {
      await seed({ a: {}, b: {} });
      let pending: Promise<unknown> | undefined;
      const [first, second] = await storage.snapshot(async (session) => {
        const read = async () => ({
          timestamp: await session.objects.timestamp(scope),
          ids: ids(await session.objects.list(scope, { includeDeleted: true })),
        });
        const before = await read();
        // A concurrent write: backends that serialise transactions run it after the snapshot.
        pending ??= Promise.all([
          storage.transaction((session) => session.objects.create(scope, 'c', {})),
          storage.transaction((session) => session.objects.delete(scope, 'a')),
        ]);
        await Promise.race([pending, sleep(200)]);
        return [before, await read()];
      });
      expect(second).toEqual(first);
      expect(first.ids.sort()).toEqual(['a', 'b']);
      await pending;
      const after = await storage.snapshot(async (session) => session.objects.timestamp(scope));
      expect(after).toBeGreaterThan(first.timestamp);
    });

    test('a never-seen scope gets a stable timestamp inside a snapshot', async () => {
      const inside = await storage.snapshot(async (session) => ({
        timestamp: await session.objects.timestamp(scope),
        objects: await session.objects.list(scope),
      }));
      expect(inside.objects).toEqual([]);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(inside.timestamp);
    });

    test('snapshots are read only', async () => {
      await expect(storage.snapshot((session) => session.objects.create(scope, 'a', {}))).rejects.toBeInstanceOf(
        StorageError,
      );
      expect(await storage.read((session) => session.objects.get(scope, 'a'))).toBeNull();
    });
  });
}
