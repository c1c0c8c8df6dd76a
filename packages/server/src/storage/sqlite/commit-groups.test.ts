import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitGroups } from './commit-groups.js';
import { Connection, Pool } from './connection.js';

/** A file store's writer and a reader beside it, as sqlite-storage.ts opens them. */
function open(dir: string, maxTurns: number) {
  const path = join(dir, 'groups.sqlite');
  const writer = new Connection(path, { busyTimeoutMs: 1000 });
  writer.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
  const reader = new Connection(path, { readonly: true, busyTimeoutMs: 1000 });
  let commits = 0;
  const groups = new CommitGroups(new Pool({ connections: [writer], busyMessage: 'busy' }), {
    lockTimeoutMs: 5000,
    maxTurns,
    onCommit: () => commits++,
  });
  const seen = (k: string) => reader.get<{ v: string }>('SELECT v FROM t WHERE k = ?', [k])?.v;
  return { writer, reader, groups, seen, commits: () => commits };
}

/** A transaction that writes `k` across a few awaits, as a request's does. */
const put =
  (k: string, fail = false) =>
  async (connection: Connection) => {
    await new Promise((resolve) => setImmediate(resolve));
    connection.run('INSERT INTO t (k, v) VALUES (?, ?)', [k, `value of ${k}`]);
    await new Promise((resolve) => setImmediate(resolve));
    if (fail) throw new Error(`${k} fails`);
    return k;
  };

describe('commit groups (the embedded store writer)', () => {
  let dir: string;
  let store: ReturnType<typeof open>;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'quire-groups-'));
  });
  afterEach(() => {
    store.reader.close();
    store.writer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a lone transaction commits at once', async () => {
    store = open(dir, 32);
    expect(await store.groups.run(put('a'))).toBe('a');
    expect(store.seen('a')).toBe('value of a');
    expect(store.commits()).toBe(1);
  });

  it('transactions that queue commit together, each resolved only once its work is visible', async () => {
    store = open(dir, 32);
    const visibleAtResolve: Array<string | undefined> = [];
    const runs = Array.from({ length: 40 }, (_, i) =>
      store.groups.run(put(`k${i}`)).then((k) => visibleAtResolve.push(store.seen(k))),
    );
    await Promise.all(runs);
    expect(visibleAtResolve).toHaveLength(40);
    expect(visibleAtResolve.every((v) => v?.startsWith('value of'))).toBe(true);
    expect(store.commits()).toBeLessThan(10); // 40 transactions, groups of up to 32
    expect(store.commits()).toBeGreaterThanOrEqual(2);
  });

  it('a failing member undoes only its own work', async () => {
    store = open(dir, 32);
    const results = await Promise.allSettled(
      Array.from({ length: 9 }, (_, i) => store.groups.run(put(`k${i}`, i === 4))),
    );
    expect(results.map((r) => r.status)).toEqual([
      ...Array(4).fill('fulfilled'),
      'rejected',
      ...Array(4).fill('fulfilled'),
    ]);
    expect(store.seen('k4')).toBeUndefined();
    for (const i of [0, 1, 2, 3, 5, 6, 7, 8]) expect(store.seen(`k${i}`)).toBe(`value of k${i}`);
  });

  it('a member that loses the whole transaction fails the members it held, and none of it is kept', async () => {
    store = open(dir, 32);
    const lose = async (connection: Connection) => {
      await new Promise((resolve) => setImmediate(resolve));
      connection.exec('ROLLBACK'); // what SQLite does itself after a disk-full or I/O error
      throw new Error('disk full');
    };
    const runs = [
      store.groups.run(put('x0')),
      store.groups.run(put('x1')),
      store.groups.run(lose),
      store.groups.run(put('x3')),
    ];
    const results = await Promise.allSettled(runs);
    expect(results.slice(0, 3).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(store.seen('x0')).toBeUndefined();
    expect(store.seen('x1')).toBeUndefined();
    // The writer is usable afterwards: x3 ran in a new group.
    expect(results[3]!.status).toBe('fulfilled');
    expect(store.seen('x3')).toBe('value of x3');
  });

  it('maxTurns 1 commits each transaction alone', async () => {
    store = open(dir, 1);
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.groups.run(put(`k${i}`))));
    expect(store.commits()).toBe(10);
  });
});
