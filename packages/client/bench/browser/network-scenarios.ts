/**
 * A first start on a phone's network (issue 41 item 4): Chromium's network emulation (CDP
 * `Network.emulateNetworkConditions`: 10 Mbit/s down, 5 up, 150 ms latency by default) on the
 * page, then a cold sync, a dump downloaded whole then loaded, and a dump loaded as it downloads
 * (`loadDump(response)`), each in a fresh context; when the first screen (20 records) can be read,
 * and when everything is held. The dump is served as a static file would be (gzip, and plain);
 * the API's listings go uncompressed (Quire does not compress responses: a proxy in front may).
 */
import { gzipSync } from 'node:zlib';
import { makeDump } from './app-scenarios.js';
import { type Bench, fmt, kb, openPage, run, seconds } from './harness.js';

export interface NetworkConditions {
  mbitDown: number;
  mbitUp: number;
  latencyMs: number;
}

interface FirstStart {
  firstScreenMs: number;
  doneMs: number;
  records: number;
  requests: number;
}

async function firstStart(bench: Bench, network: NetworkConditions, args: Record<string, unknown>) {
  const context = await bench.browser.newContext();
  try {
    const page = await openPage(context, bench.pageOrigin);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: network.latencyMs,
      downloadThroughput: (network.mbitDown * 1_000_000) / 8,
      uploadThroughput: (network.mbitUp * 1_000_000) / 8,
    });
    return await run<FirstStart>(page, 'quire:first-start', args);
  } finally {
    await context.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function networkScenario(bench: Bench, network: NetworkConditions, repeat: number): Promise<void> {
  const { url, bucket, row } = bench;
  const size = Math.max(...bench.sizes);
  const collection = `cold-${size}`;
  const dump = await makeDump(url, bucket, collection);
  const gzipped = gzipSync(dump, { level: 9 });
  bench.files.set('/bench/net-dump.json', { type: 'application/json', body: () => dump });
  bench.files.set('/bench/net-dump.json.gz', { type: 'application/json', body: () => gzipped, encoding: 'gzip' });
  const where = `${network.mbitDown} Mbit/s, ${network.latencyMs} ms`;
  console.log(`dump of ${fmt(size)} records: ${kb(dump.length)}, ${kb(gzipped.length)} gzip; network ${where}`);
  const modes: Array<[string, Record<string, unknown>]> = [
    ['cold sync', { mode: 'cold' }],
    ['dump, whole then loaded (gzip)', { mode: 'dump', dumpUrl: '/bench/net-dump.json.gz' }],
    ['dump, loaded as it downloads (gzip)', { mode: 'stream', dumpUrl: '/bench/net-dump.json.gz' }],
    ['dump, whole then loaded (plain)', { mode: 'dump', dumpUrl: '/bench/net-dump.json' }],
    ['dump, loaded as it downloads (plain)', { mode: 'stream', dumpUrl: '/bench/net-dump.json' }],
  ];
  const runs = new Map<string, FirstStart[]>(modes.map(([name]) => [name, []]));
  // Alternated, so that the machine's load falls on every mode alike.
  for (let round = 0; round < repeat; round++) {
    for (const [name, args] of modes) {
      const measured = await firstStart(bench, network, { bucket, collection, ...args });
      if (measured.records !== size) throw new Error(`${name}: ${measured.records} records held, not ${size}`);
      runs.get(name)!.push(measured);
    }
  }
  for (const [name, measured] of runs) {
    const screen = median(measured.map((m) => m.firstScreenMs));
    const done = median(measured.map((m) => m.doneMs));
    const all = measured.map((m) => `${seconds(m.firstScreenMs)}/${seconds(m.doneMs)}`).join(', ');
    row([
      `${name}, ${fmt(size)}, ${where}: first screen`,
      'Quire',
      seconds(screen),
      '',
      `all held ${seconds(done)}; ${all}`,
    ]);
  }
}
