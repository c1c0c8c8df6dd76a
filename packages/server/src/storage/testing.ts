/**
 * The shared storage suite: every backend runs it (Kinto `storage/testing.py`, hono
 * `common.case.test.ts`). Published as `@quire/server/testing`.
 *
 *   describeStorage('pglite', () => Promise.resolve(shared));
 *
 * `factory` is called before each test; the suite never closes what it returns (the caller
 * owns the storage), and every test works in its own random scope, so a factory may return
 * one shared instance. Skipped tests are named `'<section> > <test>'` and need a reason.
 *
 * One file per facet of a session under `testing/` (objects and their listings, permissions,
 * nonces, outbox), then what spans them (transactions, snapshots) and the store's upkeep.
 * `generated-listings.ts` checks listings against the reference filter engine on generated
 * objects and filters: it needs `fast-check` (an optional peer dependency, like vitest).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { describeCollectionTimestamps } from './testing/collection-timestamps.js';
import { randomScope, type Current, type Suite } from './testing/context.js';
import { describeGeneratedListings } from './testing/generated-listings.js';
import { describeLifecycle } from './testing/lifecycle.js';
import { describeNonces } from './testing/nonces.js';
import { describeObjectListings } from './testing/objects-listing.js';
import { describeHistoryScopes } from './testing/history-scopes.js';
import { describeObjectDeletions } from './testing/object-deletions.js';
import { describeObjectFilters } from './testing/object-filters.js';
import { describeObjectTimestamps } from './testing/object-timestamps.js';
import { describeObjects } from './testing/objects.js';
import { describeOutbox } from './testing/outbox.js';
import { describePermissions } from './testing/permissions.js';
import { describeSessions } from './testing/transactions.js';
import type { Storage } from './types.js';

export { continuationOf, randomScope } from './testing/context.js';

export interface DescribeStorageOptions {
  skip?: { reason: string; tests: string[] }[];
}

export function describeStorage(
  name: string,
  factory: () => Promise<Storage>,
  options: DescribeStorageOptions = {},
): void {
  const skipped = new Map<string, string>();
  for (const { reason, tests } of options.skip ?? []) {
    if (!reason.trim()) throw new Error('describeStorage: every skip needs a reason');
    for (const test of tests) skipped.set(test, reason);
  }
  const declared = new Set<string>();
  const users: Array<(current: Current) => void> = [];
  let group = '';

  const suite: Suite = {
    test(title, fn, timeoutMs) {
      const key = `${group} > ${title}`;
      declared.add(key);
      const reason = skipped.get(key);
      if (reason === undefined) it(title, fn, timeoutMs);
      else it.skip(`${title} (skipped: ${reason})`, fn);
    },
    section(title, body) {
      describe(title, () => {
        group = title;
        body();
      });
    },
    beforeEach(use) {
      users.push(use);
    },
  };

  describe(`storage: ${name}`, () => {
    beforeEach(async () => {
      const current = { storage: await factory(), scope: randomScope() };
      for (const use of users) use(current);
    });

    describeObjects(suite);
    describeObjectTimestamps(suite);
    describeObjectDeletions(suite);
    describeHistoryScopes(suite);
    describeObjectFilters(suite);
    describeObjectListings(suite);
    describeGeneratedListings(suite);
    describePermissions(suite);
    describeCollectionTimestamps(suite);
    describeNonces(suite);
    describeOutbox(suite);
    describeSessions(suite);
    describeLifecycle(suite);

    // Every skip must name a test that exists, so that a rename cannot silently re-enable it.
    it('skips only tests that exist', () => {
      expect([...skipped.keys()].filter((key) => !declared.has(key))).toEqual([]);
    });
  });
}
