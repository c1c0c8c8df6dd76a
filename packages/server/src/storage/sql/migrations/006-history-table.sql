-- Quire storage schema, version 6: history entries get a table of their own.
-- A bucket's history grows with every write. Kept among the other objects, its old pages and
-- index leaves were dirtied again by new writes (a record stored in free space among old
-- entries, an entry's random id in an old leaf of the primary key), and writes slowed down as
-- the history grew (bench/history.ts --history-preload, 2 million entries: 8.4 KB of WAL per
-- write instead of 3.5, and history cost -10% to -21% req/s instead of -6% to -10%; see
-- packages/server/README.md). Here a new entry only ever appends: the key is the scope and its
-- timestamp, and no index holds the random ids.
-- The columns of `objects` (the same queries serve both), keyed by timestamp instead of id.
CREATE TABLE history (
  LIKE objects INCLUDING DEFAULTS,
  PRIMARY KEY (parent_id, resource_name, last_modified)
);

INSERT INTO history (parent_id, resource_name, id, last_modified, data, deleted)
  SELECT parent_id, resource_name, id, last_modified, data, deleted FROM objects WHERE resource_name = 'history';
DELETE FROM objects WHERE resource_name = 'history';
