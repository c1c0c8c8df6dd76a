/**
 * What the browser benchmark's scenarios share: the bundle as shipped, the API and the bench page
 * served together (same origin: no CORS preflight in the counts), Chromium, fresh contexts, the
 * seeding and the table of results.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { buildServer, Storage } from '@quire/server';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserBundle } from '../../build/browser-bundle.js';
import { api, seedCollection } from '../seed.js';

export const packageRoot = fileURLToPath(new URL('../..', import.meta.url));
export const kintoBundle = join(packageRoot, 'node_modules/kinto/dist/kinto.min.js');
const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
export const seconds = (ms: number) => `${fmt(ms / 1000, 2)} s`;
export const millis = (ms: number) => `${fmt(ms, 1)} ms`;
export const kb = (bytes: number) => `${fmt(bytes / 1024, 1)} KB`;
export const clientName = (client: string) => (client === 'quire' ? 'Quire' : 'kinto 17');

export type Files = Map<string, { type: string; body: () => Buffer | string; encoding?: 'gzip' }>;

/** Everything a scenario needs. */
export interface Bench {
  browser: Browser;
  /** The page's origin (`http://quire.bench:<port>`, a secure context). */
  pageOrigin: string;
  /** The API, as Node reaches it. */
  url: string;
  bucket: string;
  storage: Storage;
  files: Files;
  clients: Array<'quire' | 'kinto'>;
  sizes: number[];
  options: { profile?: string | undefined };
  /** Adds a row to the table (and prints it at once). */
  row(cells: string[]): void;
}

/** The bundle as shipped (tsup, minified, Dexie inside: build/browser-bundle.ts), chunks included. */
export async function buildQuireBundle(
  outDir: string,
  minify: boolean,
): Promise<{ dir: string; chunks: string[]; raw: number; gzip: number }> {
  const { build } = await import('tsup');
  await build({
    ...browserBundle,
    entry: { 'quire-client': join(packageRoot, 'src/index.ts') },
    outDir,
    minify,
    sourcemap: false,
    config: false,
    silent: true,
    dts: false,
  });
  const code = readFileSync(join(outDir, 'quire-client.js'));
  const chunks = readdirSync(outDir).filter((name) => name.endsWith('.js'));
  return { dir: outDir, chunks, raw: code.length, gzip: gzipSync(code, { level: 9 }).length };
}

export const call = (url: string, method: string, path: string, body?: unknown) => api(url, AUTH, method, path, body);

/** The records both clients sync: small app records, one indexed field (`n`). */
export function benchRecord(i: number): Record<string, unknown> {
  return { n: i, title: `record ${i}`, done: i % 3 === 0 ? 1 : 0, tags: ['bench', `t${i % 10}`] };
}

export async function seed(
  bench: Pick<Bench, 'storage' | 'url' | 'bucket'>,
  collection: string,
  count: number,
  make: (i: number) => Record<string, unknown> = benchRecord,
): Promise<void> {
  await seedCollection(bench.storage, bench.url, AUTH, { bucket: bench.bucket, collection, count }, make);
}

/** The API (the Fastify app's router) and, under /bench/, the page, the bundles and the dumps. */
export async function serve(
  app: Awaited<ReturnType<typeof buildServer>>,
  files: Files,
): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0]!;
    if (!path.startsWith('/bench/')) return app.routing(request, response);
    const file = files.get(path);
    if (!file) return void response.writeHead(404).end();
    const encoding = file.encoding ? { 'Content-Encoding': file.encoding } : {};
    response.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store', ...encoding }).end(file.body());
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function openPage(context: BrowserContext, origin: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`));
  page.on('console', (message) => message.text().startsWith('[timing]') && console.log(message.text()));
  await page.goto(`${origin}/bench/`);
  await page.waitForFunction(() => (globalThis as { benchReady?: boolean }).benchReady === true);
  return page;
}

/** Runs one job of bench/browser/page.js in `page`. */
export function run<T>(page: Page, job: string, args: Record<string, unknown> = {}): Promise<T> {
  return page.evaluate(
    ([name, input]) =>
      (globalThis as unknown as { bench: (job: string, args: unknown) => Promise<unknown> }).bench(
        name as string,
        input,
      ),
    [job, args] as const,
  ) as Promise<T>;
}

/** Runs a job in a fresh browser context (an empty IndexedDB), with its CPU profile if asked. */
export async function inFreshContext<T>(bench: Bench, job: string, args: Record<string, unknown>): Promise<T> {
  const context = await bench.browser.newContext();
  try {
    const page = await openPage(context, bench.pageOrigin);
    const profile = bench.options.profile;
    if (!profile) return await run<T>(page, job, args);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
    const result = await run<T>(page, job, args);
    const { profile: data } = await cdp.send('Profiler.stop');
    mkdirSync(profile, { recursive: true });
    const file = join(profile, `${job.replace(':', '-')}-${Date.now()}.cpuprofile`);
    writeFileSync(file, JSON.stringify(data));
    console.log(`profile: ${file}`);
    return result;
  } finally {
    await context.close();
  }
}

/** Prints the table: names left-aligned, figures right-aligned. */
export function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((cells) => cells[i]!.length)));
  console.log('');
  for (const [index, cells] of rows.entries()) {
    console.log(
      cells
        .map((cell, i) => (i < 2 || i === 4 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    );
    if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}
