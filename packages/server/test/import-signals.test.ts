/**
 * `quire import` is all or nothing under every signal (issue 37, item 2): the real CLI, fed on
 * standard input, is interrupted (SIGINT, SIGTERM) or killed (SIGKILL) in the middle of an import
 * of 60,000 records — what it read already written into the store's open transaction — on a store
 * that holds data (`--replace`). The store is then exactly as before (its export byte for byte),
 * the interrupted run says so (SIGINT, SIGTERM: exit 130 / 143), and the next import says that the
 * earlier one did not finish, then succeeds. On both stores.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { exportStore } from '../src/transfer/export.js';
import { importStore } from '../src/transfer/import.js';
import { postgresSkipReason } from './helpers/backends.js';
import { dropSchema, newSchemaName, PG_URL, runAsAdmin, testClient } from './helpers/postgres.js';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const RECORDS = 60_000;

/** An export of bucket `bucket` with collection c and `records` records. */
function exportText(bucket: string, records: number): string {
  const lines = [
    '{"format":"quire-export","version":1}',
    JSON.stringify({ object: { id: bucket, last_modified: 1 }, parent: '', resource: 'bucket' }),
    JSON.stringify({ object: { id: 'c', last_modified: 2 }, parent: `/buckets/${bucket}`, resource: 'collection' }),
  ];
  for (let i = 0; i < records; i++)
    lines.push(
      JSON.stringify({
        object: { id: `r${i}`, last_modified: 10 + i, title: `record ${i}`, tags: ['a', 'b'] },
        parent: `/buckets/${bucket}/collections/c`,
        permissions: { write: [`account:u${i % 100}`] },
        resource: 'record',
      }),
    );
  return `${lines.join('\n')}\n`;
}

async function exported(storage: Storage): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await exportStore(storage, out, { pageSize: 1000 });
  out.end();
  return Buffer.concat(chunks).toString('utf8');
}

interface Target {
  name: 'embedded' | 'postgresql';
  env: Record<string, string>;
  open: () => Promise<Storage>;
  /** Resolves once the import's transaction is open and waiting for more input (PostgreSQL tells). */
  midImport: () => Promise<void>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function quire(args: string[], env: Record<string, string>) {
  const { QUIRE_STORAGE_URL: _url, QUIRE_CONFIG: _config, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: packageDir,
    env: { ...inherited, QUIRE_LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdin!.on('error', () => {}); // the child may be gone while we write
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output: () => output };
}

function signalTests(target: () => Target) {
  let dir: string;
  let before: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'quire-import-signals-'));
    await writeFile(join(dir, 'new.ndjson'), exportText('new', RECORDS));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGKILL'] as const) {
    it(`${signal} mid-import: the store as before; the next run says so, and succeeds`, async () => {
      const { env, open, midImport } = target();
      // The store holds data: an earlier import.
      const storage = await open();
      try {
        await importStore(storage, Readable.from([exportText('old', 20)]), { batchSize: 100, replace: true });
        before = await exported(storage);
      } finally {
        await storage.close();
      }

      const importing = quire(['import', '--replace'], env);
      const text = exportText('new', RECORDS);
      // All but the last line: the import reads them, then waits for more with its transaction open.
      const cut = text.lastIndexOf('\n', text.length - 2) + 1;
      if (!importing.child.stdin!.write(text.slice(0, cut))) await once(importing.child.stdin!, 'drain');
      await midImport();
      importing.child.kill(signal);
      const { code, signal: killedBy } = await importing.exited;
      if (signal === 'SIGKILL') expect(killedBy).toBe('SIGKILL');
      else {
        expect(code, importing.output()).toBe(signal === 'SIGINT' ? 130 : 143);
        expect(importing.output()).toContain(`interrupted by ${signal}: nothing was imported`);
      }

      const after = await open();
      try {
        expect(await exported(after)).toBe(before);
      } finally {
        await after.close();
      }

      const next = quire(['import', '--replace', '--input', join(dir, 'new.ndjson')], env);
      next.child.stdin!.end();
      expect((await next.exited).code, next.output()).toBe(0);
      expect(next.output()).toContain('quire import: an earlier import (from standard input, started ');
      expect(next.output()).toContain(
        signal === 'SIGKILL'
          ? 'did not finish (killed, or its connection to the store lost): it changed nothing'
          : `did not finish (interrupted by ${signal}): it changed nothing`,
      );
      const loaded = await open();
      try {
        const text = await exported(loaded);
        expect(text).toContain(`"id":"r${RECORDS - 1}"`);
        expect(text).not.toContain('"id":"old"');
      } finally {
        await loaded.close();
      }
      // Said once: the successful import cleared the record of the unfinished one.
      const again = quire(['import', '--replace', '--input', join(dir, 'new.ndjson')], env);
      again.child.stdin!.end();
      expect((await again.exited).code, again.output()).toBe(0);
      expect(again.output()).not.toContain('an earlier import');
    }, 240_000);
  }
}

describe('quire import under signals [embedded]', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'quire-import-signals-data-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));
  signalTests(() => ({
    name: 'embedded',
    env: { QUIRE_DATA_DIR: dataDir },
    open: () => createSqliteStorage({ path: join(dataDir, EMBEDDED_FILE) }),
    // Lines are read and written as they come: the pipe drained, a moment for the last batch.
    midImport: () => new Promise((resolve) => setTimeout(resolve, 1_000)),
  }));
});

describe.skipIf(postgresSkipReason !== undefined)('quire import under signals [postgresql]', () => {
  const schema = newSchemaName();
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  beforeAll(() => runAsAdmin(`CREATE SCHEMA ${schema}`));
  afterAll(() => dropSchema(schema));
  signalTests(() => ({
    name: 'postgresql',
    env: { QUIRE_STORAGE_URL: url, QUIRE_USERID_HMAC_SECRET: 'signals-secret' },
    open: () => createPostgresStorage({ url: PG_URL, schema, autoMigrate: true, poolSize: 2 }),
    // The import's own connection, idle in its transaction: every line read is staged, none committed.
    midImport: async () => {
      const admin = testClient({ connectionString: PG_URL });
      await admin.connect();
      try {
        for (let attempt = 0; attempt < 300; attempt++) {
          const { rowCount } = await admin.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = 'quire import' AND state = 'idle in transaction'
             AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')`,
          );
          if (rowCount) return;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error('the import never waited mid-transaction');
      } finally {
        await admin.end();
      }
    },
  }));
});
