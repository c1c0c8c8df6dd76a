/**
 * Receiving `POST {record}/attachment`: a `multipart/form-data` body parsed as it arrives
 * (busboy), the file part streamed to the backend through a meter that hashes it (SHA-256),
 * counts it and, with `gzipped`, compresses it on the way. Memory stays bounded by the streams'
 * buffers whatever the file's size. The checks the original makes are made as early as the data
 * allows: the file's extension and media type before its first byte is stored, its size while it
 * streams (413 as soon as it passes the limit), the other fields as they come.
 *
 * Whatever goes wrong — a refused field, a size over the limit, a client that goes away or stops
 * sending, a backend that fails — the write is aborted (the backend keeps nothing of it), a file
 * already complete is deleted, and the journal's note goes: an upload that fails leaves nothing.
 */
import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import busboy from 'busboy';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import type { FileBackend } from './backend.js';
import type { Intent, Journal, JournalFile } from './journal.js';
import { dispositionOf, mediaTypeAllowed, recordedTypeOf, SNIFF_BYTES } from './media-types.js';
import { extensionAllowed, filenameProblem } from './names.js';
import { peek, type UploadLimits, UploadWatch } from './upload-streams.js';

/** The file as the record's `attachment` describes it (the plugin's fields). */
export interface AttachmentInfo {
  filename: string;
  hash: string;
  location: string;
  mimetype: string;
  size: number;
  /** The file as sent, when it is stored gzipped. */
  original?: { filename: string; hash: string; mimetype: string; size: number };
}

export interface ReceivedUpload {
  attachment: AttachmentInfo;
  /** `data` and `permissions` as sent (JSON), if sent. */
  data?: Record<string, unknown>;
  permissions?: unknown;
  /** The journal's note of the new file: done once the record holds it. */
  intent: Intent;
}

export interface UploadOptions {
  backend: FileBackend;
  journal: Journal;
  /** The record that will hold the file (for the journal). */
  collectionUri: string;
  recordId: string;
  /** The stored location of a file sent as `filename`. */
  locationFor(filename: string): string;
  gzipped: boolean;
  maxSize: number | null;
  extensions: Set<string> | 'any';
  allowedMimetypes: readonly string[];
  mimetypeOverrides: Record<string, string>;
  /** Largest `data` or `permissions` field. */
  maxFieldBytes: number;
  /** Idle timeout, deadline and least rate of the body. */
  limits: UploadLimits;
  /** How often the journal's note is renewed while the file streams. */
  renewEveryMs: number;
}

const FILE_FIELD = 'attachment';
const RECORD_FIELDS = ['data', 'permissions'] as const;

/** The plugin's own errors (Kinto's `http_error`): labelled with the status's reason phrase. */
function postedDataError(message: string): ApiError {
  return new ApiError(400, ERRNO.INVALID_POSTED_DATA, { message });
}

export function tooLarge(maxSize: number): ApiError {
  return new ApiError(413, ERRNO.REQUEST_TOO_LARGE, { message: `File too large: the limit is ${maxSize} bytes.` });
}

/** Counts and hashes what passes, and tells the idle timer. */
class Meter extends Transform {
  /** Not `size`: lib-storage reads a body's `size` as its length. */
  bytes = 0;
  readonly #hash: Hash = createHash('sha256');
  readonly #touch: () => void;

  constructor(touch: () => void) {
    super();
    this.#touch = touch;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.#hash.update(chunk);
    this.#touch();
    callback(null, chunk);
  }

  digest(): string {
    return this.#hash.digest('hex');
  }
}

/** What busboy refuses in the headers, worded as the original (Python's cgi) words it. */
function parserFor(raw: IncomingMessage, options: UploadOptions): busboy.Busboy {
  try {
    return busboy({
      headers: raw.headers,
      defParamCharset: 'utf8',
      limits: {
        // One more than allowed: passing the limit shows as a truncated file.
        fileSize: options.maxSize === null ? Number.POSITIVE_INFINITY : options.maxSize + 1,
        fieldSize: options.maxFieldBytes,
        fields: 8,
        files: 4,
        parts: 12,
        headerPairs: 32,
      },
    });
  } catch (error) {
    const boundary = /boundary=("?)([^";]*)\1/i.exec(String(raw.headers['content-type']))?.[2] ?? '';
    throw new ApiError(400, ERRNO.INVALID_PARAMETERS, {
      message: /boundary/i.test((error as Error).message)
        ? `Invalid boundary in multipart form: '${boundary}'`
        : `Invalid multipart form: ${(error as Error).message}`,
    });
  }
}

