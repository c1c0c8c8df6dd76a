/**
 * Two versions of the server side by side (not a test): CPU per request and req/s of the
 * throughput bench's workloads, for this tree and another checkout of Quire (`--base`), each a
 * server child of its own tree's bench/throughput.ts, measured in alternating windows of 1 s (A
 * B B A …) so that both see the same load of whatever else runs on the machine. On a shared VM
 * whose load moves minute to minute, one-after-the-other runs of `pnpm bench` differ by more
 * than a change of a few percent of the server's CPU; alternated windows do not.
 *
 *   node --conditions=@quire/source --import tsx bench/compare.ts --base /path/to/other/checkout
 *        [--server postgresql|embedded] [--workloads get,poll] [--windows 10] [--connections 16] [--new-first]
 *
 * `--base` is the root of the other checkout (its packages/server/bench/throughput.ts serves).
 * Printed per workload: each side's req/s, server CPU per request and PostgreSQL CPU per request
 * (every postgres process of the machine, over that side's windows), and new / base.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startServerChild, stopServerChild } from './child-server.js';
import { childCpuMs, formatNumber, load, postgresCpuMs, runSql } from './support.js';
import { type ChildConfig, ITEMS_PATH, WORKLOAD_KEYS, WORKLOAD_NAMES, type WorkloadKey } from './throughput/config.js';
import { cannonOptions, send, setUp, workloads } from './throughput/workloads.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    server: { type: 'string', default: 'postgresql' },
    workloads: { type: 'string', default: 'get,poll' },
    windows: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    'new-first': { type: 'boolean', default: false },
    url: {
      type: 'string',
      default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
    },
  },
});
if (!values.base) throw new Error('--base DIR: the root of the checkout to compare with');
if (values.server !== 'postgresql' && values.server !== 'embedded') throw new Error('--server postgresql|embedded');
const keys = values.workloads.split(',') as WorkloadKey[];
for (const key of keys) if (!WORKLOAD_KEYS.includes(key)) throw new Error(`unknown workload ${key}`);
const windows = Number(values.windows);
const connections = Number(values.connections);

interface Side {
  name: 'base' | 'new';
  child: ChildProcess;
  origin: string;
  config: ChildConfig;
}

const THIS_ENTRY = fileURLToPath(new URL('./throughput.ts', import.meta.url));
const BASE_ENTRY = join(resolve(values.base), 'packages/server/bench/throughput.ts');

async function start(name: Side['name'], entry: string): Promise<Side> {
  const config: ChildConfig = {
    server: values.server as ChildConfig['server'],
    url: values.url,
    schema: `quire_bench_${randomBytes(4).toString('hex')}`,
    dataDir: values.server === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-compare-')) : '',
    workers: 1,
  };
  const { child, port } = await startServerChild(entry, config);
  const origin = `http://127.0.0.1:${port}`;
  await setUp(origin);
  return { name, child, origin, config };
}

interface Totals {
  count: number;
  seconds: number;
  serverMs: number;
  postgresMs: number;
}

async function window(side: Side, key: WorkloadKey, etag: string, totals: Totals): Promise<void> {
  const workload = workloads(etag).find((w) => w.key === key)!;
  const cannon = cannonOptions(side.origin, workload, connections, 1);
  const before = { server: await childCpuMs(side.child), postgres: await postgresCpuMs() };
  const result = await load(`${side.name} ${key}`, cannon, workload.expected);
  totals.count += result.count;
  totals.seconds += result.count / result.requestsPerSecond;
  totals.serverMs += (await childCpuMs(side.child)) - before.server;
  totals.postgresMs += (await postgresCpuMs()) - before.postgres;
}

async function main(): Promise<void> {
  const sides: Side[] = [];
  try {
    // The order the servers start in (and take turns in) shows in their figures: swap it between runs.
    if (values['new-first']) sides.push(await start('new', THIS_ENTRY), await start('base', BASE_ENTRY));
    else sides.push(await start('base', BASE_ENTRY), await start('new', THIS_ENTRY));
    const etags = new Map<Side, string>();
    for (const side of sides) {
      const etag = (await send(side.origin, 'GET', `${ITEMS_PATH}?_limit=1`, 200)).headers.get('etag');
      if (!etag) throw new Error(`${side.name}: no ETag on the list of records`);
      etags.set(side, etag);
    }
    console.log(`${values.server}, ${connections} connections, ${windows} windows of 1 s per side (A B B A …)`);
    for (const key of keys) {
      const totals = new Map(sides.map((side) => [side, { count: 0, seconds: 0, serverMs: 0, postgresMs: 0 }]));
      for (const side of sides) await window(side, key, etags.get(side)!, { ...totals.get(side)! }); // warm-up
      for (let i = 0; i < windows; i++) {
        const order = i % 2 === 0 ? sides : [...sides].reverse();
        for (const side of order) await window(side, key, etags.get(side)!, totals.get(side)!);
      }
      const figures = sides.map((side) => {
        const t = totals.get(side)!;
        return { rps: t.count / t.seconds, server: t.serverMs / t.count, postgres: t.postgresMs / t.count };
      });
      const byName = (name: Side['name']) => figures[sides.findIndex((side) => side.name === name)]!;
      const [base, next] = [byName('base'), byName('new')];
      const line = (name: string, f: typeof base) =>
        `${name} ${formatNumber(f.rps).padStart(6)} req/s, CPU per request ${formatNumber(f.server, 3)} ms server + ` +
        `${formatNumber(f.postgres, 3)} ms PostgreSQL`;
      console.log(`${WORKLOAD_NAMES[key]}:`);
      console.log(`  ${line('base', base)}`);
      console.log(`  ${line('new ', next)}`);
      const ratio = (a: number, b: number) => `×${formatNumber(a / b, 2)}`;
      console.log(`  new / base: req/s ${ratio(next.rps, base.rps)}, server CPU ${ratio(next.server, base.server)}`);
    }
  } finally {
    for (const side of sides) {
      await stopServerChild(side.child);
      if (side.config.dataDir) await rm(side.config.dataDir, { recursive: true, force: true });
      else await runSql(side.config.url, `DROP SCHEMA IF EXISTS ${side.config.schema} CASCADE`);
    }
  }
}

await main();
