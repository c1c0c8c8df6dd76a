/**
 * Files and records change together, though no transaction spans a database and a file store.
 * Every change that may leave a file no record holds is announced first, in the file backend
 * itself (a note under `.quire/notes/intents/`, where every process sharing the files sees
 * it), and the note is removed once the change is complete:
 *
 * - an upload notes its new location before the first byte is stored (and renews the note while
 *   it streams); the note goes once the record holds the file, or once the file is removed
 *   after a failure;
 * - a replacement, a detachment or a deletion (record, collection, bucket) notes the old
 *   locations in its transaction, before commit; after commit the files are deleted, then the
 *   note.
 *
 * A crash between the steps leaves a note. The sweeper takes notes older than the grace period
 * and settles each file by the index (file-index.ts), as committed: a file the index gives to
 * its record is kept, any other is deleted. So no client ever sees a record without its file
 * (files are stored before the record names them, deleted after it stops), and no file outlives
 * its record for longer than the grace period plus a sweep.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Storage } from '../storage/types.js';
import type { FileBackend } from './backend.js';
import { readIndex } from './file-index.js';
import { isFileLocation } from './names.js';

const PREFIX = 'intents/';
/** Files per note: a bucket's deletion writes as many notes as it needs. */
const FILES_PER_NOTE = 1000;

/** A file and the record that may hold it (`collection` is the collection's URI). */
export interface JournalFile {
  location: string;
  collection: string;
  record: string;
}

interface Note {
  files: JournalFile[];
  written: number;
}

function isJournalFile(value: unknown): value is JournalFile {
  const file = value as JournalFile;
  return typeof file?.location === 'string' && typeof file.collection === 'string' && typeof file.record === 'string';
}

export interface JournalOptions {
  graceMs: number;
  log: () => FastifyBaseLogger | undefined;
  /** Where this server's files are (the folders' fixed beginnings): incomplete uploads are swept there. */
  uploadPrefixes?: string[];
}

/** One note: renew it while the work goes on, remove it when the work is done. */
export class Intent {
  readonly keys: string[];
  readonly #journal: Journal;
  #done = false;

  constructor(journal: Journal, keys: string[]) {
    this.#journal = journal;
    this.keys = keys;
  }

  /** Rewrites the notes: the sweeper sees work under way as fresh. */
  async renew(files: JournalFile[]): Promise<void> {
    if (this.#done) return;
    await this.#journal.writeNotes(this.keys, files);
  }

  async done(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await Promise.all(this.keys.map((key) => this.#journal.backend.deleteNote(key)));
  }
}

export class Journal {
  readonly backend: FileBackend;
  readonly #storage: Storage;
  readonly #options: JournalOptions;

  constructor(backend: FileBackend, storage: Storage, options: JournalOptions) {
    this.backend = backend;
    this.#storage = storage;
    this.#options = options;
  }

  /** Notes `files` (before the change that may orphan them). */
  async announce(files: JournalFile[]): Promise<Intent> {
    const keys: string[] = [];
    for (let start = 0; start < Math.max(files.length, 1); start += FILES_PER_NOTE) {
      keys.push(`${PREFIX}${Date.now().toString(36)}-${randomUUID()}`);
    }
    await this.writeNotes(keys, files);
    return new Intent(this, keys);
  }

  async writeNotes(keys: string[], files: JournalFile[]): Promise<void> {
    await Promise.all(
      keys.map((key, index) =>
        this.backend.putNote(key, {
          files: files.slice(index * FILES_PER_NOTE, (index + 1) * FILES_PER_NOTE),
          written: Date.now(),
        } satisfies Note),
      ),
    );
  }

  /** Deletes the files no record holds (the index, as committed, says), then the note. */
  async settle(files: JournalFile[]): Promise<number> {
    let deleted = 0;
    for (const file of files) {
      if (!isFileLocation(file.location)) continue;
      const held = await this.#storage.read((session) => readIndex(session.objects, file.collection, file.record));
      if (held?.location === file.location) continue;
      await this.backend.delete(file.location);
      deleted += 1;
    }
    return deleted;
  }

  /**
   * Settles every note older than the grace period (interrupted work), after the backend's own
   * leftovers (temporary files). Returns the files deleted. Several processes may sweep at once:
   * settling is idempotent.
   */
  async sweep(now = Date.now()): Promise<number> {
    let deleted = (await this.backend.sweepTemporary?.(this.#options.graceMs, now)) ?? 0;
    /** Locations of work under way (fresh notes): their incomplete uploads are not stale. */
    const busy = new Set<string>();
    for await (const { key, modified } of this.backend.listNotes(PREFIX)) {
      if (now - modified < this.#options.graceMs && !this.backend.abortStaleUploads) continue;
      const note = (await this.backend.getNote(key)) as Note | null;
      if (note === null) continue; // settled meanwhile by another process
      const files = Array.isArray(note.files) ? note.files.filter(isJournalFile) : [];
      if (now - modified < this.#options.graceMs || now - (Number(note.written) || 0) < this.#options.graceMs) {
        for (const file of files) busy.add(file.location);
        continue;
      }
      const removed = await this.settle(files);
      await this.backend.deleteNote(key);
      deleted += removed;
      this.#options
        .log()
        ?.info({ note: key, files: files.length, deleted: removed }, 'attachments: settled an interrupted change');
    }
    await this.#abortStaleUploads(busy, now);
    return deleted;
  }

  #unlisted = false;

  async #abortStaleUploads(busy: Set<string>, now: number): Promise<void> {
    if (!this.backend.abortStaleUploads || this.#unlisted) return;
    const prefixes = this.#options.uploadPrefixes ?? [''];
    const aborted = await this.backend.abortStaleUploads(this.#options.graceMs, prefixes, busy, now);
    if (aborted === null) {
      this.#unlisted = true;
      this.#options
        .log()
        ?.warn(
          'attachments: this S3 service cannot list multipart uploads (ListMultipartUploads): the sweeper ' +
            'cannot abort those a stopped process left; set a lifecycle rule on the bucket for them',
        );
    } else if (aborted > 0) {
      this.#options.log()?.info({ aborted }, 'attachments: aborted stale incomplete multipart uploads');
    }
  }
}

/** Runs `journal.sweep()` every `intervalMs` (not overlapping itself) until stopped. */
export function startSweeper(
  journal: Journal,
  intervalMs: number,
  log: () => FastifyBaseLogger | undefined,
): () => Promise<void> {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = journal
      .sweep()
      .then(() => undefined)
      .catch((error: unknown) => log()?.warn({ err: error }, 'attachments: sweep failed'))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
