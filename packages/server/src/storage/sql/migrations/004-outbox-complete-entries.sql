-- Quire storage schema, version 4: outbox items carry complete objects. The writer now builds
-- each history entry with its permissions and readers itself (from the ACLs its transaction
-- read and wrote), so the per-item ACE snapshot goes. Items written by an older server, if any
-- are still pending, are completed from their snapshot first, as that server's drainer would
-- have done: `target.permissions` from the ACEs of the entry's object, `_read_principals`
-- from the readers and writers of its `readerUris`.
UPDATE outbox SET payload = (
  SELECT COALESCE(jsonb_agg(
    (pending->'entry') || jsonb_build_object(
      'target', (pending->'entry'->'target') || jsonb_build_object('permissions', COALESCE((
        SELECT jsonb_object_agg(permission, principals) FROM (
          SELECT ace->>1 AS permission, jsonb_agg(ace->>2 ORDER BY ace->>2) AS principals
          FROM jsonb_array_elements(outbox.permissions) AS ace WHERE ace->>0 = pending->>'uri' GROUP BY ace->>1
        ) AS acl), '{}'::jsonb)),
      '_read_principals', COALESCE((
        SELECT jsonb_agg(DISTINCT ace->>2 ORDER BY ace->>2) FROM jsonb_array_elements(outbox.permissions) AS ace
        WHERE ace->>1 IN ('read', 'write') AND ace->>0 IN (SELECT jsonb_array_elements_text(pending->'readerUris'))
      ), '[]'::jsonb))
    ORDER BY position), '[]'::jsonb)
  FROM jsonb_array_elements(outbox.payload) WITH ORDINALITY AS element(pending, position)
)
WHERE jsonb_typeof(permissions) = 'array';

ALTER TABLE outbox DROP COLUMN permissions;
