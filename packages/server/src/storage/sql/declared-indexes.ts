/**
 * Declared indexes on PostgreSQL (see ../declared-indexes.ts): what the keeper reads and changes.
 * Built with CREATE INDEX CONCURRENTLY, which writers never wait for (on PGlite, one connection
 * with nobody to wait, a plain CREATE INDEX; see `concurrent`). Several processes may pass at once: a build that
 * finds the index begun by another is skipped (IF NOT EXISTS), and an invalid index that no
 * session is building (a build cut short) is dropped and built again.
 */
import { INDEX_PREFIX, indexName, type IndexStore } from '../declared-indexes.js';
import type { SqlDriver } from './drivers/types.js';
import { QueryBuilder } from './queries.js';

/** What a declared-field index name looks like (indexName), checked before it goes into DDL. */
const NAME = new RegExp(`^${INDEX_PREFIX}[0-9a-f]{20}$`);

/** The index's columns: the very expressions the query builder writes for the field. */
export function indexColumns(field: string): string {
  const ref = new QueryBuilder({ indexed: new Set([field]) }).field(field);
  if (!ref.ordered) throw new TypeError(`not an indexable field: ${JSON.stringify(field)}`);
  return `parent_id, resource_name, (${ref.ordered}), last_modified`;
}

/**
 * `concurrent`: CREATE and DROP INDEX CONCURRENTLY, which writers never wait for; it waits for
 * every transaction of the database older than itself (other schemas' too: tests in a shared
 * database build plainly).
 */
export function sqlIndexStore(driver: SqlDriver, { concurrent = true }: { concurrent?: boolean } = {}): IndexStore {
  const concurrently = concurrent && driver.name !== 'pglite' ? 'CONCURRENTLY' : '';
  /** The declared-field indexes of the schema: valid (usable) or not, and whether a session builds one now. */
  const catalog = () =>
    driver.query<{ name: string; valid: boolean; building: boolean }>(
      `SELECT c.relname AS name, i.indisvalid AND i.indisready AS valid,
              EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = c.oid) AS building
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relname LIKE $1`,
      [`${INDEX_PREFIX.replaceAll('_', '\\_')}%`],
    );
  const drop = async (name: string) => {
    if (!NAME.test(name)) throw new TypeError(`not a declared-field index: ${JSON.stringify(name)}`);
    await driver.exec(`DROP INDEX ${concurrently} IF EXISTS ${name}`);
  };
  return {
    async declarations() {
      // Collection by collection through their scopes' timestamps (every scope that holds
      // objects has one), by the primary key: not a walk over every object of the store.
      const rows = await driver.query<{ indexes: unknown }>(
        `SELECT o.data -> 'indexes' AS indexes
           FROM timestamps t JOIN objects o ON o.parent_id = t.parent_id AND o.resource_name = t.resource_name
          WHERE t.resource_name = 'collection' AND NOT o.deleted AND o.data ? 'indexes'`,
      );
      return rows.map(({ indexes }) => indexes);
    },
    async existing() {
      return new Set((await catalog()).filter((index) => index.valid).map((index) => index.name));
    },
    async create(field) {
      const name = indexName(field);
      const leftover = (await catalog()).find((index) => index.name === name);
      if (leftover && !leftover.valid && !leftover.building) await drop(name);
      else if (leftover) return; // usable, or being built by another process
      await driver.exec(`CREATE INDEX ${concurrently} IF NOT EXISTS ${name} ON objects (${indexColumns(field)})`);
      // The planner's statistics of the new expression (autovacuum would gather them later):
      // without them it may take the new index for any listing of a scope, and sort it whole.
      await driver.exec('ANALYZE objects');
    },
    drop,
  };
}
