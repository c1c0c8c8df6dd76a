/**
 * The store's own upkeep: ping, flush.
 */
import { expect } from 'vitest';
import type { Scope, Storage } from '../types.js';
import type { Suite } from './context.js';

export function describeLifecycle(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));

  section('lifecycle', () => {
    test('ping answers true on a working backend', async () => {
      expect(await storage.ping()).toBe(true);
    });

    test('flush deletes every object, timestamp and permission', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await storage.transaction((session) => session.permissions.set(`${scope.parentId}/records/a`, { read: ['x'] }));
      await storage.flush();
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([]);
      expect(
        (await storage.read((session) => session.permissions.get([`${scope.parentId}/records/a`]))).get(
          `${scope.parentId}/records/a`,
        ),
      ).toEqual({});
      expect(await storage.transaction((session) => session.objects.create(scope, 'a', {}))).toMatchObject({ id: 'a' });
    });

    test('flush also deletes tombstones, group memberships, nonces and scope timestamps', async () => {
      // A timestamp far ahead of the clock: only a deleted scope row can bring it back to now.
      const future = Date.now() + 1_000_000_000;
      await storage.transaction((session) => session.objects.create(scope, 'gone', {}, { lastModified: future }));
      await storage.transaction((session) => session.objects.delete(scope, 'gone'));
      await storage.transaction((session) => session.permissions.setGroupMembers('/buckets/b/groups/g', ['alice']));
      await storage.transaction((session) => session.nonces.store('flush-nonce', 600));
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBeGreaterThan(future);
      await storage.flush();
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([]);
      expect(await storage.read((session) => session.permissions.groupsOf(['alice']))).toEqual([]);
      expect(await storage.transaction((session) => session.nonces.consume('flush-nonce'))).toBe(false);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBeLessThan(future);
    });
  });
}
