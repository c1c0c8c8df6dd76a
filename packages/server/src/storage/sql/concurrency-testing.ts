/**
 * Concurrency checks of the PostgreSQL backend, with real parallel transactions from several
 * pools (processes): run directly (pg.test.ts) and through a transaction pooler (pooled.test.ts).
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { ObjectNotFoundError, UnicityError } from '../errors.js';
import { randomScope } from '../testing.js';
import type { Storage, StoredObject, Tombstone } from '../types.js';

/** `open(poolSize)` gives a storage with a pool of its own, as another process would have. */
export function describeConcurrency(name: string, open: (poolSize: number) => Promise<Storage>): void {
  const storage = () => open(10);
  describe(`${name} concurrency`, () => {
    it('retries a transaction that lost a deadlock', async () => {
      const store = await storage();
      const [a, b] = [randomScope(), randomScope()];
      let arrived = 0;
      let release!: () => void;
      const bothLocked = new Promise<void>((resolve) => (release = resolve));
      const meet = async () => {
        if (++arrived === 2) release();
        await bothLocked;
      };
      // Each transaction locks one scope, waits for the other, then writes the other's scope.
      const [first, second] = await Promise.all([
        store.transaction(async (session) => {
          await session.objects.update(a, 'x', {});
          await meet();
          return session.objects.update(b, 'x', {});
        }),
        store.transaction(async (session) => {
          await session.objects.update(b, 'y', {});
          await meet();
          return session.objects.update(a, 'y', {});
        }),
      ]);
      expect(first.id).toBe('x');
      expect(second.id).toBe('y');
      expect((await store.read((session) => session.objects.list(a))).map((object) => object.id).sort()).toEqual([
        'x',
        'y',
      ]);
    });

    it('writers in several processes get unique timestamps that follow commit order', async () => {
      const processes = await Promise.all([open(2), open(2), open(2), open(2)]);
      const scope = randomScope();
      const writes = (
        await Promise.all(
          processes.map(async (process, p) => {
            const done: Array<{ ts: number; start: number; end: number }> = [];
            for (let i = 0; i < 40; i++) {
              const start = performance.now();
              const { last_modified } = await process.transaction((session) =>
                session.objects.update(scope, `p${p}-${i % 5}`, { i }),
              );
              done.push({ ts: last_modified, start, end: performance.now() });
            }
            return done;
          }),
        )
      ).flat();
      expect(new Set(writes.map((write) => write.ts)).size).toBe(writes.length);
      // A write that completed before another started has the smaller timestamp.
      const outOfOrder = writes.filter((later) =>
        writes.some((earlier) => earlier.end < later.start && later.ts <= earlier.ts),
      );
      expect(outOfOrder).toEqual([]);
      expect(await processes[0]!.read((session) => session.objects.timestamp(scope))).toBe(
        Math.max(...writes.map((write) => write.ts)),
      );
    });

    it('a _since poller never misses a change made by concurrent writers', async () => {
      const writers = await Promise.all([open(3), open(3), open(3), open(3)]);
      const poller = await open(2);
      const scope = randomScope();
      const objectIds = Array.from({ length: 25 }, (_, i) => `o${i}`);

      interface Write {
        id: string;
        ts: number;
        start: number;
      }
      interface Poll {
        since: number;
        etag: number;
        end: number;
        changes: Array<StoredObject | Tombstone>;
      }
      const writes: Write[] = [];
      const polls: Poll[] = [];
      const deadline = performance.now() + 1_500;

      async function write(process: Storage): Promise<void> {
        // 1.5 s, and at least 60 writes in all (a loaded machine makes fewer in that time).
        while (performance.now() < deadline || writes.length < 60) {
          const id = objectIds[Math.floor(Math.random() * objectIds.length)]!;
          const start = performance.now();
          const roll = Math.random();
          try {
            // Half the updates and deletions stamped at commit, as a request's own write is.
            const stampAtCommit = Math.random() < 0.5;
            const written =
              roll < 0.5
                ? await process.transaction(async (session) => {
                    await session.objects.get(scope, id, { forUpdate: true });
                    return session.objects.update(scope, id, { roll }, { stampAtCommit });
                  })
                : roll < 0.75
                  ? await process.transaction((session) => session.objects.create(scope, id, { roll }))
                  : await process.transaction(async (session) => {
                      await session.objects.get(scope, id, { forUpdate: true });
                      return session.objects.delete(scope, id, { stampAtCommit });
                    });
            writes.push({ id, ts: written.last_modified, start });
          } catch (error) {
            // Racing writers: creating a live object or deleting a deleted one is refused.
            const refused = (error instanceof UnicityError && error.existing) || error instanceof ObjectNotFoundError;
            if (!refused) throw error;
          }
        }
      }

      async function poll(since: number): Promise<Poll> {
        const { etag, changes } = await poller.snapshot(async (session) => ({
          etag: await session.objects.timestamp(scope),
          changes: await session.objects.list(scope, {
            filters: [{ field: 'last_modified', operator: 'gt', value: since }],
            sorting: [{ field: 'last_modified', direction: 1 }],
            includeDeleted: true,
          }),
        }));
        const result = { since, etag, end: performance.now(), changes };
        polls.push(result);
        return result;
      }

      const mirror = new Map<string, number>();
      let since = await poller.read((session) => session.objects.timestamp(scope));
      let writersDone = false;
      const writing = Promise.all(writers.map(write)).finally(() => (writersDone = true));
      writing.catch(() => {}); // a writer's failure is reported by `await writing` below, not as unhandled
      for (;;) {
        // Only a poll that started after every writer finished may end the loop: an empty poll
        // that started earlier can precede the last commits.
        const quiet = writersDone;
        const { etag, changes } = await poll(since);
        for (const change of changes) mirror.set(change.id, change.last_modified);
        if (quiet && changes.length === 0) break;
        since = etag;
      }
      await writing;

      expect(writes.length).toBeGreaterThan(50);
      expect(polls.length).toBeGreaterThan(5);
      // Timestamps are unique.
      expect(new Set(writes.map((w) => w.ts)).size).toBe(writes.length);
      for (const { since: from, etag, changes } of polls) {
        for (const change of changes) {
          expect(change.last_modified).toBeGreaterThan(from);
          expect(change.last_modified).toBeLessThanOrEqual(etag);
        }
      }
      const violations: string[] = [];
      for (const w of writes) {
        // A write never undercuts the ETag of a poll that completed before it started…
        const undercut = polls.find((p) => p.end < w.start && w.ts <= p.etag);
        if (undercut) violations.push(`${w.id}@${w.ts} undercuts the ETag ${undercut.etag} of an earlier poll`);
        // …and the poll whose window (since, etag] holds its timestamp saw it (or a later
        // version of the same object).
        const window = polls.find((p) => p.since < w.ts && w.ts <= p.etag);
        const seen = window?.changes.find((change) => change.id === w.id);
        if (!seen || seen.last_modified < w.ts) {
          const history = writes
            .filter((other) => other.id === w.id)
            .map((other) => other.ts)
            .sort();
          violations.push(
            `${w.id}@${w.ts} was missed by the poller (window ${window?.since}..${window?.etag}, ` +
              `seen ${JSON.stringify(seen)}, writes of ${w.id}: ${history.join(',')})`,
          );
        }
      }
      expect(violations).toEqual([]);
      // The poller's mirror equals the final state, tombstones included.
      const final = await poller.read((session) => session.objects.list(scope, { includeDeleted: true }));
      expect(new Map(final.map((object) => [object.id, object.last_modified]))).toEqual(mirror);
      // The live count the writes kept (migration 009) is exact after all that racing.
      const live = final.filter((object) => !('deleted' in object && object.deleted)).length;
      expect(await poller.read((session) => session.objects.count(scope))).toBe(live);
    });
  });
}
