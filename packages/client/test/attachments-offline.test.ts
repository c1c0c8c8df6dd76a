/**
 * Offline attachments (`@quire/client/attachments`) against a real Quire server with files on
 * local disk, on the embedded store and on PostgreSQL: files attached and detached offline and
 * sent by the next sync, exactly once across a lost response, a record changed remotely while its
 * file waited (a conflict like any other), the download policies, the cache's cap, progress
 * events, and a server without the capability.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUnavailable } from '../../server/test/helpers/postgres.js';
import { type AttachmentEvent, attachments } from '../src/attachments/index.js';
import {
  AttachmentError,
  type Collection,
  createManualOnlineSource,
  type FetchLike,
  type QuireClient,
} from '../src/index.js';
import { createCollection, makeClient, raw, startServer, type TestServer, uniqueName } from './support/server.js';

const pgSkip = await postgresUnavailable('attachments-offline.test.ts');
const STORES = [
  { store: 'embedded' as const, skip: false },
  { store: 'postgresql' as const, skip: pgSkip !== undefined },
];

const bytes = (text: string) => new TextEncoder().encode(text);
const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
const text = async (blob: Blob) => new TextDecoder().decode(await blob.arrayBuffer());

interface Task extends Record<string, unknown> {
  title: string;
}

/** A device whose network can be cut: requests fail as a browser's do offline, and are logged. */
function device(url: string, user = 'alice') {
  const online = createManualOnlineSource(true);
  const log: string[] = [];
  let loseNextUploadResponse = false;
  const fetchThroughNetwork: FetchLike = async (input, init) => {
    if (!online.isOnline()) throw new TypeError('fetch failed');
    const response = await fetch(input, init);
    log.push(`${init.method ?? 'GET'} ${new URL(input).pathname} ${response.status}`);
    if (loseNextUploadResponse && init.method === 'POST' && new URL(input).pathname.endsWith('/attachment')) {
      loseNextUploadResponse = false;
      throw new TypeError('fetch failed: connection reset');
    }
    return response;
  };
  const client = makeClient(url, { user, fetch: fetchThroughNetwork, online });
  return {
    client,
    online,
    log,
    loseNextUploadResponse: () => {
      loseNextUploadResponse = true;
    },
    uploads: () => log.filter((line) => /^POST .*\/attachment 20[01]$/.test(line)).length,
  };
}

