/**
 * The SQL store's import loader (bulk-import.ts opens its transaction): each batch of objects
 * goes into temporary staging tables with their lines — by COPY where the driver offers it
 * (PostgreSQL: one COPY per table and batch, the next batch read and checked while PostgreSQL
 * takes the previous one), else by one INSERT of a JSON array (PGlite). What needs the lines
 * before it is checked on the staged rows, set-based, at the end (bulk-checks.ts).
 */
import { type BulkLoader, type BulkObject, type BulkScope, ImportConflict, throwIfAborted } from '../bulk-import.js';
import { firstStagedConflict } from './bulk-checks.js';
import { CopyText, copyField as field } from './copy-text.js';
import type { BulkConnection, SqlConnection } from './drivers/types.js';

/** Items per COPY statement (each table's), when the import does not say (`BulkImportOptions.batchSize`). */
const DEFAULT_BATCH_SIZE = 5000;

/** What a tombstone keeps as data, as the store writes it (objects.ts). */
const TOMBSTONE_DATA = '{"deleted": true}';

/**
 * The staging tables: dropped when the import's transaction ends, never WAL-logged. A row of
 * `import_objects` has no `data` when the object went straight into its table (`direct`).
 */
export const STAGING_TABLES = `
  CREATE TEMP TABLE import_objects (
    line bigint NOT NULL, resource text NOT NULL, parent text COLLATE "C" NOT NULL, id text NOT NULL,
    last_modified bigint NOT NULL, deleted boolean NOT NULL, data jsonb, location text
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

/** Where each kind of COPY text goes: the staging tables, or (`direct`) the store's own. */
const TARGETS = {
  staged: {
    objects: 'COPY import_objects FROM STDIN',
    aces: 'COPY import_aces FROM STDIN',
    members: 'COPY import_members FROM STDIN',
    scopes: 'COPY import_scopes FROM STDIN',
  },
  direct: {
    objects: 'COPY import_objects FROM STDIN',
    stored: 'COPY objects (parent_id, resource_name, id, last_modified, data, deleted) FROM STDIN',
    history: 'COPY history (parent_id, resource_name, id, last_modified, data, deleted) FROM STDIN',
    aces: 'COPY access_control_entries (object_id, permission, principal) FROM STDIN',
    members: 'COPY group_members (group_uri, principal) FROM STDIN',
    scopes: 'COPY import_scopes FROM STDIN',
  },
} as const;

/** The rows of one batch as COPY text per target (TARGETS), or as values for the JSON fallback. */
class Batch {
  /** Objects and scopes added. */
  size = 0;
  readonly text: Record<string, CopyText> = {};
  readonly values: Record<'objects' | 'aces' | 'members' | 'scopes', unknown[]> = {
    objects: [],
    aces: [],
    members: [],
    scopes: [],
  };

  constructor(readonly mode: 'direct' | 'staged' | 'json') {}

  add(items: ReadonlyArray<BulkObject | BulkScope>): void {
    for (const item of items) {
      if ('timestamp' in item) this.#scope(item);
      else this.#object(item);
    }
    this.size += items.length;
  }

  #add(target: string, row: string): void {
    let text = this.text[target];
    if (!text) {
      text = new CopyText();
      this.text[target] = text;
    }
    text.write(row);
  }

  #scope({ line, resource, parent, timestamp, given }: BulkScope): void {
    if (this.mode === 'json') this.values.scopes.push({ line, resource, parent, timestamp, given });
    else this.#add('scopes', `${line}\t${resource}\t${field(parent)}\t${timestamp}\t${given ? 't' : 'f'}\n`);
  }

  #object(object: BulkObject): void {
    const { line, resource, parent, id, lastModified, deleted, uri, location } = object;
    const data = deleted ? TOMBSTONE_DATA : object.data;
    if (this.mode === 'json') {
      const row = {
        line,
        resource,
        parent,
        id,
        last_modified: lastModified,
        deleted,
        data: JSON.parse(data),
        location,
      };
      this.values.objects.push(row);
    } else {
      const key = `${field(parent)}\t${field(id)}\t${lastModified}\t${deleted ? 't' : 'f'}`;
      const place = location === null ? '\\N' : field(location);
      if (this.mode === 'direct') {
        this.#add(
          resource === 'history' ? 'history' : 'stored',
          `${field(parent)}\t${resource}\t${field(id)}\t${lastModified}\t${field(data)}\t${deleted ? 't' : 'f'}\n`,
        );
        this.#add('objects', `${line}\t${resource}\t${key}\t\\N\t${place}\n`);
      } else this.#add('objects', `${line}\t${resource}\t${key}\t${field(data)}\t${place}\n`);
    }
    if (uri && object.acl)
      for (const [permission, principals] of Object.entries(object.acl))
        for (const principal of principals) {
          if (this.mode === 'json') this.values.aces.push({ line, object_id: uri, permission, principal });
          else if (this.mode === 'direct')
            this.#add('aces', `${field(uri)}\t${field(permission)}\t${field(principal)}\n`);
          else this.#add('aces', `${line}\t${field(uri)}\t${field(permission)}\t${field(principal)}\n`);
        }
    if (uri && object.members)
      for (const principal of object.members) {
        if (this.mode === 'json') this.values.members.push({ line, group_uri: uri, principal });
        else if (this.mode === 'direct') this.#add('members', `${field(uri)}\t${field(principal)}\n`);
        else this.#add('members', `${line}\t${field(uri)}\t${field(principal)}\n`);
      }
  }
}

export class SqlBulkLoader implements BulkLoader {
  readonly #c: SqlConnection & Partial<Pick<BulkConnection, 'copyFrom'>>;
  readonly #signal: AbortSignal | undefined;
  readonly #replace: boolean;
  readonly #mode: 'direct' | 'staged' | 'json';
  readonly #batchSize: number;
  /** The batch being filled: sent once it holds `batchSize` items. */
  #open: Batch | null = null;
  /** The batch PostgreSQL is taking (one at a time, so that memory holds two at most). */
  #writing: Promise<void> = Promise.resolve();
  /** Live attachment index entries staged (their files are checked at the end). */
  files = 0;

  /**
   * `direct`: the objects, ACLs and members go straight into the store's tables (COPY), only their
   * keys into `import_objects` for the checks: for an import into empty tables, whose indexes are
   * built at the end, without `replace` (nothing to leave out then).
   */
  constructor(
    connection: SqlConnection & Partial<Pick<BulkConnection, 'copyFrom'>>,
    options: { replace: boolean; direct: boolean; batchSize?: number | undefined; signal?: AbortSignal | undefined },
  ) {
    this.#c = connection;
    this.#batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
    this.#replace = options.replace;
    this.#signal = options.signal;
    this.#mode = !connection.copyFrom ? 'json' : options.direct ? 'direct' : 'staged';
  }

  /** Whether the objects are in their tables already (else bulk-import.ts moves them there). */
  get direct(): boolean {
    return this.#mode === 'direct';
  }

  /** Encodes the items at once (the lines' parsed values die young); sends them a batch at a time. */
  async add(items: ReadonlyArray<BulkObject | BulkScope>): Promise<void> {
    throwIfAborted(this.#signal);
    this.#open ??= new Batch(this.#mode);
    this.#open.add(items);
    for (const item of items) if (!('timestamp' in item) && item.location !== null) this.files++;
    if (this.#open.size >= this.#batchSize) await this.#send();
  }

  /** Sends the open batch once the previous one is taken. */
  async #send(): Promise<void> {
    const batch = this.#open;
    if (!batch) return;
    this.#open = null;
    await this.#writing;
    this.#writing = this.#write(batch);
    this.#writing.catch(() => undefined); // awaited by the next call
  }

  async #write(batch: Batch): Promise<void> {
    const c = this.#c;
    if (batch.mode === 'json') {
      for (const table of ['objects', 'aces', 'members', 'scopes'] as const)
        if (batch.values[table].length)
          await c.query(
            `INSERT INTO import_${table} SELECT * FROM jsonb_populate_recordset(NULL::import_${table}, $1::jsonb)`,
            [JSON.stringify(batch.values[table])],
          );
      return;
    }
    const targets: Record<string, string> = TARGETS[batch.mode];
    for (const [target, statement] of Object.entries(targets))
      if (batch.text[target]) await c.copyFrom!(statement, batch.text[target].chunks());
  }

  /** Sends what is held, and waits for it to be staged. */
  async staged(): Promise<void> {
    await this.#send();
    await this.#writing;
  }

  async check(): Promise<void> {
    await this.staged();
    const conflict = await firstStagedConflict(this.#c, { replace: this.#replace, files: this.files > 0, keys: true });
    if (conflict) throw new ImportConflict(conflict);
  }
}
