/**
 * `client.remote`'s attachments against a real Quire server (files on local disk), on the
 * embedded store and on PostgreSQL: upload with fields and preconditions, download from
 * `base_url` or (private files) from the record, checked by hash, removal, and a server without
 * the capability (a typed error before any upload).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUnavailable } from '../../server/test/helpers/postgres.js';
import { AttachmentError, type FetchLike, PreconditionFailedError, type QuireClient } from '../src/index.js';
import { createCollection, makeClient, raw, startServer, type TestServer, uniqueName } from './support/server.js';

const pgSkip = await postgresUnavailable('attachments-remote.test.ts');
const STORES = [
  { store: 'embedded' as const, skip: false },
  { store: 'postgresql' as const, skip: pgSkip !== undefined },
];

const bytes = (text: string) => new TextEncoder().encode(text);
const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
    (name) => !name.startsWith('.quire') && statSync(join(dir, name)).isFile(),
  );
}

describe.each(STORES)('remote attachments ($store)', ({ store, skip }) => {
  let server: TestServer;
  let privateServer: TestServer;
  let files: string;
  let client: QuireClient;
  let bucket: string;

  beforeAll(async () => {
    if (skip) return;
    files = mkdtempSync(join(tmpdir(), 'quire-client-files-'));
    server = await startServer({ attachment_enabled: true, attachment_base_path: join(files, 'public') }, store);
    privateServer = await startServer(
      { attachment_enabled: true, attachment_base_path: join(files, 'private'), attachment_private: true },
      store,
    );
    client = makeClient(server.url);
    bucket = uniqueName('files');
    await createCollection(server.url, bucket, 'tasks');
  });

  afterAll(async () => {
    if (skip) return;
    await client?.close();
    await server?.close();
    await privateServer?.close();
    rmSync(files, { recursive: true, force: true });
  });

  it.skipIf(skip)('uploads a file with data and permissions, downloads it from base_url, removes it', async () => {
    const content = bytes('a photo, really');
    const progress: number[] = [];
    const info = await client.remote.addAttachment(bucket, 'tasks', 'task-1', content, {
      filename: 'photo "1".jpg',
      mimetype: 'image/jpeg',
      data: { title: 'with a photo' },
      permissions: { read: ['system.Everyone'] },
      onProgress: ({ loaded }) => progress.push(loaded),
    });
    expect(info).toMatchObject({
      filename: 'photo "1".jpg',
      mimetype: 'image/jpeg',
      size: content.length,
      hash: sha256(content),
    });
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(content.length);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    const record = await client.remote.getRecord(bucket, 'tasks', 'task-1');
    expect(record.data).toMatchObject({ title: 'with a photo', attachment: info });
    expect(record.permissions?.read).toContain('system.Everyone');

    const downloaded: number[] = [];
    const blob = await client.remote.getAttachment(bucket, 'tasks', 'task-1', {
      onProgress: ({ loaded }) => downloaded.push(loaded),
    });
    expect(new Uint8Array(await blob.arrayBuffer())).toEqual(content);
    expect(blob.type).toBe('image/jpeg');
    expect(downloaded.at(-1)).toBe(content.length);

    await client.remote.removeAttachment(bucket, 'tasks', 'task-1');
    expect((await client.remote.getRecord(bucket, 'tasks', 'task-1')).data.attachment).toBeNull();
    const none = await client.remote.getAttachment(bucket, 'tasks', 'task-1').catch((error) => error);
    expect(none).toBeInstanceOf(AttachmentError);
    expect(none.code).toBe('QUIRE_ERR_ATTACHMENT_NONE');
  });

  it.skipIf(skip)('a Blob or File keeps its type and name; a stale If-Match is a precondition failure', async () => {
    const file = new File([bytes('{"a":1}')], 'notes.json', { type: 'application/json' });
    const info = await client.remote.addAttachment(bucket, 'tasks', 'task-2', file);
    expect(info).toMatchObject({ filename: 'notes.json', mimetype: 'application/json', size: 7 });
    const { data } = await client.remote.getRecord(bucket, 'tasks', 'task-2');
    await client.remote.patchRecord(bucket, 'tasks', 'task-2', { title: 'changed elsewhere' });
    const stale = await client.remote
      .addAttachment(bucket, 'tasks', 'task-2', bytes('newer'), {
        filename: 'b.txt',
        mimetype: 'text/plain',
        ifMatch: data.last_modified,
      })
      .catch((error) => error);
    expect(stale).toBeInstanceOf(PreconditionFailedError);
    expect((await client.remote.getRecord(bucket, 'tasks', 'task-2')).data.attachment).toMatchObject({
      hash: info.hash,
    });
  });

  it.skipIf(skip)('reports an upload as it is sent (Node streams the body), the total once stored', async () => {
    const content = new Uint8Array(4 * 1024 * 1024).map((_, i) => i % 251);
    const progress: number[] = [];
    await client.remote.addAttachment(bucket, 'tasks', 'big', content, {
      filename: 'big.csv',
      mimetype: 'text/csv',
      onProgress: ({ loaded }) => progress.push(loaded),
    });
    expect(progress.length).toBeGreaterThan(3);
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(content.length);
    expect(progress.slice(0, -1).every((loaded) => loaded < content.length)).toBe(true);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    const blob = await client.remote.getAttachment(bucket, 'tasks', 'big');
    expect(blob.size).toBe(content.length);
  });

  it.skipIf(skip)('a file altered on the server fails its hash check', async () => {
    const info = await client.remote.addAttachment(bucket, 'tasks', 'task-3', bytes('original'), {
      filename: 'a.txt',
      mimetype: 'text/plain',
    });
    writeFileSync(join(files, 'public', info.location), 'tampered');
    const error = await client.remote.getAttachment(bucket, 'tasks', 'task-3').catch((failure) => failure);
    expect(error).toBeInstanceOf(AttachmentError);
    expect(error.code).toBe('QUIRE_ERR_ATTACHMENT_HASH');
  });

  it.skipIf(skip)('private files are downloaded from the record, by its readers only', async () => {
    const owner = makeClient(privateServer.url);
    const stranger = makeClient(privateServer.url, { user: 'mallory' });
    try {
      const privateBucket = uniqueName('private');
      await createCollection(privateServer.url, privateBucket, 'tasks');
      const content = bytes('secret scan');
      await owner.remote.addAttachment(privateBucket, 'tasks', 'scan', content, {
        filename: 'scan.pdf',
        mimetype: 'application/pdf',
      });
      const info = (await owner.remote.getRecord(privateBucket, 'tasks', 'scan')).data.attachment as {
        location: string;
      };
      expect((await raw(privateServer.url, 'GET', `/attachments/${info.location}`)).status).toBe(404);
      const blob = await owner.remote.getAttachment(privateBucket, 'tasks', 'scan');
      expect(new Uint8Array(await blob.arrayBuffer())).toEqual(content);
      const refused = await stranger.remote.getAttachment(privateBucket, 'tasks', 'scan').catch((error) => error);
      expect(refused.status).toBe(403);
    } finally {
      await owner.close();
      await stranger.close();
    }
  });

  it.skipIf(skip)('without the capability: a typed error and no upload sent', async () => {
    const plain = await startServer({}, store);
    const methods: string[] = [];
    const counting: FetchLike = (input, init) => {
      methods.push(`${init.method} ${new URL(input).pathname}`);
      return fetch(input, init);
    };
    const other = makeClient(plain.url, { fetch: counting });
    try {
      const error = await other.remote
        .addAttachment(bucket, 'tasks', 'x', bytes('x'), { filename: 'x.txt' })
        .catch((failure) => failure);
      expect(error).toBeInstanceOf(AttachmentError);
      expect(error.code).toBe('QUIRE_ERR_ATTACHMENT_UNSUPPORTED');
      expect(methods).toEqual(['GET /v1/']);
      expect(filesUnder(files).length).toBeGreaterThan(0);
    } finally {
      await other.close();
      await plain.close();
    }
  });
});
