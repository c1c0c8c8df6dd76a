/**
 * Attachment throughput (not a test): uploads and downloads of 1 MB and 100 MB files through a
 * Quire server (a child process, embedded store) to a local directory and to an S3-compatible
 * server (s3rver, in this process), next to the ceiling measured in the same run on the same
 * bytes — `cp` of the file for the directory, a plain S3 PUT / GET (AWS SDK, same part size)
 * for S3 — and the server's peak RSS while it works.
 *
 *   cd packages/server && node --conditions=@quire/source --import tsx bench/attachments.ts \
 *     [--small 20] [--large 3]
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { request } from 'undici';
import { buildServer } from '../src/app.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { s3Client, startS3Server } from '../test/helpers/s3.js';
import { childConfig, isServerChild, serveInChild, startServerChild, stopServerChild } from './child-server.js';
import { AUTH, benchSettings, formatNumber } from './support.js';

const MB = 1024 * 1024;

interface ChildConfig {
  dataDir: string;
  s3?: Record<string, unknown>;
}

if (isServerChild()) {
  const config = childConfig<ChildConfig>();
  const storage = await createSqliteStorage({ path: join(config.dataDir, 'quire.sqlite') });
  const settings = benchSettings({
    attachment_enabled: true,
    attachment_max_size: null,
    attachment_extensions: 'any',
    attachment_sweep_interval_seconds: 0,
    attachment_upload_idle_timeout_seconds: 600,
    attachment_base_path: join(config.dataDir, 'files'),
    ...(config.s3 ?? {}),
  });
  await serveInChild(await buildServer({ settings, storage, logger: false }), storage);
} else {
  await main();
}

function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
}

/** Runs `fn` `times` times; MB/s over all runs, and the peak RSS of `pid` meanwhile. */
async function timed(pid: number | null, bytes: number, times: number, fn: (index: number) => Promise<void>) {
  const baseline = pid ? rssOf(pid) : 0;
  let peak = baseline;
  const sampler = pid ? setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20) : null;
  const started = performance.now();
  for (let index = 0; index < times; index++) await fn(index);
  const seconds = (performance.now() - started) / 1000;
  if (sampler) clearInterval(sampler);
  return { mbps: (bytes * times) / MB / seconds, rss: peak / MB, rise: (peak - baseline) / MB };
}

function multipartHead(boundary: string, filename: string): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="${filename}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
}

async function* formBody(path: string, boundary: string): AsyncIterable<Buffer> {
  yield multipartHead(boundary, 'file.bin');
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
  yield Buffer.from(`\r\n--${boundary}--\r\n`);
}

type S3 = Awaited<ReturnType<typeof startS3Server>>;
type Backend = 'local' | 's3';
type Figures = Awaited<ReturnType<typeof timed>>;

