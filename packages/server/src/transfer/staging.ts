/**
 * The lines of an import, checked against each other before anything is written (import.ts,
 * first pass): kept in a temporary SQLite file with what finds a parent that is missing or
 * deleted, an object given twice and a timestamp two objects of a scope share. On disk, so
 * memory stays bounded whatever the size of the import, and the input — standard input too —
 * is read once. The file is deleted by `close()`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { HISTORY_RESOURCE } from '../storage/types.js';
import type { Line } from './format.js';
import { ImportError, isTombstone } from './validate.js';

/** Buckets and collections: what other objects live under. */
const CONTAINERS: Readonly<Record<string, string>> = { bucket: 'buckets', collection: 'collections' };

export interface StagedLine {
  number: number;
  line: Line;
}

export class Staging {
  readonly #db: Database.Database;
  readonly #dir: string;
  readonly #statements: Record<string, Database.Statement>;
  #count = 0;

  private constructor(db: Database.Database, dir: string) {
    this.#db = db;
    this.#dir = dir;
    // A scratch file: nothing to keep should the process die.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.exec(`
      CREATE TABLE lines (number INTEGER PRIMARY KEY, text TEXT NOT NULL);
      CREATE TABLE objects (resource TEXT, parent TEXT, id TEXT, last_modified INTEGER, number INTEGER, PRIMARY KEY (resource, parent, id)) WITHOUT ROWID;
      CREATE INDEX objects_parent ON objects (parent);
      CREATE TABLE stamps (resource TEXT, parent TEXT, last_modified INTEGER, id TEXT, number INTEGER, PRIMARY KEY (resource, parent, last_modified)) WITHOUT ROWID;
      CREATE TABLE containers (uri TEXT PRIMARY KEY, live INTEGER) WITHOUT ROWID;
    `);
    const sql = {
      addLine: 'INSERT INTO lines (number, text) VALUES (?, ?)',
      dropLine: 'DELETE FROM lines WHERE number = ?',
      object: 'SELECT last_modified, number FROM objects WHERE resource = ? AND parent = ? AND id = ?',
      putObject: 'INSERT OR REPLACE INTO objects (resource, parent, id, last_modified, number) VALUES (?, ?, ?, ?, ?)',
      stamp: 'SELECT id, number FROM stamps WHERE resource = ? AND parent = ? AND last_modified = ?',
      putStamp: 'INSERT OR REPLACE INTO stamps (resource, parent, last_modified, id, number) VALUES (?, ?, ?, ?, ?)',
      dropStamp: 'DELETE FROM stamps WHERE resource = ? AND parent = ? AND last_modified = ?',
      container: 'SELECT live FROM containers WHERE uri = ?',
      putContainer: 'INSERT OR REPLACE INTO containers (uri, live) VALUES (?, ?)',
      below: 'SELECT number FROM objects WHERE parent = ? OR (parent >= ? AND parent < ?) LIMIT 1',
      page: 'SELECT number, text FROM lines WHERE number > ? ORDER BY number LIMIT ?',
      emptyCollections: `SELECT uri FROM containers WHERE live = 1 AND uri > ? AND uri LIKE '/buckets/%/collections/%'
        AND NOT EXISTS (SELECT 1 FROM objects WHERE resource = 'record' AND parent = containers.uri) ORDER BY uri LIMIT ?`,
    };
    this.#statements = Object.fromEntries(Object.entries(sql).map(([name, text]) => [name, db.prepare(text)]));
    db.exec('BEGIN');
  }

  static async open(parentDir = tmpdir()): Promise<Staging> {
    const dir = await mkdtemp(join(parentDir, 'quire-import-'));
    return new Staging(new Database(join(dir, 'staging.sqlite')), dir);
  }

  /** Lines staged (after replacements). */
  get count(): number {
    return this.#count;
  }

  /**
   * Stages a line checked on its own (validate.ts), or refuses it: its parent must be a bucket or
   * collection given before and not deleted; an object given again is refused unless `replace`
   * (the later line then replaces the earlier one); two objects of a scope never share a timestamp.
   */
  add(line: Line, text: string, number: number, replace: boolean): void {
    const s = this.#statements;
    const refuse = (reason: string): never => {
      throw new ImportError(`line ${number}: ${reason}`);
    };
    const [resource, parent] =
      'scope' in line ? [line.scope.resource, line.scope.parent] : [line.resource, line.parent];
    if (parent !== '') {
      const container = s.container!.get(parent) as { live: number } | undefined;
      if (!container)
        refuse(
          `its parent ${parent} is not in the import (parents come before their children, as quire export writes them)`,
        );
      if (!container!.live) refuse(`its parent ${parent} is deleted`);
    }
    if ('scope' in line) {
      s.addLine!.run(number, text);
      this.#count++;
      return;
    }
    const { id, last_modified: lastModified } = line.object;
    const history = resource === HISTORY_RESOURCE;
    // History entries are keyed by timestamp: a repeated one is the same entry given again.
    const previous = history
      ? undefined
      : (s.object!.get(resource, parent, id) as { last_modified: number; number: number } | undefined);
    const sameStamp = s.stamp!.get(resource, parent, lastModified) as { id: string; number: number } | undefined;
    const repeated = previous ?? (history ? sameStamp : undefined);
    if (repeated) {
      const what = history ? `history entry ${lastModified}` : `${resource} ${JSON.stringify(id)}`;
      if (!replace)
        refuse(
          `${what}${parent ? ` under ${parent}` : ''} was already given on line ${repeated.number} (pass --replace to let the later line win)`,
        );
      s.dropLine!.run(repeated.number);
      if (previous) s.dropStamp!.run(resource, parent, previous.last_modified);
      this.#count--;
    }
    const clash = s.stamp!.get(resource, parent, lastModified) as { id: string; number: number } | undefined;
    if (clash && !history)
      refuse(
        `last_modified ${lastModified} is already that of ${resource} ${JSON.stringify(clash.id)} (line ${clash.number}): timestamps are unique in a scope`,
      );
    const plural = CONTAINERS[resource];
    if (plural) {
      const uri = `${parent}/${plural}/${id}`;
      const live = !isTombstone(line.object);
      if (!live && previous) {
        const child = s.below!.get(uri, `${uri}/`, `${uri}0`) as { number: number } | undefined;
        if (child)
          refuse(`${resource} ${JSON.stringify(id)} is deleted here, but line ${child.number} put an object under it`);
      }
      s.putContainer!.run(uri, live ? 1 : 0);
    }
    s.addLine!.run(number, text);
    if (!history) s.putObject!.run(resource, parent, id, lastModified, number);
    s.putStamp!.run(resource, parent, lastModified, id, number);
    this.#count++;
  }

  /** The staged lines in input order, `size` at a time. */
  *batches(size: number): Generator<StagedLine[]> {
    for (let after = 0; ; ) {
      const rows = this.#statements.page!.all(after, size) as Array<{ number: number; text: string }>;
      if (rows.length === 0) return;
      after = rows.at(-1)!.number;
      yield rows.map((row) => ({ number: row.number, line: JSON.parse(row.text) as Line }));
    }
  }

  /** The live collections given without records, `size` URIs at a time. */
  *emptyCollections(size: number): Generator<string[]> {
    for (let after = ''; ; ) {
      const uris = (this.#statements.emptyCollections!.all(after, size) as Array<{ uri: string }>).map(
        (row) => row.uri,
      );
      if (uris.length === 0) return;
      after = uris.at(-1)!;
      yield uris;
    }
  }

  async close(): Promise<void> {
    if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
    this.#db.close();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
