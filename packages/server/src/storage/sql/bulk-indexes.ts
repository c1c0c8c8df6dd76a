/**
 * While an import fills an EMPTY table, its indexes (primary key and unique constraints included)
 * are dropped, and built again once the rows are in, in the same transaction: one sorted build
 * per index instead of an index insert per row (PostgreSQL's own advice for bulk loads). The
 * statements come from the catalog, so that indexes added later (declared ones too) come back as
 * they were. A duplicate key then fails the build (23505), as it would have failed the insert.
 */
import type { SqlConnection } from './drivers/types.js';

/** The tables an import fills. */
export const LOADED_TABLES = ['objects', 'history', 'access_control_entries', 'group_members'];

/**
 * Drops the indexes of the loaded tables that are empty; returns the statements that build them
 * again, and whether every loaded table was empty.
 */
export async function dropIndexesOfEmptyTables(c: SqlConnection): Promise<{ rebuild: string[]; allEmpty: boolean }> {
  const empty: string[] = [];
  for (const table of LOADED_TABLES) {
    // A fixed list of our own tables: no user input in the text.
    const [row] = await c.query<{ found: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${table}) AS found`);
    if (!row?.found) empty.push(table);
  }
  const allEmpty = empty.length === LOADED_TABLES.length;
  if (empty.length === 0) return { rebuild: [], allEmpty };
  const indexes = await c.query<{ drop: string; create: string }>(
    `SELECT
       CASE WHEN con.oid IS NULL THEN format('DROP INDEX %I', i.relname)
            ELSE format('ALTER TABLE %I DROP CONSTRAINT %I', t.relname, con.conname) END AS drop,
       CASE WHEN con.oid IS NULL THEN pg_get_indexdef(i.oid)
            ELSE format('ALTER TABLE %I ADD CONSTRAINT %I %s', t.relname, con.conname, pg_get_constraintdef(con.oid))
       END
         AS create
     FROM pg_index x
     JOIN pg_class i ON i.oid = x.indexrelid
     JOIN pg_class t ON t.oid = x.indrelid
     LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.contype IN ('p', 'u')
     WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = ANY($1::text[])`,
    [empty],
  );
  for (const { drop } of indexes) await c.exec(drop);
  return { rebuild: indexes.map((index) => index.create), allEmpty };
}
