-- Quire storage schema, version 10: imports that never finished (storage/bulk-import.ts).
-- `quire import` writes its row here in a transaction of its own before it loads anything, and
-- its loading transaction (all or nothing) deletes every row as it commits. A row left behind
-- names an import that was killed, interrupted or lost its connection: it changed nothing, and
-- the next import says so.
CREATE TABLE import_runs (
  id         BIGSERIAL PRIMARY KEY,
  started_at BIGINT NOT NULL,
  pid        INTEGER NOT NULL,
  host       TEXT NOT NULL,
  input      TEXT NOT NULL,
  outcome    TEXT
);
