/**
 * The benchmark's page (served by bench/browser.ts beside the API, same origin: no CORS
 * preflight distorts the request counts). Each function runs one job in this page's real
 * IndexedDB with Quire's client (`./quire-client.js`, the minified browser bundle) or the
 * original `kinto` client (`./kinto.min.js`, global `Kinto`), and returns its timings.
 */
import { createClient, deriveKey, encryptionTransformer } from './quire-client.js';

const AUTH = { type: 'basic', username: 'bench', password: 'bench' };
const KINTO_HEADERS = { Authorization: `Basic ${btoa('bench:bench')}` };
const remote = `${location.origin}/v1`;

let requests = 0;
/** Counts the requests each client sends (both go through this fetch). */
function countingFetch(input, init) {
  requests++;
  return fetch(input, init);
}

function quireCollection(bucket, name, options = {}) {
  const client = createClient({ remote, auth: AUTH, fetch: countingFetch, timeoutMs: 600_000, ...options.client });
  return {
    client,
    collection: client
      .bucket(bucket)
      .collection(name, { indexes: ['n'], strategy: 'server-wins', ...options.collection }),
  };
}

function kintoCollection(bucket, name, remoteTransformers = []) {
  const Kinto = globalThis.Kinto.default;
  const kinto = new Kinto({ remote, bucket, headers: KINTO_HEADERS, timeout: 600_000 });
  kinto.api.http.fetchFunc = countingFetch;
  return kinto.collection(name, { remoteTransformers });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const p95 = (values) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.95))];

/** The highest JS heap use while `fn` runs (performance.memory, precise with Chromium's flag). */
async function peakHeap(fn) {
  let peak = performance.memory?.usedJSHeapSize ?? 0;
  const sample = () => {
    peak = Math.max(peak, performance.memory?.usedJSHeapSize ?? 0);
  };
  const timer = setInterval(sample, 10);
  try {
    const value = await fn();
    sample();
    return { value, peak };
  } finally {
    clearInterval(timer);
  }
}

/**
 * End-to-end encryption for the original client, as an app would write it as a remote
 * transformer: the same format as Quire's encryptionTransformer (AES-GCM of the fields as JSON,
 * the id as additional data), with a key derived once.
 */
function kintoEncryption(key) {
  const encoder = new TextEncoder();
  const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return {
    async encode(record) {
      const { id, last_modified, ...fields } = record;
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const plain = encoder.encode(JSON.stringify(fields));
      const sealed = await crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: encoder.encode(id) },
        key,
        plain,
      );
      const ciphertext = btoa(String.fromCharCode(...new Uint8Array(sealed)));
      return { id, last_modified, quire_e2e: 1, iv: btoa(String.fromCharCode(...iv)), ciphertext };
    },
    async decode(record) {
      if (record.deleted) return record;
      const algorithm = { name: 'AES-GCM', iv: bytes(record.iv), additionalData: encoder.encode(record.id) };
      const plain = await crypto.subtle.decrypt(algorithm, key, bytes(record.ciphertext));
      return { ...JSON.parse(new TextDecoder().decode(plain)), id: record.id, last_modified: record.last_modified };
    },
  };
}

/** The key of an encrypted collection, derived as Quire derives it (PBKDF2, 600,000 rounds); its time. */
async function collectionKey(bucket, name, passphrase) {
  const start = performance.now();
  const key = await deriveKey(passphrase, `quire-e2e:${bucket}/${name}`);
  return { key, deriveMs: performance.now() - start };
}

async function timed(fn) {
  const before = requests;
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, requests: requests - before, value };
}

async function quireSync(collection) {
  const result = await collection.sync();
  if (!result.ok) throw new Error(`quire sync: ${JSON.stringify(result.errors.slice(0, 2))}`);
  return result;
}

async function kintoSync(collection) {
  const result = await collection.sync({ strategy: globalThis.Kinto.default.syncStrategy.SERVER_WINS });
  if (!result.ok) throw new Error(`kinto sync: ${JSON.stringify(result.errors.slice(0, 2))}`);
  return result;
}

