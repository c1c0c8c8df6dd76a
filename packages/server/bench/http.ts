/**
 * HTTP benchmark of Quire (not a test).
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/http.ts \
 *     [--backend postgresql|embedded] [--records N] [--duration S] [--connections C] \
 *     [--samples K] [--url postgresql://postgres@127.0.0.1:5432/test]
 *   or from the root: pnpm --filter @quire/server bench:pages --backend embedded --records 20000
 * (tsx is a devDependency of this package: `--import tsx` resolves from packages/server only.)
 *
 * Defaults: postgresql, 1,000,000 records (embedded: 100,000), 5 s × 20 connections per
 * autocannon run, 50 timed requests per page measurement.
 *
 * Measures, against a collection of N records:
 *   - single-record GET requests/s (random records), with autocannon;
 *   - `_since` polling requests/s: nothing changed (If-None-Match → 304), and a small change set;
 *   - latency (p50/p95 over K sequential requests) of the FIRST and of the LAST page of the
 *     list, for two page sizes, the last page reached with the server's own keyset token.
 *
 * The server runs in a CHILD process: autocannon parses every response and would otherwise
 * compete with the server for one event loop, so the numbers would measure both at once.
 *
 * Loading N records through HTTP would take far too long. On PostgreSQL they are inserted with
 * SQL, in the exact shape the SQL storage writes them (see storage/sql/migrations/001-initial.sql
 * and sql/objects.ts): one `objects` row per record (attributes in `data` without id and
 * last_modified, timestamps unique in the scope), the author's `write` ACE on each record, and
 * the scope's `timestamps` row at the newest timestamp. On the embedded store (SQLite, in
 * process) the storage's own API loads the same, chunk by chunk. The bucket and the collection
 * are created through the HTTP API (in process, with inject) beforehand.
 *
 * PostgreSQL: a fresh schema `quire_bench_<random>`, dropped at the end. Embedded: a data
 * directory in the temp folder (the child must reopen what the parent loaded), removed at the
 * end.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildServer } from '../src/app.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { childConfig, isServerChild, serveInChild, startServerChild, stopServerChild } from './child-server.js';
import { getRow, pageRows, pollRows, type Row } from './http/measure.js';
import { type Backend, type ChildConfig, cleanUp, loadStore } from './http/store.js';
import { benchSettings, formatNumber } from './support.js';

// ---------------------------------------------------------------------------------------------
// Child: the server.

async function serve(config: ChildConfig): Promise<void> {
  const storage: Storage =
    config.backend === 'postgresql'
      ? await createPostgresStorage({ url: config.url, schema: config.schema, poolSize: 10 })
      : await createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
  await serveInChild(await buildServer({ settings: benchSettings(), storage, logger: false }), storage);
}

// ---------------------------------------------------------------------------------------------
// Parent: load, start the child, measure, clean up.

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'postgresql' },
      records: { type: 'string' },
      duration: { type: 'string', default: '5' },
      connections: { type: 'string', default: '20' },
      samples: { type: 'string', default: '50' },
      url: { type: 'string', default: process.env.QUIRE_BENCH_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    },
  });
  const backend = values.backend as Backend;
  if (backend !== 'postgresql' && backend !== 'embedded') throw new Error(`--backend must be postgresql or embedded`);
  const total = Number(values.records ?? (backend === 'postgresql' ? 1_000_000 : 100_000));
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const samples = Number(values.samples);
  if (![total, duration, connections, samples].every((v) => Number.isSafeInteger(v) && v > 0))
    throw new Error('bad numeric option');

  const config: ChildConfig = {
    backend,
    url: values.url,
    schema: `quire_bench_${randomBytes(4).toString('hex')}`,
    dataDir: backend === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-bench-')) : '',
  };
  const where = backend === 'postgresql' ? `schema ${config.schema}` : config.dataDir;
  console.log(`Quire HTTP benchmark: ${backend}, ${formatNumber(total)} records, ${where}`);

  let child: ChildProcess | null = null;
  const rows: Row[] = [];
  try {
    await loadStore(config, total);
    // The server, in its own process.
    const started = performance.now();
    const server = await startServerChild(fileURLToPath(import.meta.url), config);
    child = server.child;
    const origin = `http://127.0.0.1:${server.port}`;
    console.log(
      `  server listening on ${origin} (pid ${child.pid}) after ${formatNumber(performance.now() - started)} ms`,
    );
    rows.push(...(await pageRows(origin, total, samples)));
    const cannon = { url: origin, connections, duration };
    rows.push(await getRow(cannon, total));
    rows.push(...(await pollRows(origin, cannon, total)));
  } finally {
    if (child) await stopServerChild(child);
    await cleanUp(config);
  }

  const machine = `${process.version}, ${(await import('node:os')).cpus().length} CPUs`;
  console.log(
    `\nResults: ${backend}, ${formatNumber(total)} records; autocannon ${connections} connections × ${duration} s; ` +
      `page latency over ${samples} sequential requests; ${machine}\n`,
  );
  const widths = [Math.max(...rows.map((r) => r.scenario.length), 8), Math.max(...rows.map((r) => r.value.length), 5)];
  const line = (a: string, b: string, c: string) => `| ${a.padEnd(widths[0]!)} | ${b.padStart(widths[1]!)} | ${c}`;
  console.log(line('Scenario', 'Value', 'Detail'));
  console.log(`|${'-'.repeat(widths[0]! + 2)}|${'-'.repeat(widths[1]! + 2)}|${'-'.repeat(40)}`);
  for (const row of rows) console.log(line(row.scenario, row.value, row.detail));
}

if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
