/**
 * The SQLite store's schema, as numbered migrations recorded in `schema_migrations` and applied
 * when a store opens (an embedded store always migrates, as PGlite does). They are TypeScript
 * strings rather than `.sql` files so that the bundle needs no copy of them beside it.
 *
 * The tables mirror the PostgreSQL ones (sql/migrations/*.sql), with these choices:
 * - `data` is a JSONB blob (SQLite's binary JSON), not JSON text. Measured on 10,000 records
 *   of ~250 bytes: a filter or a sort on a data field scans 3x faster (1.7 ms instead of
 *   5 ms: no JSON parse per row), while rendering it back as text for a page of 100 costs
 *   ~40 µs more (0.29 ms instead of 0.24 ms). Reads select `json(data)`.
 * - `objects` and `history` are rowid tables: with rows of ~2 KB a WITHOUT ROWID table (whose
 *   b-tree holds whole rows, interior pages included) made a page of 100 ten times slower
 *   (4 ms instead of 0.4 ms) and a get twice as slow; with small rows both were alike.
 *   The small-row tables (timestamps, ACEs, members, nonces) are WITHOUT ROWID: one b-tree.
 * - STRICT tables: a value of the wrong type (a fractional timestamp) fails instead of being
 *   stored as it comes.
 * - Text compares with the BINARY collation (code points, PostgreSQL's "C"), which the prefix
 *   ranges of cascade deletes rely on.
 */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: '001-initial',
    sql: `
      -- Every object of every resource but history entries, live or deleted. A tombstone keeps
      -- {"deleted": true} as data, so that a \`deleted\` filter behaves as in Kinto.
      CREATE TABLE objects (
        parent_id     TEXT NOT NULL,
        resource_name TEXT NOT NULL,
        id            TEXT NOT NULL,
        last_modified INTEGER NOT NULL,
        data          BLOB NOT NULL,
        deleted       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (parent_id, resource_name, id)
      ) STRICT;
      -- Timestamps are unique within a scope; serves _since polls and pages by timestamp.
      CREATE UNIQUE INDEX objects_scope_last_modified ON objects (parent_id, resource_name, last_modified);

      -- History entries: an append-only log per bucket, keyed by timestamp (no index on the
      -- random ids: get and delete by id scan the scope, as on PostgreSQL).
      CREATE TABLE history (
        parent_id     TEXT NOT NULL,
        resource_name TEXT NOT NULL,
        id            TEXT NOT NULL,
        last_modified INTEGER NOT NULL,
        data          BLOB NOT NULL,
        deleted       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (parent_id, resource_name, last_modified)
      ) STRICT;

      -- The current timestamp (ETag) of each scope.
      CREATE TABLE timestamps (
        parent_id     TEXT NOT NULL,
        resource_name TEXT NOT NULL,
        last_modified INTEGER NOT NULL,
        PRIMARY KEY (parent_id, resource_name)
      ) STRICT, WITHOUT ROWID;

      -- Access control entries by object URI (the key also serves URI prefix ranges), and
      -- by principal.
      CREATE TABLE access_control_entries (
        object_id  TEXT NOT NULL,
        permission TEXT NOT NULL,
        principal  TEXT NOT NULL,
        PRIMARY KEY (object_id, permission, principal)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX access_control_entries_principal ON access_control_entries (principal, permission);

      CREATE TABLE group_members (
        group_uri TEXT NOT NULL,
        principal TEXT NOT NULL,
        PRIMARY KEY (group_uri, principal)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX group_members_principal ON group_members (principal);

      -- Single-use pagination tokens of plural DELETE, swept when expired.
      CREATE TABLE pagination_nonces (
        nonce      TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX pagination_nonces_expires_at ON pagination_nonces (expires_at);

      -- Work stored in a transaction and applied after commit (history entries). seq is the
      -- rowid: a new item always gets one above every item present, which is all the per
      -- (topic, key) order needs; the index (topic, key) holds it, so drains scan in order.
      CREATE TABLE outbox (
        seq     INTEGER PRIMARY KEY,
        topic   TEXT NOT NULL,
        key     TEXT NOT NULL,
        payload TEXT NOT NULL
      ) STRICT;
      CREATE INDEX outbox_topic_key ON outbox (topic, key);

      -- The query planner's statistics, set to the shape of a large store (scopes of 10,000
      -- objects, ids and timestamps unique in their scope) and kept fixed: plans are then those
      -- that suit large scopes, whatever the data at hand. Without statistics, SQLite walked a
      -- whole scope by timestamp for \`id IN (…)\` rather than look the ids up, to spare a sort.
      -- \`ANALYZE sqlite_schema\` creates sqlite_stat1, then loads what is inserted into it.
      ANALYZE sqlite_schema;
      INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
        ('objects', 'sqlite_autoindex_objects_1', '1000000 10000 10000 1'),
        ('objects', 'objects_scope_last_modified', '1000000 10000 10000 1'),
        ('history', 'sqlite_autoindex_history_1', '1000000 10000 10000 1');
      ANALYZE sqlite_schema;
    `,
  },
  {
    version: 2,
    name: '002-change-monitor',
    sql: `
      -- The change monitor reads what changed, not everything (PostgreSQL migration 007 says why).
      CREATE INDEX timestamps_resource_last_modified ON timestamps (resource_name, last_modified, parent_id);
      -- The condition is CONTAINER_DEPTH (storage/collection-timestamps.ts): buckets, collections, groups.
      CREATE INDEX access_control_entries_containers ON access_control_entries (principal, permission, object_id)
        WHERE length(object_id) - length(replace(object_id, '/', '')) IN (2, 4);
      INSERT OR IGNORE INTO timestamps (parent_id, resource_name, last_modified)
        SELECT parent_id || '/collections/' || id, 'record', CAST(unixepoch('subsec') * 1000 AS INTEGER)
        FROM objects WHERE resource_name = 'collection' AND NOT deleted;
    `,
  },
  {
    version: 3,
    name: '003-object-counts',
    sql: `
      -- The number of live objects of each scope, kept by triggers in the writes' own
      -- transaction, so that an unfiltered count is one row read (as PostgreSQL's migration 9).
      CREATE TABLE object_counts (
        parent_id     TEXT NOT NULL,
        resource_name TEXT NOT NULL,
        live          INTEGER NOT NULL,
        PRIMARY KEY (parent_id, resource_name)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO object_counts (parent_id, resource_name, live)
        SELECT parent_id, resource_name, count(*) FROM objects WHERE NOT deleted GROUP BY parent_id, resource_name
        UNION ALL
        SELECT parent_id, resource_name, count(*) FROM history WHERE NOT deleted GROUP BY parent_id, resource_name;
      ${['objects', 'history']
        .map(
          (table) => `
      CREATE TRIGGER ${table}_count_inserted AFTER INSERT ON ${table} WHEN NOT NEW.deleted BEGIN
        INSERT INTO object_counts (parent_id, resource_name, live) VALUES (NEW.parent_id, NEW.resource_name, 1)
        ON CONFLICT (parent_id, resource_name) DO UPDATE SET live = live + 1;
      END;
      CREATE TRIGGER ${table}_count_deleted AFTER DELETE ON ${table} WHEN NOT OLD.deleted BEGIN
        UPDATE object_counts SET live = live - 1 WHERE parent_id = OLD.parent_id AND resource_name = OLD.resource_name;
      END;
      CREATE TRIGGER ${table}_count_updated AFTER UPDATE OF deleted ON ${table} WHEN OLD.deleted <> NEW.deleted BEGIN
        INSERT INTO object_counts (parent_id, resource_name, live)
        VALUES (NEW.parent_id, NEW.resource_name, CASE WHEN NEW.deleted THEN -1 ELSE 1 END)
        ON CONFLICT (parent_id, resource_name) DO UPDATE SET live = live + excluded.live;
      END;`,
        )
        .join('')}
    `,
  },
  {
    version: 4,
    name: '004-import-runs',
    sql: `
      -- Imports that never finished (PostgreSQL migration 010 says why; storage/bulk-import.ts).
      CREATE TABLE import_runs (
        id         INTEGER PRIMARY KEY,
        started_at INTEGER NOT NULL,
        pid        INTEGER NOT NULL,
        host       TEXT NOT NULL,
        input      TEXT NOT NULL,
        outcome    TEXT
      ) STRICT;
    `,
  },
];