const jobs = {
  /**
   * Cold sync of a collection into an empty replica, its peak JS heap; then an indexed query and
   * no-change polls. With `passphrase`: an encrypted collection (the key derived first, timed apart).
   */
  async 'quire:cold'({ bucket, collection: name, polls, lookup, passphrase }) {
    const secret = passphrase ? await collectionKey(bucket, name, passphrase) : null;
    const transformers = secret ? [encryptionTransformer({ key: secret.key })] : [];
    const { collection, client } = quireCollection(bucket, name, { collection: { transformers } });
    const { value: cold, peak } = await peakHeap(() => timed(() => quireSync(collection)));
    const query = await timed(() => collection.list({ index: 'n', equals: lookup }));
    if (query.value.length !== 1) throw new Error(`quire query found ${query.value.length}`);
    const latencies = [];
    const before = requests;
    for (let i = 0; i < polls; i++) {
      const poll = await timed(() => quireSync(collection));
      if (poll.value.pulled !== 0) throw new Error('poll pulled changes');
      latencies.push(poll.ms);
    }
    const count = await collection.count();
    await client.close();
    return {
      coldMs: cold.ms,
      coldRequests: cold.requests,
      records: count,
      queryMs: query.ms,
      pollP50: median(latencies),
      pollP95: p95(latencies),
      pollRequests: (requests - before) / polls,
      peakHeap: peak,
      deriveMs: secret?.deriveMs ?? 0,
    };
  },
  async 'kinto:cold'({ bucket, collection: name, polls, lookup, passphrase }) {
    const secret = passphrase ? await collectionKey(bucket, name, passphrase) : null;
    const collection = kintoCollection(bucket, name, secret ? [kintoEncryption(secret.key)] : []);
    const { value: cold, peak } = await peakHeap(() => timed(() => kintoSync(collection)));
    const query = await timed(() => collection.list({ filters: { n: lookup } }));
    if (query.value.data.length !== 1) throw new Error(`kinto query found ${query.value.data.length}`);
    const latencies = [];
    const before = requests;
    for (let i = 0; i < polls; i++) latencies.push((await timed(() => kintoSync(collection))).ms);
    const { data } = await collection.list();
    return {
      coldMs: cold.ms,
      coldRequests: cold.requests,
      records: data.length,
      queryMs: query.ms,
      pollP50: median(latencies),
      pollP95: p95(latencies),
      pollRequests: (requests - before) / polls,
      peakHeap: peak,
      deriveMs: secret?.deriveMs ?? 0,
    };
  },

  /** N local creates, awaited one by one, then N more issued in one tick; then their push. */
  async 'quire:push'({ bucket, collection: name, count }) {
    const { collection, client } = quireCollection(bucket, name);
    await quireSync(collection);
    const sequential = await timed(async () => {
      for (let i = 0; i < count; i++) await collection.create({ n: i, title: `local ${i}`, done: 0 });
    });
    const push = await timed(() => quireSync(collection));
    if (push.value.pushed !== count) throw new Error(`quire pushed ${push.value.pushed}`);
    const together = await timed(() =>
      Promise.all(
        Array.from({ length: count }, (_, i) => collection.create({ n: count + i, title: `local ${i}`, done: 0 })),
      ),
    );
    await quireSync(collection);
    await client.close();
    return { createMs: sequential.ms, pushMs: push.ms, pushRequests: push.requests, togetherMs: together.ms };
  },
  async 'kinto:push'({ bucket, collection: name, count }) {
    const collection = kintoCollection(bucket, name);
    await kintoSync(collection);
    const sequential = await timed(async () => {
      for (let i = 0; i < count; i++) await collection.create({ n: i, title: `local ${i}`, done: 0 });
    });
    const push = await timed(() => kintoSync(collection));
    if (push.value.published.length !== count) throw new Error(`kinto pushed ${push.value.published.length}`);
    const together = await timed(() =>
      Promise.all(
        Array.from({ length: count }, (_, i) => collection.create({ n: count + i, title: `local ${i}`, done: 0 })),
      ),
    );
    await kintoSync(collection);
    return { createMs: sequential.ms, pushMs: push.ms, pushRequests: push.requests, togetherMs: together.ms };
  },

  /** Loads a dump (fetched first, not timed) into an empty replica, then polls once. */
  async 'quire:dump'({ bucket, collection: name, dumpUrl }) {
    const dump = await (await fetch(dumpUrl)).json();
    const { collection, client } = quireCollection(bucket, name);
    if (typeof collection.loadDump !== 'function') return { skipped: 'no loadDump in this version' };
    const load = await timed(() => collection.loadDump(dump));
    const first = await timed(() => quireSync(collection));
    const count = await collection.count();
    await client.close();
    return {
      loadMs: load.ms,
      records: count,
      firstSyncMs: first.ms,
      firstSyncRequests: first.requests,
      pulled: first.value.pulled,
    };
  },
  /**
   * A first start on a slow network (the page's network emulated by the scenario): `cold` syncs,
   * `dump` downloads the dump whole then loads it, `stream` loads it as it downloads. When the
   * first screen (the 20 first records by `n`) can be read, and when everything is held.
   */
  async 'quire:first-start'({ bucket, collection: name, mode, dumpUrl, screen = 20 }) {
    const { collection, client } = quireCollection(bucket, name);
    const start = performance.now();
    let firstScreenMs = null;
    let loading = true;
    const watch = (async () => {
      while (loading) {
        const rows = await collection.list({ index: 'n', above: -Infinity, limit: screen });
        if (rows.length === screen) {
          firstScreenMs = performance.now() - start;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    if (mode === 'cold') await quireSync(collection);
    else if (mode === 'dump') await collection.loadDump(await (await fetch(dumpUrl)).json());
    else await collection.loadDump(await fetch(dumpUrl));
    const doneMs = performance.now() - start;
    loading = false;
    await watch;
    const records = await collection.count();
    await client.close();
    return { firstScreenMs: firstScreenMs ?? doneMs, doneMs, records, requests };
  },
  async 'kinto:dump'({ bucket, collection: name, dumpUrl, firstSync }) {
    const dump = await (await fetch(dumpUrl)).json();
    const collection = kintoCollection(bucket, name);
    const load = await timed(() => collection.importBulk(dump.data));
    if (!firstSync) return { loadMs: load.ms, records: (await collection.list()).data.length };
    const first = await timed(() => kintoSync(collection));
    const { data } = await collection.list();
    return {
      loadMs: load.ms,
      records: data.length,
      firstSyncMs: first.ms,
      firstSyncRequests: first.requests,
      pulled: first.value.created.length + first.value.updated.length,
    };
  },

  /**
   * The floor of a dump load: the same records put with IndexedDB itself (no Dexie, no SDK), into
   * a store with the replica's indexes (`last_modified`, `n`), in transactions of 5,000.
   */
  async 'floor:dump'({ dumpUrl }) {
    const dump = await (await fetch(dumpUrl)).json();
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open('floor', 1);
      request.onupgradeneeded = () => {
        const store = request.result.createObjectStore('records', { keyPath: 'id' });
        store.createIndex('last_modified', 'last_modified');
        store.createIndex('n', 'n');
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const load = await timed(async () => {
      for (let start = 0; start < dump.data.length; start += 5000) {
        await new Promise((resolve, reject) => {
          const transaction = db.transaction(['records'], 'readwrite');
          const store = transaction.objectStore('records');
          for (const record of dump.data.slice(start, start + 5000)) store.put(record);
          transaction.oncomplete = resolve;
          transaction.onerror = () => reject(transaction.error);
        });
      }
    });
    db.close();
    return { loadMs: load.ms, records: dump.data.length };
  },

  /** A tab of an app with auto-sync and live changes on one collection (the tabs scenario). */
  async 'quire:tab'({ bucket, collection: name }) {
    const { collection, client } = quireCollection(bucket, name);
    globalThis.benchTab = { collection, client };
    const mode = await collection.startAutoSync({ intervalMs: 0 });
    return { mode };
  },
  async 'quire:tab-count'({ id }) {
    const record = await globalThis.benchTab.collection.get(id);
    return { found: record !== undefined, requests };
  },
  async 'quire:tab-close'() {
    await globalThis.benchTab?.client.close();
    return {};
  },

  /** Started with no network: how many requests in `ms` (the page counts them, failed ones included). */
  async 'quire:offline'({ bucket, collection: name, ms }) {
    const { collection, client } = quireCollection(bucket, name);
    const before = requests;
    await collection.startAutoSync();
    await new Promise((resolve) => setTimeout(resolve, ms));
    const attempts = requests - before;
    await client.close();
    return { attempts, online: navigator.onLine };
  },
};

globalThis.bench = async (job, args) => {
  const fn = jobs[job];
  if (!fn) throw new Error(`unknown job ${job}`);
  return fn(args);
};
globalThis.resetRequests = () => {
  requests = 0;
};
globalThis.benchReady = true;
