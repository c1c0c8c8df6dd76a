/**
 * bench/scale.ts's data: a stage's store as an export stream, loaded through `quire import`'s path
 * (see the header of bench/scale.ts for what a stage holds).
 */
import { createHmac } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { Storage } from '../../src/storage/types.js';
import { importStore } from '../../src/transfer/import.js';

export interface Stage {
  records: number;
  collections: number;
}

const SECRET = 'bench-secret'; // benchSettings' userid_hmac_secret
const USERS = 1_000;
export const ALICE_ENTRIES = 200;
const BUCKET = '/buckets/scale';
export const ITEMS = `${BUCKET}/collections/items`;
export const RECORDS_PATH = `/v1${ITEMS}/records`;
/** The first record's timestamp; record i has FIRST + i (unique in the scope, in creation order). */
export const FIRST = 1_700_000_000_000;
export const ALICE = `Basic ${Buffer.from('alice:alice').toString('base64')}`;
const userId = (name: string) =>
  `basicauth:${createHmac('sha256', SECRET).update(`${name}:${name}`, 'utf8').digest('hex')}`;

/** A permutation of 0..n-1 (multiplication by a prime that does not divide n, modulo n). */
function permutation(prime: number, n: number): (i: number) => number {
  let p = prime;
  while (n % p === 0 || gcd(p, n) !== 1) p += 2;
  return (i) => Number((BigInt(i) * BigInt(p)) % BigInt(n));
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** The stage's export stream: the lines `quire import` reads (transfer/format.ts). */
function* exportLines({ records, collections }: Stage): Generator<string> {
  const alice = userId('alice');
  const n = permutation(7_919, records);
  const m = permutation(104_729, records);
  const aliceEvery = Math.max(1, Math.floor(records / ALICE_ENTRIES));
  yield JSON.stringify({ format: 'quire-export', version: 1 });
  yield JSON.stringify({
    object: { id: 'scale', last_modified: FIRST },
    parent: '',
    permissions: { write: [alice] },
    resource: 'bucket',
  });
  yield JSON.stringify({
    object: { id: 'items', indexes: ['n'], last_modified: FIRST + 1 },
    parent: BUCKET,
    resource: 'collection',
  });
  for (let c = 0; c < collections; c++) {
    yield JSON.stringify({
      object: { id: `m${c}`, last_modified: FIRST + 2 + c },
      parent: BUCKET,
      resource: 'collection',
    });
  }
  yield JSON.stringify({ scope: { parent: BUCKET, resource: 'collection', timestamp: FIRST + 2 + collections } });
  for (let c = 0; c < collections; c++)
    yield JSON.stringify({
      scope: { parent: `${BUCKET}/collections/m${c}`, resource: 'record', timestamp: FIRST + c },
    });
  const authors = Array.from({ length: USERS }, (_, u) => userId(`user${u}`));
  for (let i = 0; i < records; i++) {
    const permissions: Record<string, string[]> = { write: [authors[i % USERS]!] };
    if (i % aliceEvery === 0 && i / aliceEvery < ALICE_ENTRIES) permissions.read = [alice];
    const object = {
      id: `r${i}`,
      last_modified: FIRST + i,
      n: n(i),
      m: m(i),
      title: `record ${i}`,
      done: i % 3 === 0,
      tags: ['scale', `t${i % 10}`],
    };
    yield JSON.stringify({ object, parent: ITEMS, permissions, resource: 'record' });
  }
  yield JSON.stringify({ scope: { parent: ITEMS, resource: 'record', timestamp: FIRST + records - 1 } });
}

/** Imports the stage, then builds its declared index; the time of each. */
export async function load(storage: Storage, stage: Stage): Promise<{ loadMs: number; indexMs: number }> {
  const started = performance.now();
  const stream = Readable.from(
    (function* () {
      for (const line of exportLines(stage)) yield `${line}\n`;
    })(),
  );
  await importStore(storage, stream, { batchSize: 5_000, replace: true });
  const loaded = performance.now();
  const indexed = await storage.updateIndexes?.();
  if (!indexed?.has('n')) throw new Error('the declared index on n was not built');
  return { loadMs: loaded - started, indexMs: performance.now() - loaded };
}
