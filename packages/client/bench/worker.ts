/**
 * One measurement in a fresh process (so memory numbers belong to one client doing one job):
 * the parent (sync.ts) sends a task over IPC, this process runs it with Quire's client or with
 * kinto.js, both over fake-indexeddb, and sends back the numbers.
 */
import { performance } from 'node:perf_hooks';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

export interface Task {
  impl: 'quire' | 'kinto';
  kind: 'cold' | 'poll' | 'push';
  url: string;
  bucket: string;
  collection: string;
  /** poll: number of timed polls; push: number of local records to create. */
  count: number;
  user: string;
}

export interface Measurement {
  ms: number;
  records: number;
  peakRssMb: number;
  peakHeapMb: number;
  retainedHeapMb: number;
  /** poll: per-poll latencies in ms; push: local write time in ms. */
  extra: number[];
  requests: number;
}

interface Runner {
  sync(): Promise<{ pulled: number; pushed: number }>;
  createMany(n: number): Promise<void>;
}

let requests = 0;
const countingFetch = (input: RequestInfo | URL, init?: RequestInit) => {
  requests++;
  return fetch(input, init);
};

async function quireRunner(task: Task): Promise<Runner> {
  const { createClient } = await import('../src/index.js');
  const client = createClient({
    remote: task.url,
    auth: { type: 'basic', username: task.user, password: 'bench' },
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    fetch: (input, init) => countingFetch(input, init),
    timeoutMs: 300_000,
  });
  const collection = client.bucket(task.bucket).collection(task.collection, { strategy: 'server-wins' });
  return {
    async sync() {
      const result = await collection.sync();
      if (!result.ok) throw new Error(`quire sync failed: ${JSON.stringify(result.errors.slice(0, 3))}`);
      return result;
    },
    async createMany(n) {
      for (let i = 0; i < n; i++) await collection.create({ n: i, title: `local ${i}` });
    },
  };
}

async function kintoRunner(task: Task): Promise<Runner> {
  // kinto.js's IndexedDB adapter uses the global indexedDB.
  Object.assign(globalThis, { indexedDB: new IDBFactory(), IDBKeyRange });
  const { default: Kinto } = await import('kinto');
  const kinto = new Kinto({
    remote: task.url,
    bucket: task.bucket,
    headers: { Authorization: `Basic ${Buffer.from(`${task.user}:bench`).toString('base64')}` },
    timeout: 300_000,
  } as ConstructorParameters<typeof Kinto>[0]);
  (kinto.api as unknown as { http: { fetchFunc?: unknown } }).http.fetchFunc = countingFetch;
  const collection = kinto.collection(task.collection);
  return {
    async sync() {
      const result = await collection.sync({ strategy: Kinto.syncStrategy.SERVER_WINS } as never);
      if (!result.ok) throw new Error(`kinto.js sync failed: ${JSON.stringify(result.errors.slice(0, 3))}`);
      return {
        pulled: result.created.length + result.updated.length + result.deleted.length,
        pushed: result.published.length,
      };
    },
    async createMany(n) {
      for (let i = 0; i < n; i++) await collection.create({ n: i, title: `local ${i}` });
    },
  };
}

const MB = 1024 * 1024;

async function measure<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; ms: number; peakRssMb: number; peakHeapMb: number; retainedHeapMb: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  let peakRss = 0;
  let peakHeap = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    peakRss = Math.max(peakRss, usage.rss);
    peakHeap = Math.max(peakHeap, usage.heapUsed);
  };
  const timer = setInterval(sample, 10);
  const start = performance.now();
  const value = await fn();
  const ms = performance.now() - start;
  clearInterval(timer);
  sample();
  gc?.();
  return {
    value,
    ms,
    peakRssMb: peakRss / MB,
    peakHeapMb: peakHeap / MB,
    retainedHeapMb: process.memoryUsage().heapUsed / MB,
  };
}

async function run(task: Task): Promise<Measurement> {
  const runner = task.impl === 'quire' ? await quireRunner(task) : await kintoRunner(task);
  if (task.kind === 'cold') {
    const m = await measure(() => runner.sync());
    return { ...m, records: m.value.pulled, extra: [], requests };
  }
  if (task.kind === 'poll') {
    await runner.sync();
    const latencies: number[] = [];
    const before = requests;
    const m = await measure(async () => {
      for (let i = 0; i < task.count; i++) {
        const start = performance.now();
        const result = await runner.sync();
        if (result.pulled !== 0) throw new Error('poll found changes');
        latencies.push(performance.now() - start);
      }
    });
    return { ...m, records: 0, extra: latencies, requests: (requests - before) / task.count };
  }
  const writeStart = performance.now();
  await runner.createMany(task.count);
  const writeMs = performance.now() - writeStart;
  const m = await measure(() => runner.sync());
  if (m.value.pushed !== task.count) throw new Error(`${task.impl} pushed ${m.value.pushed} of ${task.count}`);
  return { ...m, records: m.value.pushed, extra: [writeMs], requests };
}

process.once('message', (task: Task) => {
  run(task).then(
    (measurement) => process.send!({ ok: true, measurement }, () => process.exit(0)),
    (error: Error) => process.send!({ ok: false, error: error.stack ?? String(error) }, () => process.exit(1)),
  );
});
