/**
 * `quire import` validates like the API, all or nothing, naming the line (issue 29, defect 6):
 * ids by the API's rules, parents given and live, known resource types, no object given twice
 * unless --replace; hostile lines (fast-check, seeded) never crash it, never half-write, and a
 * line is never held past its limit. On both stores.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import fc from 'fast-check';
import pg from 'pg';
import { beforeEach, expect, it } from 'vitest';
import type { Storage } from '../src/storage/types.js';
import { exportStore } from '../src/transfer/export.js';
import { ImportError, importStore } from '../src/transfer/import.js';
import { describeOnBackends } from './helpers/backends.js';
import { useCli } from './helpers/cli.js';
import { PG_URL } from './helpers/postgres.js';

const HEADER = '{"format":"quire-export","version":1}';
const line = (value: unknown) => JSON.stringify(value);
const bucket = (id: string, last_modified: number) =>
  line({ object: { id, last_modified }, parent: '', resource: 'bucket', permissions: { write: ['basicauth:alice'] } });
const collection = (b: string, id: string, last_modified: number) =>
  line({ object: { id, last_modified }, parent: `/buckets/${b}`, resource: 'collection' });
const record = (b: string, c: string, id: string, last_modified: number, data: Record<string, unknown> = {}) =>
  line({ object: { ...data, id, last_modified }, parent: `/buckets/${b}/collections/${c}`, resource: 'record' });
/** A valid start: bucket b, collection c, records r1, r2 (lines 2 to 5). */
const PREFIX = [
  HEADER,
  bucket('b', 1000),
  collection('b', 'c', 1001),
  record('b', 'c', 'r1', 1002, { n: 1 }),
  record('b', 'c', 'r2', 1003, { n: 2 }),
];

async function exportText(storage: Storage): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await exportStore(storage, out, { pageSize: 100 });
  out.end();
  return Buffer.concat(chunks).toString('utf8');
}

const run = (
  storage: Storage,
  lines: string[],
  options: { replace?: boolean; batchSize?: number; attachmentFolder?: string } = {},
) =>
  importStore(storage, Readable.from([`${lines.join('\n')}\n`]), {
    batchSize: options.batchSize ?? 2,
    replace: options.replace ?? false,
    ...(options.attachmentFolder ? { attachmentFolder: options.attachmentFolder } : {}),
  });

/** The import is refused with a message naming `number`, and the store holds nothing. */
async function expectRefused(
  storage: Storage,
  lines: string[],
  number: number,
  reason: RegExp,
  options: { attachmentFolder?: string } = {},
): Promise<void> {
  const error = await run(storage, lines, options).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error, 'the import should have been refused').toBeInstanceOf(ImportError);
  expect((error as Error).message).toMatch(new RegExp(`^line ${number}: `));
  expect((error as Error).message).toMatch(reason);
  expect(await exportText(storage)).toBe(`${HEADER}\n`);
}

