/**
 * The attachment tests' file stores: a local directory or a real S3-compatible server (s3rver),
 * each with the settings that point a Quire server at it and a way to see what it holds,
 * outside Quire (the directory's files; the bucket's objects), reserved `.quire/` notes apart.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll } from 'vitest';
import type { Settings } from '../../src/config.js';
import { s3Client, startS3Server, type S3Server } from './s3.js';

export type FileBackendName = 'local' | 's3';
export const FILE_BACKENDS: FileBackendName[] = ['local', 's3'];

export interface FileStore {
  readonly name: FileBackendName;
  /** Settings of a server on this store (attachments on, no periodic sweep). */
  settings(extra?: Partial<Settings>): Partial<Settings>;
  /** Every stored file's location (notes excluded). */
  list(): Promise<string[]>;
  /** The journal's notes. */
  notes(): Promise<string[]>;
  read(location: string): Promise<Buffer | null>;
}

async function walk(root: string, dir = root): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await walk(root, path)));
    else found.push(relative(root, path).split(sep).join('/'));
  }
  return found;
}

/** A fresh store for the enclosing block (a temporary directory, or a bucket on its own s3rver). */
export function useFileStore(name: FileBackendName): FileStore {
  let dir = '';
  let s3: S3Server | null = null;
  let client: S3Client | null = null;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'quire-files-'));
    if (name === 's3') {
      s3 = await startS3Server();
      client = s3Client(s3);
    }
  }, 30_000);
  afterAll(async () => {
    client?.destroy();
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function keys(): Promise<string[]> {
    if (!client || !s3) return (await walk(dir)).filter((key) => !key.startsWith('.quire/'));
    const found: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const item of page.Contents ?? []) if (item.Key) found.push(item.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found;
  }

  return {
    name,
    settings(extra = {}) {
      const where = s3 ? s3.settings : { attachment_base_path: dir };
      return { attachment_enabled: true, attachment_sweep_interval_seconds: 0, ...where, ...extra };
    },
    async list() {
      return (await keys()).filter((key) => !key.startsWith('.quire/')).sort();
    },
    async notes() {
      if (!s3) return (await walk(join(dir, '.quire', 'notes'))).sort();
      return (await keys())
        .filter((key) => key.startsWith('.quire/notes/'))
        .map((key) => key.slice('.quire/notes/'.length))
        .sort();
    },
    async read(location) {
      if (!client || !s3) return readFile(join(dir, ...location.split('/'))).catch(() => null);
      try {
        const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: location }));
        return Buffer.from(await got.Body!.transformToByteArray());
      } catch {
        return null;
      }
    },
  };
}
