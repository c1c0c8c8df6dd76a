/**
 * What an import's lines must satisfy against the lines before them, checked set-based on the
 * staged rows (bulk-loader.ts), each check giving its first offending line — so that the import
 * is refused at the lowest one, as if the lines had been checked one by one in order:
 * - a parent (bucket or collection) given before its children and, at each child, live;
 * - no object given twice (history entries: no timestamp twice), unless `replace`;
 * - no timestamp held by another object of the scope at that line (a replaced one frees its own);
 * - (`replace`) a container given again as deleted has nothing under it yet;
 * - no file named by two index entries that stay.
 */
import { type Conflict, firstConflict } from '../bulk-import.js';
import type { SqlConnection } from './drivers/types.js';

/** The containers' versions in the import: their URI, line and whether deleted. */
const CONTAINERS = `containers AS MATERIALIZED (
  SELECT (CASE WHEN resource = 'bucket' THEN '/buckets/' || id ELSE parent || '/collections/' || id END)
      COLLATE "C" AS uri,
    line, deleted, resource, id
  FROM import_objects WHERE resource IN ('bucket', 'collection'))`;

/** Objects (and scope lines) with a parent, and their line. */
const CHILDREN = `SELECT parent, line FROM import_objects WHERE parent <> ''
  UNION ALL SELECT parent, line FROM import_scopes WHERE given AND parent <> ''`;

export interface CheckOptions {
  replace: boolean;
  /** Whether any live index entry was staged (else the files need no look). */
  files: boolean;
  /** Also the checks the tables' unique keys make anyway (objects given twice, timestamps): when they failed. */
  keys: boolean;
}

async function parents(c: SqlConnection): Promise<Conflict | null> {
  // Per parent, its first child against the latest version of the container before it.
  const [row] = await c.query<{ parent: string; line: number; deleted: boolean | null }>(
    `WITH ${CONTAINERS},
     firsts AS (SELECT parent, min(line) AS line FROM (${CHILDREN}) AS children GROUP BY parent),
     latest AS (
       SELECT DISTINCT ON (f.parent) f.parent, f.line, c.deleted
       FROM firsts f LEFT JOIN containers c ON c.uri = f.parent AND c.line < f.line
       ORDER BY f.parent, c.line DESC NULLS LAST)
     SELECT parent, line, deleted FROM latest WHERE deleted IS NOT FALSE ORDER BY line LIMIT 1`,
  );
  return row ? parentConflict(row) : null;
}

function parentConflict(row: { parent: string; line: number; deleted: boolean | null }): Conflict {
  return row.deleted === null
    ? { kind: 'parent-missing', line: Number(row.line), parent: row.parent }
    : { kind: 'parent-deleted', line: Number(row.line), parent: row.parent };
}

/** Containers given more than once (`replace`): every child against the version before it, and tombstones. */
async function versions(c: SqlConnection): Promise<Array<Conflict | null>> {
  const [child] = await c.query<{ parent: string; line: number; deleted: boolean | null }>(
    `WITH ${CONTAINERS},
     multi AS (SELECT uri FROM containers GROUP BY uri HAVING count(*) > 1),
     per_child AS (
       SELECT DISTINCT ON (ch.line) ch.parent, ch.line, c.deleted
       FROM (${CHILDREN}) AS ch LEFT JOIN containers c ON c.uri = ch.parent AND c.line < ch.line
       WHERE ch.parent IN (SELECT uri FROM multi)
       ORDER BY ch.line, c.line DESC NULLS LAST)
     SELECT parent, line, deleted FROM per_child WHERE deleted IS NOT FALSE ORDER BY line LIMIT 1`,
  );
  const [tombstone] = await c.query<{ line: number; child: number; resource: string; id: string }>(
    `WITH ${CONTAINERS},
     tombstones AS (
       SELECT t.line, t.resource, t.id, (
           SELECT min(o.line) FROM import_objects o
           WHERE (o.parent = t.uri OR left(o.parent, length(t.uri) + 1) = t.uri || '/') AND o.line < t.line) AS child
       FROM containers t
       WHERE t.deleted AND EXISTS (SELECT 1 FROM containers e WHERE e.uri = t.uri AND e.line < t.line))
     SELECT line, child, resource, id FROM tombstones WHERE child IS NOT NULL ORDER BY line LIMIT 1`,
  );
  return [
    child ? parentConflict(child) : null,
    tombstone
      ? {
          kind: 'deleted-with-children',
          line: Number(tombstone.line),
          child: Number(tombstone.child),
          resource: tombstone.resource,
          id: tombstone.id,
        }
      : null,
  ];
}

