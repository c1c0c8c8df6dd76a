/**
 * Where files are kept: a `FileBackend` stores a stream under a location, atomically (a file is
 * either all there or absent: a failed or abandoned write leaves nothing), deletes, reads, and
 * keeps small JSON notes under its reserved `.quire/` prefix (the journal of intents.ts, which
 * must live where the files do, for every process that shares them).
 *
 * Two backends: a local directory (local-backend.ts) and S3-compatible object storage
 * (s3-backend.ts). A new one implements this interface and passes `describeFileBackend`
 * (backend-suite.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';

export interface WriteOptions {
  contentType: string;
  /** `Content-Disposition` served with the file, where the backend stores headers (S3). */
  disposition: string;
  /** Stops the write (the client went away, a limit was passed): nothing is kept. */
  signal: AbortSignal;
}

export interface StoredFileInfo {
  size: number;
  /** Modification time, ms. */
  modified: number;
  contentType: string | null;
  /** The backend's own validator (S3's ETag), if any. */
  etag: string | null;
}

/** A byte range, both ends included (HTTP's). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface FileBackend {
  /** `local` or `s3`: for the heartbeat, metrics and logs. */
  readonly name: string;
  /** Stores `body` at `location`, all or nothing: aborting `signal` or a failing body leaves nothing. */
  write(location: string, body: Readable, options: WriteOptions): Promise<void>;
  /** Removes the file; no error when it is not there. */
  delete(location: string): Promise<void>;
  /** null when absent. */
  stat(location: string): Promise<StoredFileInfo | null>;
  /** The file's bytes (a range of them); null when absent. */
  read(location: string, range?: ByteRange): Promise<Readable | null>;
  /**
   * A URL that serves the file without credentials until `expiresInSeconds` (S3's presigned URLs);
   * null where the backend has none.
   */
  signedUrl?(location: string, expiresInSeconds: number, filename: string): Promise<string | null>;

  /** A small JSON note under `.quire/<key>` (replaced if present). */
  putNote(key: string, value: unknown): Promise<void>;
  getNote(key: string): Promise<unknown>;
  deleteNote(key: string): Promise<void>;
  /** Notes whose key starts with `prefix`, with their last write time (ms). */
  listNotes(prefix: string): AsyncIterable<{ key: string; modified: number }>;

  /** Writes, reads and deletes a probe: the heartbeat. */
  ping(): Promise<boolean>;
  /** Removes what interrupted writes left, untouched for `olderThanMs` (where a write leaves anything). */
  sweepTemporary?(olderThanMs: number, now?: number): Promise<number>;
  /**
   * Aborts incomplete multipart uploads begun more than `olderThanMs` ago under `prefixes`, but
   * not at `busy` locations; null when the service cannot list them (S3's).
   */
  abortStaleUploads?(olderThanMs: number, prefixes: string[], busy: Set<string>, now?: number): Promise<number | null>;
  close(): Promise<void>;
}

/** The heartbeat's probe of a backend: a note written, read back and deleted. */
export async function probe(backend: FileBackend): Promise<boolean> {
  const key = `heartbeat-${randomUUID()}`;
  await backend.putNote(key, { test: 'write' });
  const read = await backend.getNote(key);
  await backend.deleteNote(key);
  return (read as { test?: string } | null)?.test === 'write';
}
