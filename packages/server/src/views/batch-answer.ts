/**
 * The answer of a batch, `{"responses": [entry, …]}`, written as its entries come rather than
 * built whole (protocol-reference §8; the wire format is exactly the one built whole).
 *
 * - A read-only batch (its sub-requests only read) is held until `STREAM_AFTER_BYTES`, so that
 *   a small batch whose sub-request fails (5xx, 409) still answers that failure as a whole; past
 *   that it is streamed, an entry at a time, each written only as fast as the client reads
 *   (`drain`): memory holds one entry, however many pages the batch reads. A failure after the
 *   stream started can no longer change the status: the connection is cut, so that the client
 *   sees an error, never a partial answer that parses.
 * - A batch that writes answers only once committed, so its entries are held: past
 *   `batch_max_response_bytes` together, the batch is refused (413) and rolled back before
 *   commit, telling the client to split it.
 */
import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { ApiError, ERRNO } from '../errors.js';
import { entryJson, entryParts, type SubResponse } from './batch-entry.js';

/** What a read-only batch holds before it starts streaming. */
const STREAM_AFTER_BYTES = 1024 * 1024;

/**
 * What an entry stamped at commit may grow by once stamped, counted against the budget before:
 * `null` and `"NaN"` become 13 digits, `Invalid Date` a date (about 40 bytes; a body may hold its
 * timestamp more than once).
 */
const UNSTAMPED_SLACK = 128;

const OPENING = '{"responses":[';
const CLOSING = ']}';

export class BatchAnswer {
  readonly #reply: FastifyReply;
  readonly #streams: boolean;
  readonly #maxBytes: number;
  /** Entries as JSON text, or whole when they wait for their timestamps (`settle`). */
  #held: Array<string | SubResponse> = [];
  #bytes = 0;
  #stream: PassThrough | null = null;

  /**
   * @param streams the batch only reads: its answer may be streamed.
   * @param maxBytes `batch_max_response_bytes`: most a held answer may weigh.
   */
  constructor(reply: FastifyReply, streams: boolean, maxBytes: number) {
    this.#reply = reply;
    this.#streams = streams;
    this.#maxBytes = maxBytes;
  }

  /** Whether the answer has started to go out (its status can no longer change). */
  get streaming(): boolean {
    return this.#stream !== null;
  }

  /** Adds an entry: held, or written once the client has read what came before it. */
  async add(entry: SubResponse): Promise<void> {
    if (this.#stream) {
      const [head, body, tail] = entryParts(entry);
      this.#stream.write(`,${head}`);
      this.#stream.write(body);
      return this.#write(tail);
    }
    const text = entryJson(entry);
    this.#bytes += text.length + 1 + (entry.settle ? UNSTAMPED_SLACK : 0);
    this.#held.push(entry.settle ? entry : text);
    if (!this.#streams) {
      if (this.#bytes > this.#maxBytes) throw answerTooLarge(this.#maxBytes);
      return;
    }
    if (this.#bytes > STREAM_AFTER_BYTES) {
      const stream = new PassThrough();
      this.#stream = stream;
      this.#reply.type('application/json; charset=utf-8').send(stream);
      const held = this.#held as string[]; // a batch that only reads stamps nothing
      this.#held = [];
      await this.#write(`${OPENING}${held.join(',')}`);
    }
  }

  /** The whole answer when it was held (the handler returns it); null once streamed (ended here). */
  end(): string | null {
    if (this.#stream) {
      this.#stream.end(CLOSING);
      return null;
    }
    this.#reply.type('application/json; charset=utf-8');
    const texts = this.#held.map((held) => {
      if (typeof held === 'string') return held;
      held.settle?.();
      return entryJson(held);
    });
    return `${OPENING}${texts.join(',')}${CLOSING}`;
  }

  /** After the stream started: the batch failed, the answer is cut short (the client sees an error). */
  abort(error: unknown): void {
    this.#stream?.destroy(error instanceof Error ? error : new Error(String(error)));
  }

  async #write(text: string): Promise<void> {
    const stream = this.#stream!;
    if (stream.write(text)) return;
    // Written only as fast as the client reads: one entry waits here at most.
    const raw = this.#reply.raw;
    await new Promise<void>((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        raw.off('close', done);
        resolve();
      };
      stream.on('drain', done);
      stream.on('close', done);
      raw.on('close', done);
    });
  }
}

function answerTooLarge(maxBytes: number): ApiError {
  return new ApiError(413, ERRNO.REQUEST_TOO_LARGE, {
    message:
      `The batch's answer would be larger than batch_max_response_bytes (${maxBytes} bytes), and was rolled ` +
      'back: send fewer requests per batch, or ask for smaller pages.',
  });
}
