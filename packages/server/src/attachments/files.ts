/**
 * What the attachment routes and hooks share: the backend, the journal, the options of each
 * bucket and collection, the metrics, and the one way a file goes — noted in the journal inside
 * the transaction that stops referencing it, deleted once that transaction has committed.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { UnitOfWork } from '../unit-of-work.js';
import type { FileBackend } from './backend.js';
import type { Journal, JournalFile } from './journal.js';
import type { AttachmentMetrics } from './metrics.js';
import type { AttachmentOptions } from './settings.js';
import type { AttachmentInfo } from './upload.js';

/** More files than this (a collection's, a bucket's) are deleted after the response, not before it. */
const DELETE_IN_BACKGROUND_ABOVE = 100;
const DELETE_CONCURRENCY = 8;

export class AttachmentFiles {
  readonly backend: FileBackend;
  readonly journal: Journal;
  readonly options: AttachmentOptions;
  readonly metrics: AttachmentMetrics;
  readonly #log: () => FastifyBaseLogger | undefined;
  /**
   * The attachment each unit of work is writing, by record URI: the one write allowed to set a
   * record's `attachment` (record-hooks.ts), as the original flags its own record updates.
   */
  readonly #writing = new WeakMap<UnitOfWork, Map<string, AttachmentInfo>>();

  constructor(
    backend: FileBackend,
    journal: Journal,
    options: AttachmentOptions,
    metrics: AttachmentMetrics,
    log: () => FastifyBaseLogger | undefined,
  ) {
    this.backend = backend;
    this.journal = journal;
    this.options = options;
    this.metrics = metrics;
    this.#log = log;
  }

  /** Runs `fn` with `attachment` allowed on the record at `uri` for writes of `work`. */
  async writing<T>(work: UnitOfWork, uri: string, attachment: AttachmentInfo | null, fn: () => Promise<T>): Promise<T> {
    let byUri = this.#writing.get(work);
    if (!byUri) {
      byUri = new Map();
      this.#writing.set(work, byUri);
    }
    if (attachment) byUri.set(uri, attachment);
    try {
      return await fn();
    } finally {
      byUri.delete(uri);
    }
  }

  /** The attachment `work` is writing on the record at `uri`, if any. */
  pending(work: UnitOfWork, uri: string): AttachmentInfo | undefined {
    return this.#writing.get(work)?.get(uri);
  }

  /**
   * Inside the transaction that stops referencing `files`: notes them in the journal (a crash
   * after commit leaves them to the sweeper), then deletes them once it has committed.
   */
  async dropAfterCommit(work: UnitOfWork, files: JournalFile[]): Promise<void> {
    if (files.length === 0) return;
    const intent = await this.journal.announce(files);
    work.afterCommit(async () => {
      const run = async () => {
        await this.deleteFiles(files.map((file) => file.location));
        await intent.done();
      };
      if (files.length <= DELETE_IN_BACKGROUND_ABOVE) return run();
      void run().catch((error: unknown) =>
        this.#log()?.warn({ err: error }, 'attachments: deleting files failed (the sweeper will finish)'),
      );
    });
  }

  /** Deletes files, a few at a time; a failure is left for the journal's sweeper. */
  async deleteFiles(locations: string[]): Promise<void> {
    let next = 0;
    let failure: unknown = null;
    const worker = async () => {
      while (next < locations.length) {
        const location = locations[next++] as string;
        try {
          await this.backend.delete(location);
          this.metrics.deleted();
        } catch (error) {
          this.metrics.failed('delete');
          failure = error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, locations.length) }, worker));
    if (failure) throw failure;
  }
}
