import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStorage, randomScope } from '../testing.js';
import { createPgliteDriver } from './drivers/pglite.js';
import { describeDriver } from './drivers/testing.js';
import { createPgliteStorage, type SqlStorage } from './sql-storage.js';

// One in-memory database for the file: starting PGlite takes a while, and every test of the
// suite works in its own random scope.
let shared: Promise<SqlStorage> | undefined;
const storage = () => (shared ??= createPgliteStorage());

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
    const created = await first.create(scope, 'a', { title: 'persisted' });
    await first.setPermissions(uri, { write: ['alice'] });
    const timestamp = await first.resourceTimestamp(scope);
    await first.close();

    const second = await createPgliteStorage({ dataDir });
    try {
      expect(await second.get(scope, 'a')).toEqual(created);
      expect(await second.resourceTimestamp(scope)).toBe(timestamp);
      expect((await second.getPermissions([uri])).get(uri)).toEqual({ write: ['alice'] });
      expect((await second.update(scope, 'a', {})).last_modified).toBeGreaterThan(timestamp);
    } finally {
      await second.close();
    }
  }, 30_000); // two PGlite boots: slow on a loaded 2-core machine
});
