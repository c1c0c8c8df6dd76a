/**
 * The published `kinto-http` client's `addAttachment` / `removeAttachment`, unchanged, against
 * Quire with attachments on — files on local disk and on a real S3-compatible server (s3rver).
 * The client refuses both unless `GET /` announces the `attachments` capability; it sends the
 * file as `attachment` with `data` and `permissions` JSON parts, `?gzipped=…` in the query (which
 * the server ignores, as the original does since 4.0), and `If-Match` with `safe`.
 *
 * Its Node build makes the multipart body with the `form-data` package, which only `node-fetch`
 * (its own dependency) sends as multipart: the client is given that fetch, as a Node user of it
 * must. (In browsers it uses the native FormData and fetch.)
 */
import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import KintoClient from 'kinto-http';
import { describe, expect, it } from 'vitest';
import { FILE_BACKENDS, useFileStore } from '../helpers/attachments.js';
import { startEmbeddedTarget } from './embedded-target.js';

const requireFromClient = createRequire(createRequire(import.meta.url).resolve('kinto-http'));
const nodeFetch = requireFromClient('node-fetch') as typeof fetch;

function basic(user: string): string {
  return `Basic ${Buffer.from(`${user}:secret`).toString('base64')}`;
}

const dataUrl = (content: string, type: string, name: string) =>
  `data:${type};name=${name};base64,${Buffer.from(content).toString('base64')}`;

for (const fileBackend of FILE_BACKENDS) {
  describe(`kinto-http attachments against Quire, ${fileBackend} files`, { timeout: 30_000 }, () => {
    const files = useFileStore(fileBackend);

    it('refuses without the capability, then adds, replaces and removes a file', async () => {
      const plain = await startEmbeddedTarget({});
      try {
        const client = new KintoClient(plain.url, { headers: { Authorization: basic('alice') } });
        await expect(
          client
            .bucket('b')
            .collection('c')
            .addAttachment(dataUrl('x', 'text/plain', 'a.txt'), { id: 'r' }),
        ).rejects.toThrow(/Required capabilities attachments not present/);
      } finally {
        await plain.stop();
      }

      const server = await startEmbeddedTarget(files.settings());
      try {
        const alice = new KintoClient(server.url, { headers: { Authorization: basic('alice') }, fetchFunc: nodeFetch });
        await alice.createBucket('b');
        await alice.bucket('b').createCollection('c');
        const collection = alice.bucket('b').collection('c');

        const created = await collection.addAttachment(
          dataUrl('hello', 'image/png', 'photo.png'),
          { id: 'rec', title: 'A photo' },
          { permissions: { read: ['system.Everyone'] } },
        );
        expect(created.data).toMatchObject({
          id: 'rec',
          title: 'A photo',
          attachment: { filename: 'photo.png', mimetype: 'image/png', size: 5 },
        });
        expect(created.permissions.read).toEqual(['system.Everyone']);
        const first = created.data.attachment as { location: string; hash: string };
        expect((await files.read(first.location))?.toString()).toBe('hello');
        const { base_url: baseUrl } = (await alice.fetchServerCapabilities()).attachments as unknown as {
          base_url: string;
        };
        expect(await (await fetch(new URL(first.location, baseUrl))).text()).toBe('hello');

        // `safe` with the record's timestamp: If-Match; a stale one is refused and keeps the file.
        // (Its typings want string fields; the timestamp is the number it reads from the record.)
        const stamped = { id: 'rec', last_modified: created.data.last_modified } as unknown as { id: string };
        const replaced = await collection.addAttachment(dataUrl('again', 'image/png', 'photo2.png'), stamped, {
          safe: true,
        });
        const second = replaced.data.attachment as { location: string };
        expect(second.location).not.toBe(first.location);
        expect(await files.read(first.location)).toBeNull();
        await expect(
          collection.addAttachment(dataUrl('stale', 'image/png', 'x.png'), stamped, { safe: true }),
        ).rejects.toMatchObject({ response: { status: 412 } });
        expect((await collection.getRecord('rec')).data.attachment).toEqual(replaced.data.attachment);

        await collection.removeAttachment('rec');
        expect((await collection.getRecord('rec')).data.attachment).toBeNull();
        expect(await files.read(second.location)).toBeNull();
        expect(await files.list()).toEqual([]);
      } finally {
        await server.stop();
      }
    });

    it('on the personal bucket (default) with safe: true: If-None-Match, If-Match, conditional removal', async () => {
      const server = await startEmbeddedTarget({ ...files.settings(), default_bucket_enabled: true });
      try {
        const alice = new KintoClient(server.url, { headers: { Authorization: basic('alice') }, fetchFunc: nodeFetch });
        // The collection does not exist yet: the request creates it, as any request under default.
        const notes = alice.bucket('default').collection('notes');
        const created = await notes.addAttachment(
          dataUrl('one', 'image/png', 'one.png'),
          { id: 'rec' },
          { safe: true },
        );
        expect(created.data.attachment).toMatchObject({ filename: 'one.png', size: 3 });
        // If-None-Match: * on a record that now exists: refused, the file kept.
        await expect(
          notes.addAttachment(dataUrl('dup', 'image/png', 'dup.png'), { id: 'rec' }, { safe: true }),
        ).rejects.toMatchObject({ response: { status: 412 } });
        const stamped = { id: 'rec', last_modified: created.data.last_modified } as unknown as { id: string };
        const replaced = await notes.addAttachment(dataUrl('two', 'image/png', 'two.png'), stamped, { safe: true });
        expect(replaced.data.attachment).toMatchObject({ filename: 'two.png', size: 3 });
        await expect(
          notes.addAttachment(dataUrl('stale', 'image/png', 'x.png'), stamped, { safe: true }),
        ).rejects.toMatchObject({ response: { status: 412 } });
        await expect(
          notes.removeAttachment('rec', { safe: true, last_modified: created.data.last_modified }),
        ).rejects.toMatchObject({ response: { status: 412 } });
        await notes.removeAttachment('rec', { safe: true, last_modified: replaced.data.last_modified });
        expect((await notes.getRecord('rec')).data.attachment).toBeNull();
        expect(await files.list()).toEqual([]);
      } finally {
        await server.stop();
      }
    });
  });
}
