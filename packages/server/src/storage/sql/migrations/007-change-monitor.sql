-- Quire storage schema, version 7: the change monitor reads what changed, not everything
-- (issue 30). `GET /buckets/monitor/collections/changes/records?_since=<t>` walks the records
-- timestamps above <t> in order, and the collections a user may read are found from the ACEs of
-- buckets and collections alone, however many records the user wrote (every record keeps its
-- author's write ACE).
CREATE INDEX timestamps_resource_last_modified ON timestamps (resource_name, last_modified, parent_id);

-- The condition is CONTAINER_DEPTH (storage/collection-timestamps.ts): buckets, collections,
-- groups — not records.
CREATE INDEX access_control_entries_containers ON access_control_entries (principal, permission, object_id)
  WHERE length(object_id) - length(replace(object_id, '/', '')) IN (2, 4);

-- Every collection gets a records timestamp when it is created (changes/index.ts); the
-- collections created before get theirs now, so that a `_since` read finds them.
INSERT INTO timestamps (parent_id, resource_name, last_modified)
  SELECT parent_id || '/collections/' || id, 'record', (floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint
  FROM objects WHERE resource_name = 'collection' AND NOT deleted
  ON CONFLICT (parent_id, resource_name) DO NOTHING;
