/**
 * Files in a local directory (the default, and the natural choice with the embedded store: no
 * setup). A file is written to `.quire/tmp/` first and renamed into place once complete — a
 * rename within one file system is atomic — so a location holds a whole file or nothing, and
 * an interrupted write leaves only a temporary file, removed at once (or, after a crash, by the
 * sweeper once it is older than the grace period: processes may share the directory).
 * Notes (intents.ts) live in `.quire/notes/`, written the same way.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ByteRange, type FileBackend, probe, type StoredFileInfo, type WriteOptions } from './backend.js';
import { servedTypeOf } from './media-types.js';
import { isFileLocation } from './names.js';

const RESERVED = '.quire';
const NOTE_KEY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export class LocalFileBackend implements FileBackend {
  readonly name = 'local';
  readonly root: string;
  readonly #tmp: string;
  readonly #notes: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.#tmp = join(this.root, RESERVED, 'tmp');
    this.#notes = join(this.root, RESERVED, 'notes');
  }

  /** Creates the directories. */
  async open(): Promise<this> {
    await mkdir(this.#tmp, { recursive: true });
    await mkdir(this.#notes, { recursive: true });
    return this;
  }

  /**
   * Removes temporary files untouched for `olderThanMs`: writes a stopped process left (a write
   * under way appends, so its file stays fresh; other processes may share the directory).
   */
  async sweepTemporary(olderThanMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.#tmp).catch(() => [] as string[])) {
      const path = join(this.#tmp, name);
      const info = await stat(path).catch(() => null);
      if (info && now - info.mtimeMs >= olderThanMs) {
        await rm(path, { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  /** The absolute path of a location; throws for anything but a location this server writes. */
  pathOf(location: string): string {
    if (!isFileLocation(location)) throw new Error(`not a file location: ${JSON.stringify(location)}`);
    const path = join(this.root, ...location.split('/'));
    if (!path.startsWith(this.root + sep))
      throw new Error(`location outside the base path: ${JSON.stringify(location)}`);
    return path;
  }

  async write(location: string, body: Readable, options: WriteOptions): Promise<void> {
    const target = this.pathOf(location);
    const temporary = join(this.#tmp, `${randomUUID()}.part`);
    try {
      await pipeline(body, createWriteStream(temporary, { flags: 'wx' }), { signal: options.signal });
      await mkdir(dirname(target), { recursive: true });
      await rename(temporary, target);
    } catch (error) {
      await unlink(temporary).catch(() => {});
      throw error;
    }
  }

  async delete(location: string): Promise<void> {
    await unlink(this.pathOf(location)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  async stat(location: string): Promise<StoredFileInfo | null> {
    try {
      const info = await stat(this.pathOf(location));
      if (!info.isFile()) return null;
      return { size: info.size, modified: info.mtimeMs, contentType: servedTypeOf(location), etag: null };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async read(location: string, range?: ByteRange): Promise<Readable | null> {
    if (!(await this.stat(location))) return null;
    return createReadStream(this.pathOf(location), range ? { start: range.start, end: range.end } : {});
  }

  #notePath(key: string): string {
    if (!key.split('/').every((segment) => NOTE_KEY.test(segment)))
      throw new Error(`not a note key: ${JSON.stringify(key)}`);
    return join(this.#notes, ...key.split('/'));
  }

  async putNote(key: string, value: unknown): Promise<void> {
    const path = this.#notePath(key);
    const temporary = join(this.#tmp, `${randomUUID()}.note`);
    await writeFile(temporary, JSON.stringify(value));
    await mkdir(dirname(path), { recursive: true });
    await rename(temporary, path);
  }

  async getNote(key: string): Promise<unknown> {
    try {
      return JSON.parse(await readFile(this.#notePath(key), 'utf8')) as unknown;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async deleteNote(key: string): Promise<void> {
    await unlink(this.#notePath(key)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  async *listNotes(prefix: string): AsyncIterable<{ key: string; modified: number }> {
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const start = prefix.slice(folder ? folder.length + 1 : 0);
    let names: string[];
    try {
      names = await readdir(folder ? this.#notePath(folder) : this.#notes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const name of names.sort()) {
      if (!name.startsWith(start)) continue;
      const key = folder ? `${folder}/${name}` : name;
      const info = await stat(this.#notePath(key)).catch(() => null);
      if (info?.isFile()) yield { key, modified: info.mtimeMs };
    }
  }

  ping(): Promise<boolean> {
    return probe(this);
  }

  async close(): Promise<void> {}
}
