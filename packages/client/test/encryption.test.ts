/**
 * Remote transformers and the end-to-end encrypted collection built on them: the server holds
 * only ids, timestamps and ciphertext; replicas hold the records, queried as usual; a wrong key,
 * a plain record or a ciphertext moved to another id is a DecryptionError and overwrites nothing.
 * (Browser ⇄ Node interoperability: browser.test.ts.)
 */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import { DecryptionError, deriveKey, encryptionTransformer, type RemoteTransformer } from '../src/index.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');
type Note = { title: string; done: 0 | 1 };
/** Fewer PBKDF2 rounds than the default keep the suite quick; one test uses the default. */
const FAST = { iterations: 1_000 };

describe('remote transformers', () => {
  it('encode on the way out and decode on the way back, in order; the replica holds the decoded form', async () => {
    const bucket = uniqueName('tr');
    await createCollection(url, bucket, 'items');
    const shout: RemoteTransformer = {
      encode: (r) => ({ ...r, title: String(r.title).toUpperCase() }),
      decode: (r) => ({ ...r, title: String(r.title).toLowerCase() }),
    };
    const tag: RemoteTransformer = {
      encode: (r) => ({ ...r, tagged: true }),
      decode: ({ tagged: _t, ...r }) => ({ ...r, id: r.id as string }),
    };
    const client = makeClient(url);
    const items = client.bucket(bucket).collection('items', { transformers: [shout, tag] });
    await items.create({ id: 'a', title: 'hello' });
    await items.sync();
    expect((await raw(url, 'GET', `/buckets/${bucket}/collections/items/records/a`)).body.data).toMatchObject({
      title: 'HELLO',
      tagged: true,
    });
    expect(await items.get('a')).toMatchObject({ id: 'a', title: 'hello' });
    expect(await items.get('a')).not.toHaveProperty('tagged');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/b`, {
      data: { title: 'FROM ELSEWHERE', tagged: true },
    });
    await items.sync();
    expect(await items.get('b')).toMatchObject({ title: 'from elsewhere' });
    expect(await items.get('b')).not.toHaveProperty('tagged');
    await client.close();
  });
});

describe('an end-to-end encrypted collection', () => {
  it('the server keeps only ids, timestamps, ciphertext; a device with the passphrase reads and queries', async () => {
    const bucket = uniqueName('e2e');
    await createCollection(url, bucket, 'notes');
    const a = makeClient(url);
    const notes = a.bucket(bucket).collection<Note>('notes', {
      indexes: ['done'],
      transformers: [encryptionTransformer({ passphrase: 'correct horse', ...FAST })],
    });
    await notes.create({ id: 'n1', title: 'the secret plan', done: 0 });
    await notes.create({ id: 'n2', title: 'groceries', done: 1 });
    expect((await notes.sync()).pushed).toBe(2);

    const stored = (await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records?_sort=id`)).body.data as Record<
      string,
      unknown
    >[];
    expect(stored.map((record) => Object.keys(record).sort())).toEqual([
      ['ciphertext', 'id', 'iv', 'last_modified', 'quire_e2e'],
      ['ciphertext', 'id', 'iv', 'last_modified', 'quire_e2e'],
    ]);
    expect(JSON.stringify(stored)).not.toMatch(/secret|groceries|title|done/);
    expect(stored[0]!.iv).not.toBe(stored[1]!.iv);

    const b = makeClient(url, { user: 'alice' });
    const other = b.bucket(bucket).collection<Note>('notes', {
      indexes: ['done'],
      transformers: [encryptionTransformer({ passphrase: 'correct horse', ...FAST })],
    });
    expect((await other.sync()).pulled).toBe(2);
    expect(await other.get('n1')).toMatchObject({ title: 'the secret plan', done: 0 });
    expect((await other.list({ index: 'done', equals: 1 })).map((note) => note.title)).toEqual(['groceries']);

    // Concurrent edits: conflicts compare and keep decrypted records — found while pulling…
    await other.update('n1', { title: 'plan B' }, { patch: true });
    await other.sync();
    await notes.update('n1', { title: 'plan C' }, { patch: true });
    const incoming = await notes.sync({ strategy: 'server-wins' });
    expect(incoming.conflicts).toEqual([
      expect.objectContaining({ id: 'n1', type: 'incoming', remote: expect.objectContaining({ title: 'plan B' }) }),
    ]);
    expect(await notes.get('n1')).toMatchObject({ title: 'plan B' });
    // …or refused by the server (412: its `existing` is decrypted too): another device pushes
    // between this one's pull and its push.
    let raced = false;
    const d = makeClient(url, {
      fetch: async (input, init) => {
        if (!raced && new URL(input).pathname.endsWith('/batch')) {
          raced = true;
          await other.update('n1', { title: 'plan E' }, { patch: true });
          await other.sync();
        }
        return fetch(input, init);
      },
    });
    const mine = d
      .bucket(bucket)
      .collection<Note>('notes', { transformers: [encryptionTransformer({ passphrase: 'correct horse', ...FAST })] });
    await mine.sync();
    await mine.update('n1', { title: 'plan D' }, { patch: true });
    const outgoing = await mine.sync({ strategy: 'server-wins' });
    expect(outgoing.conflicts).toEqual([
      expect.objectContaining({ id: 'n1', type: 'outgoing', remote: expect.objectContaining({ title: 'plan E' }) }),
    ]);
    expect(await mine.get('n1')).toMatchObject({ title: 'plan E' });
    await d.close();
    await Promise.all([a.close(), b.close()]);
  });

  it('a wrong key is a DecryptionError and overwrites nothing (replica, outbox or server)', async () => {
    const bucket = uniqueName('e2e');
    await createCollection(url, bucket, 'notes');
    const writer = makeClient(url);
    const notes = writer
      .bucket(bucket)
      .collection<Note>('notes', { transformers: [encryptionTransformer({ passphrase: 'right', ...FAST })] });
    await notes.create({ id: 'n1', title: 'one', done: 0 });
    await notes.sync();
    const idb = new IDBFactory();
    const reader = makeClient(url, { idb });
    const readerNotes = reader
      .bucket(bucket)
      .collection<Note>('notes', { transformers: [encryptionTransformer({ passphrase: 'right', ...FAST })] });
    await readerNotes.sync();
    await reader.close();
    await notes.update('n1', { title: 'two', done: 1 });
    await notes.sync();
    const before = (await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records`)).body.data;

    // The same replica opened with a wrong passphrase, with a local change waiting.
    const wrong = makeClient(url, { idb });
    const wrongNotes = wrong
      .bucket(bucket)
      .collection<Note>('notes', { transformers: [encryptionTransformer({ passphrase: 'wrong', ...FAST })] });
    await wrongNotes.create({ id: 'n2', title: 'draft', done: 0 });
    const failure = await wrongNotes.sync().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DecryptionError);
    expect(failure).toMatchObject({ code: 'QUIRE_ERR_CRYPTO_DECRYPT', recordId: 'n1' });
    expect(wrongNotes.status.error).toMatchObject({ code: 'QUIRE_ERR_CRYPTO_DECRYPT' });
    expect(await wrongNotes.get('n1')).toMatchObject({ title: 'one' });
    expect(await wrongNotes.pending()).toBe(1);
    expect((await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records`)).body.data).toEqual(before);
    await Promise.all([writer.close(), wrong.close()]);
  });

  it('a plain record, or a ciphertext moved to another id, does not decrypt', async () => {
    const bucket = uniqueName('e2e');
    await createCollection(url, bucket, 'notes');
    const client = makeClient(url);
    const notes = client
      .bucket(bucket)
      .collection<Note>('notes', { transformers: [encryptionTransformer({ passphrase: 'pw', ...FAST })] });
    await notes.create({ id: 'n1', title: 'one', done: 0 });
    await notes.sync();
    const sealed = (await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records/n1`)).body.data as Record<
      string,
      unknown
    >;
    // The server (or anyone with write access) copies n1's ciphertext to n2: refused (the id is authenticated).
    await raw(url, 'PUT', `/buckets/${bucket}/collections/notes/records/n2`, {
      data: { quire_e2e: 1, iv: sealed.iv, ciphertext: sealed.ciphertext },
    });
    await expect(notes.sync()).rejects.toMatchObject({ code: 'QUIRE_ERR_CRYPTO_DECRYPT', recordId: 'n2' });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/notes/records/n2`, {
      data: { title: 'injected in plain text' },
    });
    await expect(notes.sync()).rejects.toMatchObject({ code: 'QUIRE_ERR_CRYPTO_DECRYPT', recordId: 'n2' });
    expect(await notes.get('n2')).toBeUndefined();
    await client.close();
  });

  it('takes a key the app supplies, or derives one with the default 600,000 PBKDF2 rounds', async () => {
    const bucket = uniqueName('e2e');
    await createCollection(url, bucket, 'notes');
    const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    const client = makeClient(url);
    const notes = client.bucket(bucket).collection<Note>('notes', { transformers: [encryptionTransformer({ key })] });
    await notes.create({ id: 'k', title: 'with my key', done: 0 });
    await notes.sync();
    const second = makeClient(url);
    const again = second.bucket(bucket).collection<Note>('notes', { transformers: [encryptionTransformer({ key })] });
    await again.sync();
    expect(await again.get('k')).toMatchObject({ title: 'with my key' });

    const derived = await deriveKey('passphrase', `quire-e2e:${bucket}/other`);
    const other = client
      .bucket(bucket)
      .collection<Note>('other', { transformers: [encryptionTransformer({ passphrase: 'passphrase' })] });
    await createCollection(url, bucket, 'other').catch(() => {});
    await other.create({ id: 'p', title: 'derived', done: 0 });
    await other.sync();
    const third = makeClient(url);
    const withDerived = third
      .bucket(bucket)
      .collection<Note>('other', { transformers: [encryptionTransformer({ key: derived })] });
    await withDerived.sync();
    expect(await withDerived.get('p')).toMatchObject({ title: 'derived' });
    await Promise.all([client.close(), second.close(), third.close()]);
  });
});