describeOnBackends('quire import validates like the API, all or nothing', { timeout: 120_000 }, (backend) => {
  beforeEach(() => backend.storage.flush());

  it('refuses a record id the API refuses (../../x), naming the line; writes nothing (not even before)', async () => {
    await expectRefused(
      backend.storage,
      [...PREFIX, record('b', 'c', '../../x', 1004)],
      6,
      /invalid record id "\.\.\/\.\.\/x"/,
    );
    await expectRefused(backend.storage, [...PREFIX, record('b', 'c', '', 1004)], 6, /invalid record id/);
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({
          object: { id: 'ok', last_modified: 1 },
          parent: '/buckets/b/collections/c/../../x',
          resource: 'record',
        }),
      ],
      6,
      /cannot be under/,
    );
  });

  it('refuses an id longer than max_object_id_length (the API refuses it: no URL could address it)', async () => {
    await expectRefused(
      backend.storage,
      [...PREFIX, record('b', 'c', 'x'.repeat(257), 1004)],
      6,
      /record id longer than 256 characters \(max_object_id_length/,
    );
    await expectRefused(backend.storage, [HEADER, bucket('b'.repeat(300), 1000)], 2, /bucket id longer than 256/);
  });

  it('gives an empty imported collection a records timestamp, as the API does (the monitor reads them)', async () => {
    await run(backend.storage, [...PREFIX, collection('b', 'empty', 1005)]);
    const found = await backend.storage.read((session) =>
      session.objects.collectionTimestamps({ within: { buckets: ['b'], collections: [] } }),
    );
    const byCollection = Object.fromEntries(found.map((row) => [row.collection, row.lastModified]));
    expect(byCollection.empty).toEqual(expect.any(Number));
    // The collection with records keeps the timestamp it was exported with.
    expect(byCollection.c).toBe(1003);
  });

  it('refuses a record in a collection that is not in the import, or deleted', async () => {
    await expectRefused(
      backend.storage,
      [...PREFIX, record('b', 'nope', 'r', 1004)],
      6,
      /parent \/buckets\/b\/collections\/nope is not in the import/,
    );
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({
          object: { deleted: true, id: 'gone', last_modified: 1004 },
          parent: '/buckets/b',
          resource: 'collection',
        }),
        record('b', 'gone', 'r', 1005),
      ],
      7,
      /is deleted/,
    );
    await expectRefused(
      backend.storage,
      [HEADER, collection('b', 'c', 1)],
      2,
      /parent \/buckets\/b is not in the import/,
    );
  });

  it('refuses an unknown resource type, and permissions the resource does not have', async () => {
    await expectRefused(
      backend.storage,
      [...PREFIX, line({ object: { id: 'w', last_modified: 1004 }, parent: '/buckets/b', resource: 'widget' })],
      6,
      /unknown resource type "widget"/,
    );
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({
          object: { id: 'r3', last_modified: 1004 },
          parent: '/buckets/b/collections/c',
          resource: 'record',
          permissions: { 'collection:create': ['x'] },
        }),
      ],
      6,
      /not a permission of a record/,
    );
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({
          object: { deleted: true, id: 'r3', last_modified: 1004, title: 'x' },
          parent: '/buckets/b/collections/c',
          resource: 'record',
        }),
      ],
      6,
      /a tombstone is exactly/,
    );
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({ object: { id: 'g', last_modified: 1004, members: 'alice' }, parent: '/buckets/b', resource: 'group' }),
      ],
      6,
      /members must be a list/,
    );
  });

  it('refuses an object given twice, naming both lines; with --replace the later line wins', async () => {
    const twice = [...PREFIX, record('b', 'c', 'r1', 1004, { n: 'again' })];
    await expectRefused(
      backend.storage,
      twice,
      6,
      /record "r1" under \/buckets\/b\/collections\/c was already given on line 4/,
    );
    const summary = await run(backend.storage, twice, { replace: true });
    expect(summary).toEqual({ objects: 4, replaced: 1 });
    const text = await exportText(backend.storage);
    expect(text).toContain('"id":"r1","last_modified":1004,"n":"again"');
    expect(text).not.toContain('"n":1,');
    // A timestamp two objects of a scope would share is refused (the store keeps them unique).
    await backend.storage.flush();
    await expectRefused(
      backend.storage,
      [...PREFIX, record('b', 'c', 'r3', 1003)],
      6,
      /last_modified 1003 is already that of record "r2" \(line 5\)/,
    );
  });

  it.runIf(backend.name === 'postgresql')(
    'a store that fails mid-import (its connection terminated): one transaction, so nothing was imported',
    async () => {
      let terminate!: () => void;
      const terminated = new Promise<void>((resolve) => (terminate = resolve));
      async function* lines() {
        yield `${PREFIX.join('\n')}\n`;
        for (let i = 0; i < 20_000; i++) yield `${record('b', 'c', `bulk${i}`, 2000 + i)}\n`;
        await terminated; // the store is mid-import: its rows are staged, nothing committed
        yield `${record('b', 'c', 'last', 1_000_000)}\n`;
      }
      const importing = importStore(backend.storage, Readable.from(lines()), { batchSize: 1000, replace: false }).then(
        () => null,
        (caught: unknown) => caught,
      );
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      try {
        let killed = 0;
        for (let attempt = 0; attempt < 200 && killed === 0; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          killed = (
            await admin.query(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE application_name = 'quire import (' || $1 || ')' AND state = 'idle in transaction'`,
              [backend.schema],
            )
          ).rowCount!;
        }
        expect(killed).toBe(1);
      } finally {
        terminate();
        await admin.end();
      }
      const error = await importing;
      expect(error).toBeInstanceOf(ImportError);
      expect((error as Error).message).toMatch(/^the store failed \(postgresql: .*\); nothing was imported$/);
      expect(await exportText(backend.storage)).toBe(`${HEADER}\n`);
    },
  );

  it('refuses what the API refuses (NUL, lone surrogates, 1e400): either export imports into both stores', async () => {
    const withData = (text: string) =>
      line({
        object: { id: 'r3', last_modified: 1004, x: 1 },
        parent: '/buckets/b/collections/c',
        resource: 'record',
      }).replace('"x":1', text);
    await expectRefused(backend.storage, [...PREFIX, withData('"x":"a\\u0000b"')], 6, /NUL character/);
    await expectRefused(backend.storage, [...PREFIX, withData('"a\\u0000":1')], 6, /NUL character/);
    await expectRefused(backend.storage, [...PREFIX, withData('"x":["\\ud800"]')], 6, /unpaired surrogate/);
    await expectRefused(backend.storage, [...PREFIX, withData('"x":{"y":"\\udfff!"}')], 6, /unpaired surrogate/);
    for (const number of ['1e400', '-1e400', `1${'0'.repeat(400)}`])
      await expectRefused(backend.storage, [...PREFIX, withData(`"x":${number}`)], 6, /a number too large to store/);
    // What a double holds is kept as it is; a paired surrogate (an emoji) too.
    await run(backend.storage, [...PREFIX, withData('"x":1e308,"y":"\\ud83d\\ude00","z":1e-400')]);
    expect(await exportText(backend.storage)).toContain('"x":1e+308,"y":"😀","z":0');
  });

  it("refuses a file index entry naming no file location, another collection's folder, or a named file", async () => {
    const entry = (id: string, location: unknown, last_modified: number, parent = '/buckets/b/collections/c') =>
      line({ object: { id, last_modified, location, size: 3 }, parent, resource: 'attachment' });
    await expectRefused(backend.storage, [...PREFIX, entry('r1', '../x.png', 2000)], 6, /not a file location/);
    await expectRefused(backend.storage, [...PREFIX, entry('r1', '/etc/passwd', 2000)], 6, /not a file location/);
    await expectRefused(backend.storage, [...PREFIX, entry('r1', 'b/c/.quire/x', 2000)], 6, /not a file location/);
    await expectRefused(backend.storage, [...PREFIX, entry('r1', 7, 2000)], 6, /not a file location/);
    const folder = { attachmentFolder: '{bucket_id}/{collection_id}' };
    const other = [...PREFIX, entry('r1', 'b/other/x.png', 2000)];
    await expectRefused(backend.storage, other, 6, /is in the folder of another collection/, folder);
    await expectRefused(backend.storage, [...PREFIX, entry('r1', 'x/c/x.png', 2000)], 6, /another collection/, folder);
    // Two records of one collection, or of two collections, naming one file: the second is refused.
    const twice = [...PREFIX, entry('r1', 'b/c/x.png', 2000), entry('r2', 'b/c/x.png', 2001)];
    await expectRefused(
      backend.storage,
      twice,
      7,
      /the file "b\/c\/x.png" is already that of the index entry on line 6/,
    );
    const across = [
      ...PREFIX,
      collection('b', 'd', 1010),
      entry('r1', 'shared/x.png', 2000),
      entry('r1', 'shared/x.png', 2000, '/buckets/b/collections/d'),
    ];
    await expectRefused(backend.storage, across, 8, /is already that of the index entry on line 7/);
    // Its own collection's folder, or one the pattern does not name (an older pattern): kept.
    await run(backend.storage, [...PREFIX, entry('r1', 'b/c/x.png', 2000), entry('r2', 'old/y.png', 2001)], folder);
    expect(await exportText(backend.storage)).toContain('"location":"b/c/x.png"');
  });

  it('a line longer than the limit is refused as soon as it passes it: never held whole', async () => {
    let pulled = 0;
    async function* endless() {
      yield `${HEADER}\n{"object":{"id":"x","last_modified":1,"blob":"`;
      for (;;) {
        pulled += 65_536;
        yield 'a'.repeat(65_536);
      }
    }
    const limits = { maxLineBytes: 1 << 20, maxDepth: 10, maxKeys: 100, maxIdLength: 256 };
    const error = await importStore(backend.storage, Readable.from(endless()), {
      batchSize: 10,
      replace: false,
      limits,
    }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect((error as Error).message).toBe('line 2: longer than 1048576 bytes');
    expect(pulled).toBeLessThan(2 << 20);
    await expectRefused(
      backend.storage,
      [...PREFIX, `{"a":${'['.repeat(200)}${']'.repeat(200)}}`],
      6,
      /nested deeper than/,
    );
    await expectRefused(
      backend.storage,
      [
        ...PREFIX,
        line({
          object: { id: 'r3', last_modified: 1004, x: 1 },
          parent: '/buckets/b/collections/c',
          resource: 'record',
        }).replace('"x":1', '"__proto__":{"polluted":1}'),
      ],
      6,
      /pollute prototypes/,
    );
  });

  it('hostile lines (generated, seeded): a refusal naming the line or a valid import, never half-written', async () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    // Lines around the protocol's shapes: wrong types, strange ids and parents, unicode, prototype keys.
    const id = fc.oneof(
      fc.constantFrom('r3', '../../x', '__proto__', 'a'.repeat(300), 'é', '', ' r', 'r/s', 'constructor'),
      fc.string(),
      json,
    );
    const parent = fc.oneof(
      fc.constantFrom(
        '',
        '/buckets/b',
        '/buckets/b/collections/c',
        '/buckets/b/collections/nope',
        '/buckets/x',
        '/buckets/b/collections/c/',
      ),
      fc.string(),
    );
    const resource = fc.oneof(
      fc.constantFrom('bucket', 'collection', 'group', 'record', 'account', 'history', 'quota', 'widget', '__proto__'),
      fc.string(),
    );
    const objectLine = fc
      .record(
        {
          object: fc.record(
            {
              id,
              last_modified: fc.oneof(fc.integer({ min: 1004, max: 2000 }), json),
              deleted: fc.oneof(fc.constant(undefined), json),
            },
            { requiredKeys: ['id'] },
          ),
          parent,
          resource,
          permissions: fc.oneof(fc.constant(undefined), json),
        },
        { requiredKeys: [] },
      )
      .map(line);
    const hostile = fc.oneof(
      objectLine,
      json.map(line),
      fc.string(),
      fc.constantFrom(
        '{"__proto__":{"polluted":1}}',
        '{"scope":{"parent":"/buckets/b","resource":"record","timestamp":-1}}',
        '\u0000',
        '{',
      ),
    );
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 3 }), async (extra) => {
        await backend.storage.flush();
        const lines = [...PREFIX, ...extra, record('b', 'c', 'tail', 3000)];
        try {
          await run(backend.storage, lines, { batchSize: 3 });
        } catch (error) {
          expect(error).toBeInstanceOf(ImportError);
          const number = Number(/^line (\d+): /.exec((error as Error).message)?.[1]);
          expect(number).toBeGreaterThanOrEqual(6);
          expect(number).toBeLessThanOrEqual(lines.length);
          expect(await exportText(backend.storage)).toBe(`${HEADER}\n`);
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
          refused++;
          return;
        }
        // Accepted: then everything is there, and a second export reads it back whole.
        expect(await exportText(backend.storage)).toContain('"id":"tail"');
      }),
      { seed: 29_6, numRuns: 60 },
    );
    expect(refused).toBeGreaterThan(30);
  });
});

describeOnBackends('quire import (CLI) refuses what the API refuses', { timeout: 120_000 }, (backend) => {
  const cli = useCli();
  it.runIf(backend.name === 'embedded')('exit code 1, the line and the reason on stderr, nothing written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quire-import-cli-'));
    try {
      const file = join(dir, 'bad.ndjson');
      await writeFile(file, `${[...PREFIX, record('b', 'c', '../../x', 1004)].join('\n')}\n`);
      const bad = cli(['import', '--input', file], { QUIRE_DATA_DIR: join(dir, 'data') });
      expect(await bad.exited).toBe(1);
      expect(bad.output()).toContain('quire import: line 6: invalid record id "../../x"');
      // Nothing was written: the same store takes a good import without --replace.
      const good = join(dir, 'good.ndjson');
      await writeFile(good, `${PREFIX.join('\n')}\n`);
      expect(await cli(['import', '--input', good], { QUIRE_DATA_DIR: join(dir, 'data') }).exited).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
