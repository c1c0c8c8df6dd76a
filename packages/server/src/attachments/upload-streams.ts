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