/** The files of one run: `times` files of `size` MB, each a copy of `source`. */
interface Files {
  source: string;
  size: 1 | 100;
  times: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { small: { type: 'string', default: '20' }, large: { type: 'string', default: '3' } },
  });
  const runs = { 1: Number(values.small), 100: Number(values.large) };
  const dir = await mkdtemp(join(tmpdir(), 'quire-bench-attachments-'));
  const s3 = await startS3Server();
  const client = s3Client(s3);
  const rows: string[] = [];
  try {
    for (const size of [1, 100] as const) {
      const source = join(dir, `source-${size}.bin`);
      await writeFile(source, randomBytes(size * MB));
      for (const backend of ['local', 's3'] as const) {
        rows.push(await backendRow(dir, s3, client, backend, { source, size, times: runs[size] }));
        console.log(rows.at(-1));
      }
    }
  } finally {
    client.destroy();
    await s3.close();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(
    '\n| Files | Backend | Upload MB/s | Ceiling MB/s | Download MB/s | Ceiling MB/s | Server RSS peak (rise) |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

/** A server on `backend` in a child process: its upload and download figures beside the ceiling's, as a row. */
async function backendRow(dir: string, s3: S3, client: S3Client, backend: Backend, files: Files): Promise<string> {
  const { size, times } = files;
  const dataDir = await mkdtemp(join(dir, `${backend}-`));
  const { child, port } = await startServerChild(new URL(import.meta.url).pathname, {
    dataDir,
    ...(backend === 's3' ? { s3: s3.settings } : {}),
  } satisfies ChildConfig);
  try {
    const { upload, download } = await quireFigures(`http://127.0.0.1:${port}/v1`, child.pid!, files);
    // The ceiling, same bytes, same run.
    const ceiling = backend === 'local' ? await cpFigures(dataDir, files) : await s3Figures(s3, client, files);
    const ceilingName = backend === 'local' ? 'cp' : 'S3 PUT/GET';
    const row =
      `| ${size} MB × ${times} | ${backend} | ${formatNumber(upload.mbps)} | ` +
      `${formatNumber(ceiling.up.mbps)} (${ceilingName}) | ${formatNumber(download.mbps)} | ` +
      `${formatNumber(ceiling.down.mbps)} | ${formatNumber(upload.rss)} MB (+${formatNumber(upload.rise, 1)}) |`;
    await stat(dataDir);
    return row;
  } finally {
    await stopServerChild(child);
  }
}

/** Uploads through Quire (multipart, streamed from the file), then downloads from `base_url`. */
async function quireFigures(
  base: string,
  pid: number,
  { source, size, times }: Files,
): Promise<{ upload: Figures; download: Figures }> {
  for (const path of ['/buckets/b', '/buckets/b/collections/c'])
    await (await request(`${base}${path}`, { method: 'PUT', headers: { authorization: AUTH } })).body.text();
  const locations: string[] = [];
  const upload = await timed(pid, size * MB, times, async (index) => {
    const boundary = `bench${index}`;
    const response = await request(`${base}/buckets/b/collections/c/records/r${index}/attachment`, {
      method: 'POST',
      headers: { authorization: AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: Readable.from(formBody(source, boundary)),
    });
    const body = (await response.body.json()) as { location: string };
    if (response.statusCode !== 201) throw new Error(`upload: ${response.statusCode} ${JSON.stringify(body)}`);
    locations.push(body.location);
  });
  const capability = (
    (await (await request(`${base}/`)).body.json()) as { capabilities: { attachments: { base_url: string } } }
  ).capabilities.attachments;
  const download = await timed(pid, size * MB, times, async (index) => {
    const response = await request(new URL(locations[index]!, capability.base_url).toString());
    let received = 0;
    for await (const chunk of response.body) received += (chunk as Buffer).length;
    if (received !== size * MB) throw new Error(`download: ${response.statusCode}, ${received} bytes`);
  });
  return { upload, download };
}

/** The local ceiling: `cp` of the file into the data directory, and back to /dev/null. */
async function cpFigures(dataDir: string, { source, size, times }: Files): Promise<{ up: Figures; down: Figures }> {
  const up = await timed(
    null,
    size * MB,
    times,
    async (index) => void execFileSync('cp', [source, join(dataDir, `copy-${index}.bin`)]),
  );
  const down = await timed(
    null,
    size * MB,
    times,
    async (index) => void execFileSync('cp', [join(dataDir, `copy-${index}.bin`), '/dev/null']),
  );
  return { up, down };
}

/** The S3 ceiling: a plain PUT (lib-storage, same 5 MiB parts) and GET of the same bytes. */
async function s3Figures(
  s3: S3,
  client: S3Client,
  { source, size, times }: Files,
): Promise<{ up: Figures; down: Figures }> {
  const up = await timed(null, size * MB, times, async (index) => {
    await new Upload({
      client,
      params: { Bucket: s3.bucket, Key: `ceiling/${size}-${index}`, Body: createReadStream(source) },
      partSize: 5 * MB,
      queueSize: 1,
    }).done();
  });
  const down = await timed(null, size * MB, times, async (index) => {
    const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `ceiling/${size}-${index}` }));
    for await (const _chunk of got.Body as AsyncIterable<Buffer>);
  });
  return { up, down };
}
