/**
 * The SQL store's import loader (bulk-import.ts opens its transaction): each batch of objects
 * goes into temporary staging tables with their lines — by COPY where the driver offers it
 * (PostgreSQL: one COPY per table and batch, the next batch read and checked while PostgreSQL
 * takes the previous one), else by one INSERT of a JSON array (PGlite). What needs the lines
 * before it is checked on the staged rows, set-based, at the end (bulk-checks.ts).
 */
import { type BulkLoader, type BulkObject, type BulkScope, ImportConflict, throwIfAborted } from '../bulk-import.js';
import { firstStagedConflict } from './bulk-checks.js';
import type { BulkConnection, SqlConnection } from './drivers/types.js';

/** What a tombstone keeps as data, as the store writes it (objects.ts). */
const TOMBSTONE_DATA = '{"deleted": true}';

/** The staging tables: dropped when the import's transaction ends, never WAL-logged. */
export const STAGING_TABLES = `
  CREATE TEMP TABLE import_objects (
    line bigint NOT NULL, resource text NOT NULL, parent text COLLATE "C" NOT NULL, id text NOT NULL,
    last_modified bigint NOT NULL, deleted boolean NOT NULL, data jsonb NOT NULL
  ) ON COMMIT DROP;
  CREATE TEMP TABLE import_aces (
    line bigint NOT NULL, object_id text COLLATE "C" NOT NULL, permission text NOT NULL, principal text NOT NULL
  ) ON COMMIT DROP;
  CREATE TEMP TABLE import_members (line bigint NOT NULL, group_uri text COLLATE "C" NOT NULL, principal text NOT NULL)
    ON COMMIT DROP;
  CREATE TEMP TABLE import_scopes (
    line bigint NOT NULL, resource text NOT NULL, parent text COLLATE "C" NOT NULL, timestamp bigint NOT NULL,
    given boolean NOT NULL
  ) ON COMMIT DROP;`;

/** A field in COPY's text format: backslash, tab, newline and carriage return escaped. */
function field(value: string): string {
  return /[\\\t\n\r]/.test(value)
    ? value.replace(/[\\\t\n\r]/g, (char) =>
        char === '\\' ? '\\\\' : char === '\t' ? '\\t' : char === '\n' ? '\\n' : '\\r',
      )
    : value;
}

/** The rows of one batch, per staging table, as COPY text and as values (for the JSON fallback). */
class Batch {
  objects = '';
  aces = '';
  members = '';
  scopes = '';
  readonly values: Record<'objects' | 'aces' | 'members' | 'scopes', unknown[]> = {
    objects: [],
    aces: [],
    members: [],
    scopes: [],
  };

  constructor(
    items: ReadonlyArray<BulkObject | BulkScope>,
    readonly copy: boolean,
  ) {
    for (const item of items) {
      if ('timestamp' in item) this.#scope(item);
      else this.#object(item);
    }
  }

  #scope({ line, resource, parent, timestamp, given }: BulkScope): void {
    if (this.copy) this.scopes += `${line}\t${resource}\t${field(parent)}\t${timestamp}\t${given ? 't' : 'f'}\n`;
    else this.values.scopes.push({ line, resource, parent, timestamp, given });
  }

  #object(object: BulkObject): void {
    const { line, resource, parent, id, lastModified, deleted, uri } = object;
    const data = deleted ? TOMBSTONE_DATA : object.data;
    if (this.copy)
      this.objects +=
        `${line}\t${resource}\t${field(parent)}\t${field(id)}\t${lastModified}\t` +
        `${deleted ? 't' : 'f'}\t${field(data)}\n`;
    else
      this.values.objects.push({
        line,
        resource,
        parent,
        id,
        last_modified: lastModified,
        deleted,
        data: JSON.parse(data),
      });
    if (uri && object.acl)
      for (const [permission, principals] of Object.entries(object.acl))
        for (const principal of principals) {
          if (this.copy) this.aces += `${line}\t${field(uri)}\t${field(permission)}\t${field(principal)}\n`;
          else this.values.aces.push({ line, object_id: uri, permission, principal });
        }
    if (uri && object.members)
      for (const principal of object.members) {
        if (this.copy) this.members += `${line}\t${field(uri)}\t${field(principal)}\n`;
        else this.values.members.push({ line, group_uri: uri, principal });
      }
  }
}

export class SqlBulkLoader implements BulkLoader {
  readonly #c: SqlConnection & Partial<Pick<BulkConnection, 'copyFrom'>>;
  readonly #signal: AbortSignal | undefined;
  readonly #replace: boolean;
  /** The batch PostgreSQL is taking (one at a time, so that memory holds two at most). */
  #writing: Promise<void> = Promise.resolve();
  /** Live attachment index entries staged (their files are checked at the end). */
  files = 0;

  constructor(
    connection: SqlConnection & Partial<Pick<BulkConnection, 'copyFrom'>>,
    replace: boolean,
    signal?: AbortSignal,
  ) {
    this.#c = connection;
    this.#replace = replace;
    this.#signal = signal;
  }

  async add(items: ReadonlyArray<BulkObject | BulkScope>): Promise<void> {
    throwIfAborted(this.#signal);
    const batch = new Batch(items, this.#c.copyFrom !== undefined);
    for (const item of items) if (!('timestamp' in item) && item.location !== null) this.files++;
    await this.#writing;
    this.#writing = this.#write(batch);
    this.#writing.catch(() => undefined); // awaited by the next call
  }

  async #write(batch: Batch): Promise<void> {
    const c = this.#c;
    for (const table of ['objects', 'aces', 'members', 'scopes'] as const) {
      if (c.copyFrom) {
        if (batch[table]) await c.copyFrom(`COPY import_${table} FROM STDIN`, batch[table]);
      } else if (batch.values[table].length) {
        await c.query(
          `INSERT INTO import_${table} SELECT * FROM jsonb_populate_recordset(NULL::import_${table}, $1::jsonb)`,
          [JSON.stringify(batch.values[table])],
        );
      }
    }
  }

  /** Waits for what is being staged. */
  async staged(): Promise<void> {
    await this.#writing;
  }

  async check(): Promise<void> {
    await this.staged();
    const conflict = await firstStagedConflict(this.#c, { replace: this.#replace, files: this.files > 0, keys: true });
    if (conflict) throw new ImportConflict(conflict);
  }
}
