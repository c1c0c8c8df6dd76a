/**
 * Rows in COPY's text format (bulk-loader.ts), written into Buffers as they come. A batch's text
 * built as one string was a rope of thousands of pieces: flattening it to send it, and the
 * garbage of its pieces, cost more than parsing the lines did (CPU profile of the import).
 */

/** Bytes per Buffer (a row longer than that gets one of its own). */
const CHUNK_BYTES = 256 * 1024;

/** A field in COPY's text format: backslash, tab, newline and carriage return escaped. */
export function copyField(value: string): string {
  return /[\\\t\n\r]/.test(value)
    ? value.replace(/[\\\t\n\r]/g, (char) =>
        char === '\\' ? '\\\\' : char === '\t' ? '\\t' : char === '\n' ? '\\n' : '\\r',
      )
    : value;
}

export class CopyText {
  #chunks: Buffer[] = [];
  #buffer: Buffer | null = null;
  #at = 0;

  /** Appends rows (their fields escaped, each ending with a newline). */
  write(rows: string): void {
    const most = rows.length * 3; // a UTF-16 unit is at most 3 bytes of UTF-8
    if (this.#buffer === null || this.#at + most > this.#buffer.length) {
      this.#seal();
      this.#buffer = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, most));
    }
    this.#at += this.#buffer.write(rows, this.#at);
  }

  /** What was written, in order. */
  chunks(): Buffer[] {
    this.#seal();
    return this.#chunks;
  }

  #seal(): void {
    if (this.#buffer !== null && this.#at > 0) this.#chunks.push(this.#buffer.subarray(0, this.#at));
    this.#buffer = null;
    this.#at = 0;
  }
}
