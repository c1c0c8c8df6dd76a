import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import { startForConformance } from './start-server.js';

/** Conformance against the embedded store: SQLite in a file, as `quire start` runs it. */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(join(tmpdir(), 'quire-conformance-'));
  const stop = await startForConformance(project, await createSqliteStorage({ path: join(dir, 'quire.sqlite') }));
  return async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  };
}
