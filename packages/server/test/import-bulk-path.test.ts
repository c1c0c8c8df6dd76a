/**
 * `quire import`'s bulk path keeps every character: on PostgreSQL the rows go as COPY text
 * (sql/copy-text.ts: tabs, newlines, carriage returns and backslashes escaped, Buffers of 256 KB
 * with a longer row in one of its own), on SQLite as statement parameters; lines go to the store
 * in slices while COPY statements take `batchSize` rows. On both stores.
 */
import { PassThrough, Readable } from 'node:stream';
import { beforeEach, expect, it } from 'vitest';
import type { Storage } from '../src/storage/types.js';
import { exportStore } from '../src/transfer/export.js';
import { importStore } from '../src/transfer/import.js';
import { describeOnBackends } from './helpers/backends.js';

const HEADER = '{"format":"quire-export","version":1}';
const COLLECTION = '/buckets/b/collections/c';

async function exported(storage: Storage): Promise<Array<Record<string, unknown>>> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await exportStore(storage, out, { pageSize: 100 });
  out.end();
  return Buffer.concat(chunks)
    .toString('utf8')
    .trimEnd()
    .split('\n')
    .map((text) => JSON.parse(text) as Record<string, unknown>);
}

describeOnBackends("quire import's bulk path", { timeout: 120_000 }, (backend) => {
  beforeEach(() => backend.storage.flush());

  it('keeps tabs, newlines, backslashes, quotes, astral characters and a value longer than a buffer', async () => {
    const data = {
      a: 'tab\there',
      b: 'line\nbreak\r\nand \\n, \\N, \\t as text',
      c: 'back\\slash\\',
      d: 'quote " é 😀',
      e: `${'x'.repeat(300_000)}é`,
    };
    const records = Array.from({ length: 700 }, (_, i) => ({
      object: { ...(i === 350 ? data : { n: i }), id: `r${i}`, last_modified: 2000 + i },
      parent: COLLECTION,
      permissions: { write: [`basicauth:tab\there-${i}`] },
      resource: 'record',
    }));
    const lines = [
      HEADER,
      JSON.stringify({ object: { id: 'b', last_modified: 1000 }, parent: '', resource: 'bucket' }),
      JSON.stringify({ object: { id: 'c', last_modified: 1001 }, parent: '/buckets/b', resource: 'collection' }),
      ...records.map((record) => JSON.stringify(record)),
    ];
    // 700 lines: three slices handed to the store, two COPY statements of 500 rows per table.
    const summary = await importStore(backend.storage, Readable.from([`${lines.join('\n')}\n`]), {
      batchSize: 500,
      replace: false,
    });
    expect(summary).toEqual({ objects: 702, replaced: 0 });
    const back = (await exported(backend.storage)).filter((line) => line.resource === 'record');
    expect(back).toHaveLength(700);
    const byId = new Map(back.map((line) => [(line.object as { id: string }).id, line]));
    expect(byId.get('r350')?.object).toEqual({ ...data, id: 'r350', last_modified: 2350 });
    expect(byId.get('r350')?.permissions).toEqual({ write: ['basicauth:tab\there-350'] });
    expect(byId.get('r699')?.object).toEqual({ n: 699, id: 'r699', last_modified: 2699 });
  });
});
