-- Quire storage schema, version 13: the scope-change log of migration 012 written by the trigger
-- functions themselves. They called the SQL function `log_scope_changes`, whose statement
-- PostgreSQL (before 18) parses and plans again at every call: that was half of what the log
-- cost each write (EXPLAIN ANALYZE of a record's creation as sent at commit, least of 40 runs,
-- three rounds: the two timestamps triggers 0.126-0.147 ms -> 0.053-0.075 ms, the whole
-- statement 0.48-0.53 -> 0.30-0.42 ms). Same rows as before: one per statement that moved a
-- timestamp, none otherwise.
CREATE OR REPLACE FUNCTION scopes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO scope_changes (scopes)
  SELECT CASE WHEN octet_length(scopes) > 4000 THEN '*' ELSE scopes END
  FROM (SELECT jsonb_agg(jsonb_build_array(parent_id, resource_name))::text AS scopes FROM new_rows) AS moved
  WHERE scopes IS NOT NULL;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION scopes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO scope_changes (scopes)
  SELECT CASE WHEN octet_length(scopes) > 4000 THEN '*' ELSE scopes END
  FROM (
    SELECT jsonb_agg(jsonb_build_array(n.parent_id, n.resource_name))::text AS scopes
    FROM new_rows n JOIN old_rows o ON o.parent_id = n.parent_id AND o.resource_name = n.resource_name
    WHERE o.last_modified IS DISTINCT FROM n.last_modified
  ) AS moved
  WHERE scopes IS NOT NULL;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION scopes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO scope_changes (scopes)
  SELECT CASE WHEN octet_length(scopes) > 4000 THEN '*' ELSE scopes END
  FROM (SELECT jsonb_agg(jsonb_build_array(parent_id, resource_name))::text AS scopes FROM old_rows) AS moved
  WHERE scopes IS NOT NULL;
  RETURN NULL;
END $$;

DROP FUNCTION log_scope_changes(text);
