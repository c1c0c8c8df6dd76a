import type { TestProject } from 'vitest/node';
import { createPgliteStorage } from '../../src/storage/sql/sql-storage.js';
import { startForConformance } from './start-server.js';

/** Conformance against the embedded store (in-memory PGlite, the same SQL as PostgreSQL). */
export default async function setup(project: TestProject) {
  return startForConformance(project, await createPgliteStorage());
}
