/**
 * The lines of an import's input, with their numbers (every line counts, blank ones too, so that a
 * number names the line an editor shows), pulled as the consumer asks (backpressure), those of
 * each chunk of the input together (a step of an async generator per line cost more than its
 * checks). A line is never held past `maxBytes`: a longer one is refused as soon as it passes the
 * limit.
 */
import type { Readable } from 'node:stream';
import { ImportError } from './validate.js';

export interface NumberedLine {
  number: number;
  text: string;
  /** Bytes of the input read so far, this line's included (progress). */
  bytes: number;
}

export async function* numberedLines(input: Readable, maxBytes: number): AsyncGenerator<NumberedLine[]> {
  let pieces: Buffer[] = [];
  let held = 0;
  let number = 1;
  let bytes = 0;
  const tooLong = () => new ImportError(`line ${number}: longer than ${maxBytes} bytes`);
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const lines: NumberedLine[] = [];
    let start = 0;
    for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a, start)) {
      if (held + end - start > maxBytes) throw tooLong();
      let text: string;
      if (pieces.length === 0) text = data.toString('utf8', start, end);
      else {
        pieces.push(data.subarray(start, end));
        text = Buffer.concat(pieces).toString('utf8');
        pieces = [];
      }
      bytes += held + end - start + 1;
      held = 0;
      start = end + 1;
      lines.push({ number, text, bytes });
      number++;
    }
    if (lines.length) yield lines;
    if (held + data.length - start > maxBytes) throw tooLong();
    if (start < data.length) {
      pieces.push(Buffer.from(data.subarray(start))); // a copy: the stream may reuse its chunk
      held += data.length - start;
    }
  }
  if (held > 0) yield [{ number, text: Buffer.concat(pieces).toString('utf8'), bytes: bytes + held }];
}
