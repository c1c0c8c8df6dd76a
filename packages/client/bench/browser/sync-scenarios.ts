/**
 * The browser benchmark's sync scenarios, each Quire beside kinto 17 in the same run: cold sync
 * (then an indexed query and no-change polls), creates and their push, the end-to-end encrypted
 * cold sync beside the plain one.
 */
import { type Bench, benchRecord, call, clientName, fmt, inFreshContext, millis, seconds, seed } from './harness.js';

interface Cold {
  coldMs: number;
  coldRequests: number;
  records: number;
  queryMs: number;
  pollP50: number;
  pollP95: number;
  pollRequests: number;
  peakHeap: number;
}

const mb = (bytes: number) => `${fmt(bytes / 1024 / 1024, 1)} MB`;

export async function coldScenario(bench: Bench, polls: number): Promise<void> {
  const { clients, row } = bench;
  for (const [turn, size] of bench.sizes.entries()) {
    for (const client of turn % 2 === 0 ? clients : [...clients].reverse()) {
      const m = await inFreshContext<Cold>(bench, `${client}:cold`, {
        bucket: bench.bucket,
        collection: `cold-${size}`,
        polls,
        lookup: Math.floor(size / 2),
      });
      const name = clientName(client);
      const rate = `${fmt((m.records / m.coldMs) * 1000)} records/s, peak heap ${mb(m.peakHeap)}`;
      row([`cold sync ${fmt(size)}`, name, seconds(m.coldMs), fmt(m.coldRequests), rate]);
      row([`indexed query in ${fmt(size)}`, name, millis(m.queryMs), '0', 'one record by `n`']);
      const poll = `${millis(m.pollP50)} p50`;
      row([`no-change poll at ${fmt(size)}`, name, poll, `${fmt(m.pollRequests, 1)}/poll`, `p95 ${millis(m.pollP95)}`]);
    }
  }
}

type Push = { createMs: number; pushMs: number; pushRequests: number; togetherMs: number };

export async function pushScenario(bench: Bench, creates: number, repeat: number): Promise<void> {
  const { clients, row } = bench;
  const runs = new Map<string, Push[]>(clients.map((client) => [client, []]));
  for (let round = 0; round < repeat; round++) {
    for (const client of round % 2 === 0 ? clients : [...clients].reverse()) {
      const collection = `push-${client}-${round}`;
      await call(bench.url, 'PUT', `/buckets/${bench.bucket}/collections/${collection}`, { data: {} });
      const args = { bucket: bench.bucket, collection, count: creates };
      runs.get(client)!.push(await inFreshContext<Push>(bench, `${client}:push`, args));
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  for (const client of clients) {
    const list = runs.get(client)!;
    const name = clientName(client);
    const all = (key: keyof Push) => `runs ${list.map((r) => fmt(r[key] / 1000, 2)).join(', ')} s`;
    const createMs = median(list.map((r) => r.createMs));
    const each = `${fmt(createMs / creates, 2)} ms each; ${all('createMs')}`;
    row([`${fmt(creates)} local creates, one by one`, name, seconds(createMs), '0', each]);
    const togetherMs = median(list.map((r) => r.togetherMs));
    row([
      `${fmt(creates)} local creates, same tick`,
      name,
      seconds(togetherMs),
      '0',
      `Promise.all; ${all('togetherMs')}`,
    ]);
    const pushMs = median(list.map((r) => r.pushMs));
    const requests = fmt(list[0]!.pushRequests);
    row([
      `push of ${fmt(creates)} creates`,
      name,
      seconds(pushMs),
      requests,
      `the sync() after them; ${all('pushMs')}`,
    ]);
  }
}

/** The passphrase of the encrypted collections (the key is derived once per page, timed apart). */
export const E2E_PASSPHRASE = 'correct horse battery staple';

/**
 * An end-to-end encrypted collection (AES-GCM, as `encryptionTransformer` stores it) beside the
 * same records in plain, each client syncing both cold in alternation, `repeat` times (medians).
 */
export async function e2eScenario(bench: Bench, repeat: number): Promise<void> {
  const { clients, row } = bench;
  const size = Math.min(...bench.sizes);
  const collection = `e2e-${size}`;
  const { encryptionTransformer, deriveKey } = await import('../../src/index.js');
  const key = await deriveKey(E2E_PASSPHRASE, `quire-e2e:${bench.bucket}/${collection}`);
  const transformer = encryptionTransformer({ key });
  const context = { bucket: bench.bucket, collection };
  const sealed: Record<string, unknown>[] = [];
  for (let i = 0; i < size; i++) {
    const id = `r${String(i).padStart(7, '0')}`;
    const { id: _id, ...stored } = await transformer.encode({ id, ...benchRecord(i) }, context);
    sealed.push(stored);
  }
  await seed(bench, collection, size, (i) => sealed[i]!);
  const runs = new Map<string, { plain: Cold[]; e2e: Cold[]; deriveMs: number[] }>(
    clients.map((client) => [client, { plain: [], e2e: [], deriveMs: [] }]),
  );
  for (let round = 0; round < repeat; round++) {
    for (const client of round % 2 === 0 ? clients : [...clients].reverse()) {
      const bucket = bench.bucket;
      const results = runs.get(client)!;
      const plainArgs = { bucket, collection: `cold-${size}`, polls: 0, lookup: 1 };
      results.plain.push(await inFreshContext<Cold>(bench, `${client}:cold`, plainArgs));
      const e2eArgs = { bucket, collection, polls: 0, lookup: 1, passphrase: E2E_PASSPHRASE };
      const e2e = await inFreshContext<Cold & { deriveMs: number }>(bench, `${client}:cold`, e2eArgs);
      results.e2e.push(e2e);
      results.deriveMs.push(e2e.deriveMs);
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  for (const client of clients) {
    const { plain, e2e, deriveMs } = runs.get(client)!;
    const name = clientName(client);
    const plainMs = median(plain.map((m) => m.coldMs));
    const e2eMs = median(e2e.map((m) => m.coldMs));
    const plainHeap = median(plain.map((m) => m.peakHeap));
    const e2eHeap = median(e2e.map((m) => m.peakHeap));
    const runsOf = (list: Cold[]) => list.map((m) => fmt(m.coldMs / 1000, 2)).join(', ');
    row([
      `cold sync ${fmt(size)}, plain`,
      name,
      seconds(plainMs),
      '',
      `peak heap ${mb(plainHeap)}; ${runsOf(plain)} s`,
    ]);
    const derive = `key derived once: ${seconds(median(deriveMs))}`;
    const note = `peak heap ${mb(e2eHeap)}; ${runsOf(e2e)} s; ${derive}`;
    row([`cold sync ${fmt(size)}, encrypted`, name, seconds(e2eMs), '', note]);
    const ratio = `time ${fmt(e2eMs / plainMs, 2)}×, peak heap ${fmt(e2eHeap / plainHeap, 2)}×`;
    row([`encrypted / plain`, name, `${fmt(e2eMs / plainMs, 2)}×`, '', ratio]);
  }
}
