import { expect } from 'vitest';
import type { Scope, Storage, StoredObject } from '../types.js';
import { randomScope, seedObjects, sleep, type Suite } from './context.js';

export function describeObjectTimestamps(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

  section('timestamps', () => {
    test('every write gets a strictly greater timestamp, which becomes the scope timestamp', async () => {
      const stamps: number[] = [];
      stamps.push((await storage.transaction((session) => session.objects.create(scope, 'a', {}))).last_modified);
      stamps.push((await storage.transaction((session) => session.objects.create(scope, 'b', {}))).last_modified);
      const update = () => storage.transaction((session) => session.objects.update(scope, 'a', { v: 1 }));
      stamps.push((await update()).last_modified);
      stamps.push((await update()).last_modified); // identical data still bumps
      stamps.push((await storage.transaction((session) => session.objects.delete(scope, 'b'))).last_modified);
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1]!);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(stamps.at(-1));
    });

    test('timestamps are close to the current time in milliseconds', async () => {
      const before = Date.now();
      const { last_modified } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      // The database clock may differ slightly from the process clock.
      expect(Math.abs(last_modified - before)).toBeLessThan(60_000);
      expect(Number.isInteger(last_modified)).toBe(true);
    });

    test('many writes in the same millisecond get unique increasing timestamps', async () => {
      const created = await storage.transaction(async (session) => {
        const objects: StoredObject[] = [];
        for (let i = 0; i < 50; i++) objects.push(await session.objects.create(scope, `o${i}`, { i }));
        return objects;
      });
      const stamps = created.map((object) => object.last_modified);
      expect(new Set(stamps).size).toBe(50);
      expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
      const parallel = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          storage.transaction((session) => session.objects.create(scope, `p${i}`, {})),
        ),
      );
      const all = [...stamps, ...parallel.map((object) => object.last_modified)];
      expect(new Set(all).size).toBe(70);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(Math.max(...all));
    });

    test('scopes have independent timestamps', async () => {
      const other = randomScope();
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const before = await storage.read((session) => session.objects.timestamp(other));
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      await storage.transaction((session) => session.objects.update(scope, 'a', {}));
      expect(await storage.read((session) => session.objects.timestamp(other))).toBe(before);
    });

    test('an empty scope gets a timestamp on first read that stays stable until a write', async () => {
      const first = await storage.read((session) => session.objects.timestamp(scope));
      expect(Number.isInteger(first)).toBe(true);
      await sleep(5);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(first);
      expect(await storage.snapshot((session) => session.objects.timestamp(scope))).toBe(first);
      const { last_modified } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      expect(last_modified).toBeGreaterThan(first);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(last_modified);
    });

    test('the scope timestamp never decreases when objects are deleted or purged', async () => {
      await seed({ a: {}, b: {} });
      await storage.transaction((session) => session.objects.delete(scope, 'a'));
      await storage.transaction((session) => session.objects.delete(scope, 'b'));
      const afterDeletes = await storage.read((session) => session.objects.timestamp(scope));
      await storage.transaction((session) => session.objects.purgeDeleted(scope));
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(afterDeletes);
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'c', {}))).last_modified,
      ).toBeGreaterThan(afterDeletes);
    });

    test('1.18: a requested timestamp above the scope timestamp is used and becomes it', async () => {
      const { last_modified: current } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const future = current + 100_000;
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'b', {}, { lastModified: future })))
          .last_modified,
      ).toBe(future);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(future);
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'c', {}))).last_modified,
      ).toBeGreaterThan(future);
      const tombstone = await storage.transaction((session) =>
        session.objects.delete(scope, 'a', { lastModified: future + 10 }),
      );
      expect(tombstone.last_modified).toBe(future + 10);
    });

    test('1.18: a requested timestamp equal to the scope timestamp is replaced by a fresh one', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const { last_modified } = await storage.transaction((session) =>
        session.objects.update(scope, 'b', {}, { lastModified: current }),
      );
      expect(last_modified).toBeGreaterThan(current);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(last_modified);
    });

    test('1.18: a requested timestamp below the scope timestamp is kept without bumping the scope', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await sleep(3);
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const past = current - 1_000_000;
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'old', { v: 1 }, { lastModified: past })))
          .last_modified,
      ).toBe(past);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(current);
      expect(await storage.read((session) => session.objects.get(scope, 'old'))).toMatchObject({
        last_modified: past,
        v: 1,
      });
    });

    test('1.18: a requested past timestamp already used in the scope gets a fresh one', async () => {
      const a = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const clash = await storage.transaction((session) =>
        session.objects.create(scope, 'c', {}, { lastModified: a.last_modified }),
      );
      expect(clash.last_modified).toBeGreaterThan(current);
      // An object keeps its own past timestamp when rewritten with it.
      const again = await storage.transaction((session) =>
        session.objects.update(scope, 'a', { v: 2 }, { lastModified: a.last_modified }),
      );
      expect(again.last_modified).toBe(a.last_modified);
      const stamps = (await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).map(
        (object) => object.last_modified,
      );
      expect(new Set(stamps).size).toBe(stamps.length);
    });
  });
}