describe.each(STORES)('offline attachments ($store)', ({ store, skip }) => {
  let server: TestServer;
  let plain: TestServer;
  let files: string;
  const clients: QuireClient[] = [];

  beforeAll(async () => {
    if (skip) return;
    files = mkdtempSync(join(tmpdir(), 'quire-client-offline-files-'));
    server = await startServer({ attachment_enabled: true, attachment_base_path: files }, store);
    plain = await startServer({}, store);
  });

  afterAll(async () => {
    if (skip) return;
    await Promise.all(clients.map((client) => client.close()));
    await server?.close();
    await plain?.close();
    rmSync(files, { recursive: true, force: true });
  });

  async function setup(
    options: {
      policy?: 'eager' | 'lazy' | 'none';
      cacheBytes?: number;
      strategy?: 'manual' | 'server-wins' | 'client-wins';
    } = {},
  ) {
    const bucket = uniqueName('att');
    await createCollection(server.url, bucket, 'tasks', 'alice', {
      read: ['system.Authenticated'],
      write: ['system.Authenticated'],
    });
    const open = (user = 'alice', policy = options.policy) => {
      const each = device(server.url, user);
      clients.push(each.client);
      const events: AttachmentEvent[] = [];
      const tasks = each.client.collection<Task>(bucket, 'tasks', {
        attachments: attachments({
          ...(policy ? { policy } : {}),
          ...(options.cacheBytes ? { cacheBytes: options.cacheBytes } : {}),
        }),
        ...(options.strategy ? { strategy: options.strategy } : {}),
      });
      tasks.on('attachment', (event) => events.push(event));
      return { ...each, tasks, events };
    };
    return { bucket, open };
  }

  const serverRecord = async (bucket: string, id: string) =>
    (await raw(server.url, 'GET', `/buckets/${bucket}/collections/tasks/records/${id}`)).body.data;

  it.skipIf(skip)(
    'a file attached offline is kept on the device, uploaded by the next sync, and seen by another user after theirs',
    async () => {
      const { bucket, open } = await setup();
      const alice = open('alice');
      await alice.tasks.create({ id: 'walk', title: 'Walk the dog' });
      await alice.tasks.sync();
      alice.online.set(false);

      const photo = bytes('pretend this is a JPEG');
      const pending = await alice.tasks.attach('walk', new File([photo], 'dog.jpg', { type: 'image/jpeg' }));
      expect(pending).toMatchObject({
        filename: 'dog.jpg',
        mimetype: 'image/jpeg',
        size: photo.length,
        hash: sha256(photo),
        state: 'upload',
        local: true,
        location: null,
      });
      expect(await text(await alice.tasks.getAttachment('walk'))).toBe('pretend this is a JPEG');
      expect(await alice.tasks.pending()).toBe(1);
      const before = alice.log.length;
      await expect(alice.tasks.sync()).rejects.toThrow();
      expect(alice.log.length).toBe(before);

      alice.online.set(true);
      const result = await alice.tasks.sync();
      expect(result.ok).toBe(true);
      expect(result.attachments).toMatchObject({ uploaded: 1, dropped: 0 });
      expect(alice.uploads()).toBe(1);
      const uploadProgress = alice.events
        .filter((event) => event.type === 'progress' && event.direction === 'upload')
        .map((event) => (event as { loaded: number }).loaded);
      expect([uploadProgress[0], uploadProgress.at(-1)]).toEqual([0, photo.length]);
      expect(alice.events).toContainEqual({ type: 'uploaded', id: 'walk' });
      expect((await serverRecord(bucket, 'walk')).attachment).toMatchObject({
        filename: 'dog.jpg',
        hash: sha256(photo),
        size: photo.length,
      });
      expect(await alice.tasks.attachment('walk')).toMatchObject({ state: 'synced', local: true });
      expect((await alice.tasks.get('walk'))?.attachment).toMatchObject({ hash: sha256(photo) });
      expect(await alice.tasks.pending()).toBe(0);

      const bob = open('bob');
      await bob.tasks.sync();
      expect(await bob.tasks.attachment('walk')).toMatchObject({ state: 'synced', local: false, filename: 'dog.jpg' });
      const downloaded = await bob.tasks.getAttachment('walk');
      expect(await text(downloaded)).toBe('pretend this is a JPEG');
      expect(downloaded.type).toBe('image/jpeg');
      expect(
        bob.events.some(
          (event) => event.type === 'progress' && event.direction === 'download' && event.loaded === photo.length,
        ),
      ).toBe(true);
      // Lazy: kept, so the next read works without the network.
      bob.online.set(false);
      expect(await text(await bob.tasks.getAttachment('walk'))).toBe('pretend this is a JPEG');
    },
  );

  it.skipIf(skip)(
    'exactly once: an upload whose response was lost is not sent twice; the queue resumes where it stopped',
    async () => {
      const { bucket, open } = await setup();
      const alice = open();
      const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      for (const id of ids) await alice.tasks.create({ id, title: id });
      await alice.tasks.sync();
      for (const id of ids)
        await alice.tasks.attach(id, bytes(`file ${id}`), { filename: `${id}.txt`, mimetype: 'text/plain' });
      alice.loseNextUploadResponse();
      const cut = await alice.tasks.sync();
      expect(cut.ok).toBe(false);
      // The server stored the first file answered; we never heard. Files sent with it (three at a
      // time) went through; those not started yet wait for the next sync.
      expect(cut.errors).toEqual([expect.objectContaining({ code: 'QUIRE_ERR_TRANSPORT_NETWORK' })]);
      const lost = cut.errors[0]!.id!;
      expect(ids).toContain(lost);
      expect((await serverRecord(bucket, lost)).attachment).toMatchObject({ hash: sha256(bytes(`file ${lost}`)) });

      const left = (await Promise.all(ids.map((id) => alice.tasks.attachment(id)))).filter(
        (info) => info?.state === 'upload',
      ).length;
      expect(left).toBeGreaterThan(0);
      const resumed = await alice.tasks.sync();
      expect(resumed.ok).toBe(true);
      expect(resumed.attachments?.uploaded).toBe(left);
      expect((cut.attachments?.uploaded ?? 0) + (resumed.attachments?.uploaded ?? 0)).toBe(ids.length);
      // The lost one was recognised by its hash (once the record was pulled), never sent twice.
      expect(alice.uploads()).toBe(ids.length);
      for (const id of ids)
        expect((await serverRecord(bucket, id)).attachment).toMatchObject({ hash: sha256(bytes(`file ${id}`)) });
      expect(await alice.tasks.pending()).toBe(0);
    },
  );

  it.skipIf(skip)(
    "a record changed remotely while its file waited is a conflict: the server's version wins and the file is dropped",
    async () => {
      const { bucket, open } = await setup({ strategy: 'server-wins' });
      const alice = open('alice');
      const bob = open('bob');
      await alice.tasks.create({ id: 'shop', title: 'Shopping' });
      await alice.tasks.sync();
      await bob.tasks.sync();
      alice.online.set(false);
      await alice.tasks.attach('shop', bytes('list photo'), { filename: 'list.png', mimetype: 'image/png' });
      await bob.tasks.update('shop', { title: 'Shopping (done by Bob)' });
      await bob.tasks.sync();

      alice.online.set(true);
      const result = await alice.tasks.sync();
      expect(result.conflicts.map((conflict) => [conflict.id, conflict.resolution])).toEqual([['shop', 'remote']]);
      expect(result.attachments?.dropped).toBe(1);
      expect(alice.events).toContainEqual({ type: 'dropped', id: 'shop' });
      expect(alice.uploads()).toBe(0);
      expect(await serverRecord(bucket, 'shop')).toMatchObject({ title: 'Shopping (done by Bob)' });
      expect((await serverRecord(bucket, 'shop')).attachment).toBeUndefined();
      expect(await alice.tasks.attachment('shop')).toBeNull();
    },
  );

  it.skipIf(skip)('a manual conflict holds the file until the app keeps its version; then it is uploaded', async () => {
    const { bucket, open } = await setup();
    const alice = open('alice');
    const bob = open('bob');
    await alice.tasks.create({ id: 'trip', title: 'Trip' });
    await alice.tasks.sync();
    await bob.tasks.sync();
    await alice.tasks.attach('trip', bytes('ticket'), { filename: 'ticket.pdf', mimetype: 'application/pdf' });
    await bob.tasks.update('trip', { title: 'Trip (Bob)' });
    await bob.tasks.sync();

    const held = await alice.tasks.sync();
    expect(held.conflicts.map((conflict) => conflict.resolution)).toEqual(['manual']);
    expect(alice.uploads()).toBe(0);
    expect((await alice.tasks.attachment('trip'))?.state).toBe('upload');
    await alice.tasks.resolve('trip', 'local');
    const after = await alice.tasks.sync();
    expect(after.ok).toBe(true);
    expect(alice.uploads()).toBe(1);
    expect(await serverRecord(bucket, 'trip')).toMatchObject({
      title: 'Trip',
      attachment: { filename: 'ticket.pdf', hash: sha256(bytes('ticket')) },
    });
  });

  it.skipIf(skip)("our version winning over a server version with a new file keeps the server's file", async () => {
    const { bucket, open } = await setup({ strategy: 'client-wins' });
    const alice = open('alice');
    const bob = open('bob');
    await alice.tasks.create({ id: 'note', title: 'Note' });
    await alice.tasks.sync();
    await bob.tasks.sync();
    await alice.tasks.update('note', { title: 'Note (Alice)' }, { patch: true });
    await bob.tasks.attach('note', bytes('scan by bob'), { filename: 'scan.txt', mimetype: 'text/plain' });
    expect((await bob.tasks.sync()).attachments?.uploaded).toBe(1);

    const result = await alice.tasks.sync();
    expect(result.ok).toBe(true);
    expect(result.conflicts.map((conflict) => conflict.resolution)).toEqual(['local']);
    expect(await serverRecord(bucket, 'note')).toMatchObject({
      title: 'Note (Alice)',
      attachment: { filename: 'scan.txt', hash: sha256(bytes('scan by bob')) },
    });
    expect(await text(await alice.tasks.getAttachment('note'))).toBe('scan by bob');
  });

  it.skipIf(skip)('detach works offline; the file is removed on the server at the next sync', async () => {
    const { bucket, open } = await setup();
    const alice = open();
    await alice.tasks.create({ id: 'x', title: 'x' });
    await alice.tasks.attach('x', bytes('temporary'), { filename: 't.txt', mimetype: 'text/plain' });
    expect((await alice.tasks.sync()).attachments?.uploaded).toBe(1);
    alice.online.set(false);
    await alice.tasks.detach('x');
    expect(await alice.tasks.attachment('x')).toMatchObject({ state: 'removal' });
    await expect(alice.tasks.getAttachment('x')).rejects.toMatchObject({ code: 'QUIRE_ERR_ATTACHMENT_NONE' });
    alice.online.set(true);
    const result = await alice.tasks.sync();
    expect(result.attachments?.removed).toBe(1);
    expect((await serverRecord(bucket, 'x')).attachment).toBeNull();
    expect(await alice.tasks.attachment('x')).toBeNull();
  });

  it.skipIf(skip)(
    'policies: eager downloads after sync, none keeps nothing; the cache keeps under its cap, least recently used out',
    async () => {
      const { open } = await setup({ cacheBytes: 25 });
      const alice = open('alice', 'none');
      for (const id of ['p', 'q']) {
        await alice.tasks.create({ id, title: id });
        await alice.tasks.attach(id, bytes(`twenty bytes file ${id}`), {
          filename: `${id}.txt`,
          mimetype: 'text/plain',
        });
      }
      await alice.tasks.sync();
      // `none`: not even the uploaded bytes are kept.
      expect(await alice.tasks.attachment('p')).toMatchObject({ state: 'synced', local: false });
      const before = alice.log.length;
      await alice.tasks.getAttachment('p');
      await alice.tasks.getAttachment('p');
      expect(alice.log.slice(before).filter((line) => line.startsWith('GET /v1/attachments/')).length).toBe(2);

      const eager = open('bob', 'eager');
      const result = await eager.tasks.sync();
      expect(result.attachments?.downloaded).toBe(2);
      // Cap 25 bytes: of two 20-byte files the one used last stays.
      const kept = await Promise.all(['p', 'q'].map(async (id) => (await eager.tasks.attachment(id))?.local));
      expect(kept.filter(Boolean)).toHaveLength(1);
      eager.online.set(false);
      const keptId = kept[0] ? 'p' : 'q';
      expect(await text(await eager.tasks.getAttachment(keptId))).toBe(`twenty bytes file ${keptId}`);
    },
  );

  it.skipIf(skip)(
    'without the capability: a typed error and nothing queued; without the option: a typed error',
    async () => {
      const bucket = uniqueName('plain');
      await createCollection(plain.url, bucket, 'tasks');
      const { client } = device(plain.url);
      clients.push(client);
      const tasks = client.collection<Task>(bucket, 'tasks', { attachments: attachments() });
      await tasks.create({ id: 'n', title: 'no files here' });
      const refused = await tasks.attach('n', bytes('x'), { filename: 'x.txt' }).catch((error) => error);
      expect(refused).toBeInstanceOf(AttachmentError);
      expect(refused.code).toBe('QUIRE_ERR_ATTACHMENT_UNSUPPORTED');
      expect(await tasks.attachment('n')).toBeNull();
      expect(await tasks.pending()).toBe(1); // the creation only

      const bare: Collection<Task> = client.collection<Task>(bucket, 'other');
      await expect(bare.attach('n', bytes('x'))).rejects.toMatchObject({ code: 'QUIRE_ERR_ATTACHMENT_OFF' });
    },
  );
});
