/**
 * Declared indexes on SQLite (see ../declared-indexes.ts): what the keeper reads and changes.
 * One process: an index is built by CREATE INDEX on the writer connection, between two
 * transactions, so writes wait while it is built (about a second per 100,000 records here);
 * reads do not (WAL).
 */
import { INDEX_PREFIX, indexName, type IndexStore } from '../declared-indexes.js';
import type { Connection } from './connection.js';
import { QueryBuilder } from './queries.js';

/** What a declared-field index name looks like (indexName), checked before it goes into DDL. */
const NAME = new RegExp(`^${INDEX_PREFIX}[0-9a-f]{20}$`);

/** The index's columns: the very expressions the query builder writes for the field. */
export function indexColumns(field: string): string {
  const ref = new QueryBuilder({ indexed: new Set([field]) }).field(field);
  if (!ref.ordered) throw new TypeError(`not an indexable field: ${JSON.stringify(field)}`);
  return `parent_id, resource_name, ${ref.ordered}, last_modified`;
}

/** `read` runs on a reader connection, `write` on the writer between transactions. */
export function sqliteIndexStore(
  read: () => Connection,
  write: (fn: (connection: Connection) => void) => Promise<void>,
): IndexStore {
  return {
    async declarations() {
      // Collection by collection through their scopes' timestamps, by the primary key.
      const rows = read().all<{ indexes: string }>(
        `SELECT json_extract(o.data, '$.indexes') AS indexes
           FROM timestamps AS t JOIN objects AS o ON o.parent_id = t.parent_id AND o.resource_name = t.resource_name
          WHERE t.resource_name = 'collection' AND NOT o.deleted AND json_type(o.data, '$.indexes') = 'array'`,
      );
      return rows.map(({ indexes }) => JSON.parse(indexes) as unknown);
    },
    async existing() {
      const rows = read().all<{ name: string }>(
        `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'objects' AND name LIKE ? ESCAPE '\\'`,
        [`${INDEX_PREFIX.replaceAll('_', '\\_')}%`],
      );
      return new Set(rows.map(({ name }) => name));
    },
    async create(field) {
      const name = indexName(field);
      await write((connection) => {
        connection.exec(`CREATE INDEX IF NOT EXISTS ${name} ON objects (${indexColumns(field)})`);
        // Statistics of the shape the store's own indexes have (migration 1: scopes of 10,000
        // objects), the key nearly unique: without them SQLite took this index for every query of
        // a scope, the first page of a listing included, and sorted the whole scope.
        connection.run('DELETE FROM sqlite_stat1 WHERE idx = ?', [name]);
        connection.run(`INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('objects', ?, '1000000 10000 10000 2 1')`, [
          name,
        ]);
        connection.exec('ANALYZE sqlite_schema');
      });
    },
    async drop(name) {
      if (!NAME.test(name)) throw new TypeError(`not a declared-field index: ${JSON.stringify(name)}`);
      await write((connection) => {
        connection.exec(`DROP INDEX IF EXISTS ${name}`);
        connection.run('DELETE FROM sqlite_stat1 WHERE idx = ?', [name]);
        connection.exec('ANALYZE sqlite_schema');
      });
    },
  };
}
