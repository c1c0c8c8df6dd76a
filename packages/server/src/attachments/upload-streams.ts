/**
 * Helpers of an upload's streams: the first bytes of a file read before it is stored (its type
 * depends on them, media-types.ts), then given back in front of the rest.
 */
import { Readable } from 'node:stream';

/**
 * Reads up to `bytes` first bytes of `stream` (fewer when it ends first). `body` yields every
 * byte, those first: the same stream with them put back, or a new one when the stream ended.
 * Rejects when the stream fails first.
 */
export function peek(stream: Readable, bytes: number): Promise<{ head: Buffer; body: Readable }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const finish = (ended: boolean) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      const head = Buffer.concat(chunks);
      if (ended) return resolve({ head: head.subarray(0, bytes), body: Readable.from(length ? [head] : []) });
      stream.pause();
      stream.unshift(head);
      resolve({ head: head.subarray(0, bytes), body: stream });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = (error: Error) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      reject(error);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}

export interface UploadLimits {
  /** Nothing received for this long: abandoned. */
  idleMs: number;
  /** The whole body must arrive within this. */
  deadlineMs: number;
  /** Least average rate over each window of `idleMs` (0: none). */
  minBytesPerSecond: number;
}

/**
 * Watches an upload's progress: fires `onStalled` with the reason when nothing came for
 * `idleMs`, when the whole took longer than `deadlineMs`, or when a window of `idleMs` brought
 * less than `minBytesPerSecond` on average (a trickle is never idle). A window in which the
 * request was held back by the server's own backpressure (a slow file store) is not counted.
 */
export class UploadWatch {
  readonly #timer: NodeJS.Timeout;
  readonly #started = Date.now();
  #last = Date.now();
  #windowStart = Date.now();
  #windowBytes = 0;
  #heldBack = false;

  constructor(limits: UploadLimits, heldBack: () => boolean, onStalled: (reason: string) => void) {
    const { idleMs, deadlineMs, minBytesPerSecond } = limits;
    this.#timer = setInterval(
      () => {
        const now = Date.now();
        this.#heldBack ||= heldBack();
        if (now - this.#last >= idleMs) return onStalled(`Nothing was received for ${idleMs / 1000} s`);
        if (now - this.#started >= deadlineMs) return onStalled(`The upload took longer than ${deadlineMs / 1000} s`);
        if (now - this.#windowStart < idleMs) return;
        const needed = (minBytesPerSecond * (now - this.#windowStart)) / 1000;
        if (!this.#heldBack && this.#windowBytes < needed) {
          return onStalled(`Less than ${minBytesPerSecond} bytes per second were received for ${idleMs / 1000} s`);
        }
        this.#windowStart = now;
        this.#windowBytes = 0;
        this.#heldBack = false;
      },
      Math.max(50, Math.min(1000, idleMs / 4)),
    );
  }

  /** Something happened (bytes received, or stored). */
  readonly touch = () => {
    this.#last = Date.now();
  };

  /** `bytes` were received from the client. */
  received(bytes: number): void {
    this.#windowBytes += bytes;
    this.touch();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
