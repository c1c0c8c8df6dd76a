/**
 * What one write costs the database (not a test): the statements and round trips of a POST of
 * one record and of a /batch of 25 creations, as the throughput bench sends them, on PostgreSQL.
 *
 *   cd packages/server && node --conditions=@quire/source --import tsx bench/write-statements.ts [--url URL]
 *
 * Every statement the pg driver sends is recorded (its first 100 characters), and every socket
 * write to PostgreSQL (a round trip starts with one: statements corked together leave in one).
 * Then the CPU each costs, sent one after the other through `inject` (ROUNDS=400 POSTs, a tenth
 * as many batches): this process's, and its PostgreSQL backends' (from /proc, Linux), which
 * other work on the machine does not blur as the throughput bench's all-backends figure is.
 */
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { AUTH, benchSettings } from './support.js';
import { BATCH_SIZE, BATCHES_SUBPATH, BUCKET_PATH, JSON_HEADERS, WRITES_PATH } from './throughput/config.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
  },
});

let recording = false;
const statements: string[] = [];
let socketWrites = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function logged(this: pg.Client, config: unknown, ...rest: unknown[]) {
  const text = typeof config === 'string' ? config : (config as { text?: string })?.text;
  if (recording && typeof text === 'string') statements.push(text.replace(/\s+/g, ' ').slice(0, 100));
  return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
} as typeof pg.Client.prototype.query;
for (const method of ['_write', '_writev'] as const) {
  const original = net.Socket.prototype[method] as (...args: unknown[]) => unknown;
  net.Socket.prototype[method] = function counted(this: net.Socket, ...args: unknown[]) {
    if (recording && String(this.remotePort) === (new URL(values.url).port || '5432')) socketWrites++;
    return original.apply(this, args);
  } as never;
}

const schema = `quire_stmts_${process.pid}`;
const admin = new pg.Client({ connectionString: values.url });
await admin.connect();
await admin.query(`CREATE SCHEMA ${schema}`);
const url = new URL(values.url);
url.searchParams.set('options', `-c search_path=${schema}`);
url.searchParams.set('application_name', schema);
const storage = await createPostgresStorage({ url: url.toString(), autoMigrate: true, poolSize: 10 });
const app = await buildServer({ settings: benchSettings(), storage, logger: false });
const send = async (method: string, path: string, body: unknown) => {
  const response = await app.inject({
    method: method as 'POST',
    url: path,
    headers: { authorization: AUTH, ...JSON_HEADERS },
    payload: JSON.stringify(body),
  });
  if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${response.body}`);
};
try {
  const everyone = { permissions: { read: ['system.Authenticated'], write: ['system.Authenticated'] } };
  await send('PUT', BUCKET_PATH, everyone);
  for (const name of ['writes', 'batches']) await send('PUT', `${BUCKET_PATH}/collections/${name}`, {});
  const batch = {
    defaults: { method: 'POST', path: BATCHES_SUBPATH },
    requests: Array.from({ length: BATCH_SIZE }, (_, i) => ({ body: { data: { title: 'x', n: i } } })),
  };
  const measure = async (name: string, run: () => Promise<void>) => {
    for (let i = 0; i < 3; i++) await run(); // caches warm
    statements.length = 0;
    socketWrites = 0;
    recording = true;
    await run();
    recording = false;
    console.log(`${name}: ${statements.length} statements, ${socketWrites} socket writes`);
    for (const text of statements) console.log(`  ${text}`);
  };
  /** CPU of this process and of its PostgreSQL backends per call of `run`, sequential calls. */
  const cost = async (name: string, count: number, run: () => Promise<void>) => {
    const pids = (
      await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [schema])
    ).rows.map((row) => row.pid);
    const backendMs = async () => {
      let ticks = 0;
      for (const pid of pids) {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
      }
      return ticks * 10;
    };
    const [cpu0, pg0, t0] = [process.cpuUsage(), await backendMs(), performance.now()];
    for (let i = 0; i < count; i++) await run();
    const [cpu, pgMs, ms] = [process.cpuUsage(cpu0), (await backendMs()) - pg0, performance.now() - t0];
    const per = (value: number) => (value / count).toFixed(3);
    console.log(
      `${name}: ${per(ms)} ms each, CPU ${per((cpu.user + cpu.system) / 1000)} ms server + ` +
        `${per(pgMs)} ms PostgreSQL (${pids.length} backends, ${count} sequential)`,
    );
  };
  await measure('POST one', () => send('POST', WRITES_PATH, { data: { title: 'x', n: 1 } }));
  await measure(`batch of ${BATCH_SIZE}`, () => send('POST', '/v1/batch', batch));
  const rounds = Number(process.env.ROUNDS ?? 400);
  await cost('POST one', rounds, () => send('POST', WRITES_PATH, { data: { title: 'x', n: 1 } }));
  await cost(`batch of ${BATCH_SIZE}`, Math.ceil(rounds / 10), () => send('POST', '/v1/batch', batch));
} finally {
  await app.close();
  await storage.close();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
}