async function repeated(c: SqlConnection): Promise<Conflict | null> {
  const [row] = await c.query<{
    line: number;
    earlier: number;
    resource: string;
    parent: string;
    id: string;
    last_modified: number;
  }>(
    `SELECT line, earlier, resource, parent, id, last_modified FROM (
       SELECT line, resource, parent, id, last_modified, lag(line) OVER (
         PARTITION BY resource, parent, CASE WHEN resource = 'history' THEN last_modified::text ELSE id END
         ORDER BY line) AS earlier
       FROM import_objects) AS s
     WHERE earlier IS NOT NULL ORDER BY line LIMIT 1`,
  );
  return row
    ? {
        kind: 'repeated',
        line: Number(row.line),
        earlier: Number(row.earlier),
        resource: row.resource,
        parent: row.parent,
        id: row.id,
        stamp: Number(row.last_modified),
      }
    : null;
}

async function timestamps(c: SqlConnection): Promise<Conflict | null> {
  // The object before in the timestamp's order holds it still at this line unless replaced before it.
  const [row] = await c.query<{ line: number; earlier: number; resource: string; last_modified: number; id: string }>(
    `WITH k AS (
       SELECT line, resource, parent, id, last_modified,
         lead(line) OVER (PARTITION BY resource, parent, id ORDER BY line) AS replaced_at
       FROM import_objects WHERE resource <> 'history'),
     s AS (
       SELECT line, resource, last_modified, lag(line) OVER w AS earlier,
         lag(replaced_at) OVER w AS earlier_replaced_at,
         lag(id) OVER w AS earlier_id
       FROM k WINDOW w AS (PARTITION BY resource, parent, last_modified ORDER BY line))
     SELECT line, earlier, resource, last_modified, earlier_id AS id FROM s
     WHERE earlier IS NOT NULL AND (earlier_replaced_at IS NULL OR earlier_replaced_at > line)
     ORDER BY line LIMIT 1`,
  );
  return row
    ? {
        kind: 'timestamp-taken',
        line: Number(row.line),
        earlier: Number(row.earlier),
        resource: row.resource,
        lastModified: Number(row.last_modified),
        id: row.id,
      }
    : null;
}

async function files(c: SqlConnection): Promise<Conflict | null> {
  const [row] = await c.query<{ line: number; earlier: number; location: string }>(
    `WITH k AS (
       SELECT line, location, deleted,
         lead(line) OVER (PARTITION BY parent, id ORDER BY line) AS replaced_at
       FROM import_objects WHERE resource = 'attachment'),
     s AS (
       SELECT line, location, lag(line) OVER (PARTITION BY location ORDER BY line) AS earlier
       FROM k WHERE NOT deleted AND replaced_at IS NULL)
     SELECT line, earlier, location FROM s WHERE earlier IS NOT NULL ORDER BY line LIMIT 1`,
  );
  return row
    ? { kind: 'file-taken', line: Number(row.line), earlier: Number(row.earlier), location: row.location }
    : null;
}

/** The conflict of the lowest line among the staged rows, or null. */
export async function firstStagedConflict(c: SqlConnection, options: CheckOptions): Promise<Conflict | null> {
  const found: Array<Conflict | null> = [await parents(c)];
  if (options.files) found.push(await files(c));
  if (options.replace) found.push(...(await versions(c)));
  if (options.keys) {
    if (!options.replace) found.push(await repeated(c));
    found.push(await timestamps(c));
  }
  return firstConflict(found);
}
