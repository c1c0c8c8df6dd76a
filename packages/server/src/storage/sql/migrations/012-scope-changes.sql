-- Quire storage schema, version 12: every change of a scope timestamp is logged, so that a
-- process can keep the timestamps polls ask for (sql/scope-cache.ts) and learn, with one
-- indexed read now and then, which ones another process changed. Triggers rather than code in
-- each write: every statement that moves a timestamp (writes sent at commit, imports, history
-- moves, cascades) logs it in its own transaction. A table, not NOTIFY: a NOTIFY makes
-- committing transactions take turns on one lock held through their WAL flush (8 writers of
-- different collections: 1,750 -> 210-390 commits/s), and it does not reach a hot standby,
-- where this table does. Rows are keyed by their transaction's id: a reader's snapshot says
-- which transactions it has not seen yet (as for `notifications`, migration 008).
-- Statement-level, over the transition tables: one row per statement, none when no timestamp
-- moved (a scope locked by a no-op update). `scopes` is JSON ([[parent_id, resource_name], …]),
-- or `*` when too long (every timestamp is then forgotten).
CREATE TABLE scope_changes (
  xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id         bigserial,
  scopes     text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (xid, id)
);

-- The highest transaction id pruned: a reader that had not read that far starts over.
CREATE TABLE scope_changes_pruned (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  through   xid8 NOT NULL
);
INSERT INTO scope_changes_pruned (through) VALUES ('0');

CREATE FUNCTION log_scope_changes(scopes text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO scope_changes (scopes)
  SELECT CASE WHEN octet_length(scopes) > 4000 THEN '*' ELSE scopes END WHERE scopes IS NOT NULL
$$;

CREATE FUNCTION scopes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM log_scope_changes((SELECT jsonb_agg(jsonb_build_array(parent_id, resource_name))::text FROM new_rows));
  RETURN NULL;
END $$;

CREATE FUNCTION scopes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM log_scope_changes((
    SELECT jsonb_agg(jsonb_build_array(n.parent_id, n.resource_name))::text
    FROM new_rows n JOIN old_rows o ON o.parent_id = n.parent_id AND o.resource_name = n.resource_name
    WHERE o.last_modified IS DISTINCT FROM n.last_modified));
  RETURN NULL;
END $$;

CREATE FUNCTION scopes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM log_scope_changes((SELECT jsonb_agg(jsonb_build_array(parent_id, resource_name))::text FROM old_rows));
  RETURN NULL;
END $$;

CREATE TRIGGER timestamps_log_inserted AFTER INSERT ON timestamps
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION scopes_inserted();
CREATE TRIGGER timestamps_log_updated AFTER UPDATE ON timestamps
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION scopes_updated();
CREATE TRIGGER timestamps_log_deleted AFTER DELETE ON timestamps
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION scopes_deleted();
