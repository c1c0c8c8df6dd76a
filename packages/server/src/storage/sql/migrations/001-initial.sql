-- Quire storage schema, version 1.

-- Every object of every resource, live or deleted. `data` holds the attributes without `id`
-- and `last_modified`; a tombstone keeps `{"deleted": true}` so that a `deleted` filter
-- behaves as in Kinto.
-- parent_id uses the C collation so that `parent_id LIKE '<uri>/%'` (cascade deletes) can
-- use the primary key index whatever the database's default collation.
CREATE TABLE objects (
  parent_id     TEXT COLLATE "C" NOT NULL,
  resource_name TEXT NOT NULL,
  id            TEXT NOT NULL,
  last_modified BIGINT NOT NULL,
  data          JSONB NOT NULL DEFAULT '{}',
  deleted       BOOLEAN NOT NULL DEFAULT FALSE,
  PRIMARY KEY (parent_id, resource_name, id)
);

-- Timestamps are unique within a scope: this enforces it, and serves `_since` polling and
-- paging by last_modified in O(page) however large the scope.
CREATE UNIQUE INDEX objects_scope_last_modified ON objects (parent_id, resource_name, last_modified);

-- The current timestamp of each scope. Every write upserts (and so row-locks) its scope's
-- row: writers to one scope serialise, and the stored value is the scope's ETag.
CREATE TABLE timestamps (
  parent_id     TEXT COLLATE "C" NOT NULL,
  resource_name TEXT NOT NULL,
  last_modified BIGINT NOT NULL,
  PRIMARY KEY (parent_id, resource_name)
);

-- Access control entries, keyed by object URI. The primary key serves lookups by object
-- (and, with the C collation, by URI prefix); the second index serves lookups by principal.
CREATE TABLE access_control_entries (
  object_id  TEXT COLLATE "C" NOT NULL,
  permission TEXT NOT NULL,
  principal  TEXT NOT NULL,
  PRIMARY KEY (object_id, permission, principal)
);
CREATE INDEX access_control_entries_principal ON access_control_entries (principal, permission);
