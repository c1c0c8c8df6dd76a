-- Quire storage schema, version 11: a principal's ACEs in URI order. `GET /permissions` walks
-- its pages by URI (the default `-uri`): each principal's next URIs come from this index with a
-- LIMIT, so a page costs its own size, not the caller's whole listing. It also serves what the
-- index it replaces did (a principal's ACEs, of one permission: `permission` is in it), and
-- `authorizedIds` (a principal's ACEs under a URI prefix) as a range.
CREATE INDEX access_control_entries_principal_uri ON access_control_entries (principal, object_id, permission);
DROP INDEX access_control_entries_principal;