function parseJsonField(name: string, value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw postedDataError(`body: ${name} is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * Reads the request's multipart body: stores its file, returns it with the other fields. Throws
 * an ApiError (nothing kept) for anything the original refuses, and more.
 */
export function receiveUpload(raw: IncomingMessage, options: UploadOptions): Promise<ReceivedUpload> {
  return new UploadReceiver(raw, options).receive();
}

/** One upload's reading: the parser's events, the file part's storing, the fields, the outcome. */
class UploadReceiver {
  readonly #raw: IncomingMessage;
  readonly #options: UploadOptions;
  readonly #parser: busboy.Busboy;
  readonly #controller = new AbortController();
  readonly #fields: { data?: unknown; permissions?: unknown } = {};
  #unknownField: string | null = null;
  #intent: Intent | null = null;
  /** Resolves with the stored file; null until the file part starts. */
  #writing: Promise<AttachmentInfo> | null = null;
  #stored: AttachmentInfo | null = null;
  readonly #parsed: Promise<void>;
  #rejectParsing: (error: ApiError) => void = () => {};
  readonly #watch: UploadWatch;

  constructor(raw: IncomingMessage, options: UploadOptions) {
    this.#raw = raw;
    this.#options = options;
    const parser = parserFor(raw, options);
    this.#parser = parser;
    this.#parsed = new Promise<void>((resolve, reject) => {
      this.#rejectParsing = reject;
      parser.on('close', () => resolve());
      parser.on('error', (error: Error) =>
        reject(new ApiError(400, ERRNO.INVALID_PARAMETERS, { message: `Invalid multipart form: ${error.message}` })),
      );
    });
    this.#parsed.catch(() => {}); // observed in receive(); failures may come first
    this.#watch = new UploadWatch(
      options.limits,
      () => raw.readableFlowing === false,
      (reason) =>
        this.#fail(new ApiError(408, ERRNO.INVALID_POSTED_DATA, { message: `${reason}: the upload was abandoned.` })),
    );
  }

  readonly #fail = (error: ApiError) => {
    if (!this.#controller.signal.aborted) this.#controller.abort(error);
    this.#rejectParsing(error);
  };

  readonly #onData = (chunk: Buffer) => this.#watch.received(chunk.length);

  readonly #onClose = () => {
    if (!this.#raw.readableEnded)
      this.#fail(
        new ApiError(499, ERRNO.UNDEFINED, { message: 'The client closed the connection: the upload was abandoned.' }),
      );
  };

  async receive(): Promise<ReceivedUpload> {
    const raw = this.#raw;
    const parser = this.#parser;
    raw.on('data', this.#onData);
    raw.on('close', this.#onClose);
    parser.on('file', this.#onFile);
    parser.on('field', this.#onField);
    for (const event of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
      parser.on(event, () =>
        this.#fail(postedDataError(`body: too many parts (only '${FILE_FIELD}', 'data' and 'permissions' are taken)`)),
      );
    }
    raw.pipe(parser);
    try {
      await this.#parsed;
      return this.#outcome(this.#writing ? await this.#writing : null);
    } catch (error) {
      const failure = error instanceof ApiError ? error : backendError(error);
      if (!this.#controller.signal.aborted) this.#controller.abort(failure);
      raw.unpipe(parser);
      parser.destroy();
      await this.#writing?.catch(() => {});
      await discard(this.#options.backend, this.#stored, this.#intent);
      throw failure;
    } finally {
      this.#watch.stop();
      raw.off('data', this.#onData);
      raw.off('close', this.#onClose);
    }
  }

  /** The upload once the body is read: its file and fields, or the original's refusal. */
  #outcome(attachment: AttachmentInfo | null): ReceivedUpload {
    const fields = this.#fields;
    if (!attachment) throw postedDataError('Attachment missing.');
    if (this.#unknownField !== null)
      throw postedDataError(`body: '${this.#unknownField}' not in ('data', 'permissions')`);
    if (
      fields.data !== undefined &&
      (typeof fields.data !== 'object' || fields.data === null || Array.isArray(fields.data))
    ) {
      throw postedDataError('body: data should be a JSON object');
    }
    return {
      attachment,
      ...(fields.data !== undefined ? { data: fields.data as Record<string, unknown> } : {}),
      ...(fields.permissions !== undefined ? { permissions: fields.permissions } : {}),
      intent: this.#intent as Intent,
    };
  }

  readonly #onFile = (name: string, stream: Readable, info: busboy.FileInfo) => {
    const options = this.#options;
    const refuse = (error: ApiError) => {
      stream.resume();
      this.#fail(error);
    };
    // Destroying the parser fails its open file streams ("Unexpected end of file"): never unheard.
    // The one being stored reports its failure through the write's pipeline.
    stream.on('error', () => {});
    if (this.#controller.signal.aborted) return void stream.resume();
    if ((RECORD_FIELDS as readonly string[]).includes(name))
      return refuse(postedDataError(`body: '${name}' field should be passed as form data, not files`));
    if (name !== FILE_FIELD) {
      // The original answers "Attachment missing." when the only file is misnamed: decided at the end.
      this.#unknownField ??= name;
      stream.on('limit', () => this.#fail(tooLarge(options.maxSize ?? 0)));
      return void stream.resume();
    }
    if (this.#writing) return refuse(postedDataError(`body: only one file may be sent in '${FILE_FIELD}'`));
    const filename = info.filename ?? '';
    if (filename === '') return refuse(invalidParameter('body', null, 'Filename is required.'));
    if (!extensionAllowed(filename, options.extensions))
      return refuse(invalidParameter('body', null, 'File extension is not allowed.'));
    const problem = filenameProblem(filename);
    if (problem !== null) return refuse(invalidParameter('body', null, problem));
    // busboy stops the stream at the limit (the rest is dropped): the write is aborted.
    stream.on('limit', () => this.#fail(tooLarge(options.maxSize ?? 0)));
    this.#writing = this.#accept(stream, filename, info.mimeType);
    this.#writing.catch((error: unknown) => this.#fail(error instanceof ApiError ? error : backendError(error)));
  };

  /** The file part: its type decided from its name and first bytes (media-types.ts), then stored. */
  async #accept(stream: Readable, filename: string, sent: string | undefined): Promise<AttachmentInfo> {
    const { head, body } = await peek(stream, SNIFF_BYTES);
    if (this.#controller.signal.aborted) throw this.#controller.signal.reason;
    const mimetype = recordedTypeOf(filename, sent, head, this.#options.mimetypeOverrides);
    if (!mediaTypeAllowed(mimetype, this.#options.allowedMimetypes)) {
      body.resume();
      throw invalidParameter('body', null, `File type ${mimetype} is not allowed.`);
    }
    return this.#store(body, filename, mimetype);
  }

  /** Streams the file through its meters (and gzip) into the backend, its journal note renewed meanwhile. */
  async #store(stream: Readable, filename: string, mimetype: string): Promise<AttachmentInfo> {
    const options = this.#options;
    const location = options.locationFor(filename);
    const files: JournalFile[] = [{ location, collection: options.collectionUri, record: options.recordId }];
    const intent = await options.journal.announce(files);
    this.#intent = intent;
    const renewal = setInterval(() => void intent.renew(files).catch(() => {}), options.renewEveryMs);
    try {
      const sent = new Meter(this.#watch.touch);
      let body: Readable = stream.pipe(sent);
      stream.on('error', (error) => sent.destroy(error));
      let gzipped: Meter | null = null;
      if (options.gzipped) {
        gzipped = new Meter(this.#watch.touch);
        const gzip = createGzip();
        body.on('error', (error) => gzip.destroy(error));
        body = body.pipe(gzip).pipe(gzipped);
        gzip.on('error', (error) => gzipped?.destroy(error));
      }
      const storedType = options.gzipped ? 'application/x-gzip' : mimetype;
      await options.backend.write(location, body, {
        contentType: storedType,
        disposition: dispositionOf(storedType, options.gzipped ? `${filename}.gz` : filename),
        signal: this.#controller.signal,
      });
      const info: AttachmentInfo = gzipped
        ? {
            filename: `${filename}.gz`,
            hash: gzipped.digest(),
            location,
            mimetype: 'application/x-gzip',
            size: gzipped.bytes,
            original: { filename, hash: sent.digest(), mimetype, size: sent.bytes },
          }
        : { filename, hash: sent.digest(), location, mimetype, size: sent.bytes };
      this.#stored = info;
      return info;
    } finally {
      clearInterval(renewal);
    }
  }

  readonly #onField = (name: string, value: string, info: busboy.FieldInfo) => {
    if (this.#controller.signal.aborted) return;
    if (name === FILE_FIELD) return this.#fail(invalidParameter('body', null, 'Filename is required.'));
    if (!(RECORD_FIELDS as readonly string[]).includes(name)) {
      this.#unknownField ??= name;
      return;
    }
    if (info.valueTruncated)
      return this.#fail(
        new ApiError(413, ERRNO.REQUEST_TOO_LARGE, {
          message: `body: '${name}' is larger than ${this.#options.maxFieldBytes} bytes.`,
        }),
      );
    if (Object.hasOwn(this.#fields, name)) return this.#fail(postedDataError(`body: '${name}' is sent twice`));
    try {
      this.#fields[name as (typeof RECORD_FIELDS)[number]] = parseJsonField(name, value);
    } catch (error) {
      this.#fail(error as ApiError);
    }
  };
}

/** Removes what an upload stored, then its note (a failure leaves the note: the sweeper finishes). */
export async function discard(
  backend: FileBackend,
  stored: AttachmentInfo | null,
  intent: Intent | null,
): Promise<void> {
  if (stored) await backend.delete(stored.location);
  await intent?.done();
}

export function backendError(error: unknown): ApiError {
  return new ApiError(503, ERRNO.BACKEND, {
    message: `The attachments backend failed: ${(error as Error)?.message ?? String(error)}`,
  });
}
