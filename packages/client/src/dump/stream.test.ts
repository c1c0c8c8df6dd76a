/** The dump splitter: any dump, cut anywhere into pieces, gives the records and timestamp JSON.parse gives. */
import { describe, expect, it } from 'vitest';
import { DumpSplitter, readDumpStream } from './stream.js';

const tricky = (i: number) => ({
  id: `r${i}`,
  last_modified: 1000 + i,
  title: `a "quoted" {brace} [bracket] \\ back\\slash ${'é'.repeat(i % 3)} 🎉`,
  data: [{ nested: [i, { deep: '}]' }] }],
  empty: {},
});

function pieces(text: string, seed: number): string[] {
  const out: string[] = [];
  let x = seed;
  for (let at = 0; at < text.length; ) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const size = 1 + (x % 23);
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

function split(text: string, seed: number) {
  const splitter = new DumpSplitter();
  const records = pieces(text, seed).flatMap((piece) => splitter.push(piece));
  return { records, timestamp: splitter.timestamp() };
}

describe('DumpSplitter', () => {
  const data = Array.from({ length: 40 }, (_, i) => tricky(i));
  const forms: Array<[string, string, number | null]> = [
    ['timestamp first', JSON.stringify({ bucket: 'b', timestamp: 42, data }), 42],
    ['timestamp after data', JSON.stringify({ collection: 'c', data, timestamp: 43 }), 43],
    ['pretty-printed', JSON.stringify({ data, timestamp: 44 }, null, 2), 44],
    ['a bare array', JSON.stringify(data), null],
    ['no timestamp', JSON.stringify({ data }), null],
  ];
  it.each(forms)('%s, cut anywhere', (_name, text, timestamp) => {
    for (let seed = 1; seed <= 30; seed++) expect(split(text, seed)).toEqual({ records: data, timestamp });
    // One character at a time.
    const splitter = new DumpSplitter();
    expect([...text].flatMap((char) => splitter.push(char))).toEqual(data);
  });

  it('says when the text ends early', () => {
    const text = JSON.stringify({ data, timestamp: 1 });
    const splitter = new DumpSplitter();
    splitter.push(text.slice(0, text.length - 30));
    expect(() => splitter.timestamp()).toThrow(/ends before its end/);
  });

  it('reads a body as it streams: tombstones and repeated ids left out, the state at the end', async () => {
    const dump = {
      timestamp: 99,
      data: [...data, { id: 'r1', last_modified: 5 }, { id: 'x', last_modified: 2000, deleted: true }],
    };
    const bytes = new TextEncoder().encode(JSON.stringify(dump));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 7) controller.enqueue(bytes.slice(at, at + 7));
        controller.close();
      },
    });
    const read = readDumpStream(body);
    const batches = [];
    for await (const batch of read.batches) batches.push(batch);
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.flat()).toEqual(data);
    expect(read.state()).toEqual({ since: 2000, etag: 99 });
  });
});
