/**
 * Attachments (issue 32), the `kinto-attachment` plugin's protocol: on both stores (embedded,
 * PostgreSQL) and both file backends (a local directory, a real S3-compatible server). What the
 * conformance section cannot see from outside is checked here: the files themselves — stored,
 * replaced, removed with their record, collection or bucket, never left behind by a refused
 * upload — the index and the journal, the settings.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Settings } from '../src/config.js';
import { FILE_BACKENDS, useFileStore } from './helpers/attachments.js';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';
import { fileForm, multipart } from './helpers/multipart.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');

interface Attachment {
  filename: string;
  hash: string;
  location: string;
  mimetype: string;
  size: number;
  original?: Attachment;
}

const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');

for (const fileBackend of FILE_BACKENDS) {
  describeOnBackends(`attachments, ${fileBackend} files`, { timeout: 60_000 }, ({ serverWith }) => {
    const files = useFileStore(fileBackend);
    let counter = 0;

    async function server(extra: Partial<Settings> = {}): Promise<FastifyInstance> {
      return serverWith(files.settings(extra));
    }

    /** A bucket and collection of alice's, and a fresh record URL in it. */
    async function place(app: FastifyInstance, collectionData: Record<string, unknown> = {}) {
      counter += 1;
      const bucket = `b${counter}`;
      await app.inject({ method: 'PUT', url: `/v1/buckets/${bucket}`, headers: alice });
      await app.inject({
        method: 'PUT',
        url: `/v1/buckets/${bucket}/collections/c`,
        headers: alice,
        payload: { data: collectionData },
      });
      const record = `/v1/buckets/${bucket}/collections/c/records/r1`;
      return { bucket, collection: `/v1/buckets/${bucket}/collections/c`, record, endpoint: `${record}/attachment` };
    }

    function upload(
      app: FastifyInstance,
      url: string,
      form: { body: Buffer; contentType: string },
      headers: Record<string, string> = alice,
    ) {
      return app.inject({
        method: 'POST',
        url,
        payload: form.body,
        headers: { ...headers, 'content-type': form.contentType },
      });
    }

    const photo = (content = 'fake jpeg bytes', fields = {}) =>
      fileForm({ filename: 'photo.jpg', content, contentType: 'image/jpeg' }, fields);

    it('announces the capability with a base_url ending with /', async () => {
      const app = await server();
      const body = (await app.inject({ url: '/v1/' })).json();
      expect(body.capabilities.attachments).toMatchObject({
        description: expect.any(String),
        url: expect.any(String),
        version: expect.any(String),
        base_url: expect.stringMatching(/^https?:\/\/.*\/$/),
      });
      const heartbeat = await app.inject({ url: '/v1/__heartbeat__' });
      expect(heartbeat.statusCode).toBe(200);
      expect(heartbeat.json()).toMatchObject({ storage: true, attachments: true });
    });

    it('stores the file, creates the record with it and answers 201 with the attachment', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const response = await upload(app, endpoint, photo('hello', { data: { title: 'Lunch' } }));
      expect(response.statusCode).toBe(201);
      const attachment = response.json<Attachment>();
      expect(attachment).toEqual({
        filename: 'photo.jpg',
        hash: sha256('hello'),
        location: expect.any(String),
        mimetype: 'image/jpeg',
        size: 5,
      });
      expect(attachment.location).toMatch(/^b\d+\/c\/[0-9a-f-]{36}\.jpg$/);
      expect(response.headers.location).toMatch(new RegExp(`^http://[^/]+${record}$`));
      const stored = (await app.inject({ url: record, headers: alice })).json();
      expect(stored.data).toMatchObject({ id: 'r1', title: 'Lunch', attachment });
      expect(response.headers.etag).toBe(`"${stored.data.last_modified}"`);
      expect((await files.read(attachment.location))?.toString()).toBe('hello');
      expect(await files.notes()).toEqual([]);
    });

    it('replaces the previous file (200), keeps the record fields, and removes the old file', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      await app.inject({ method: 'PUT', url: record, headers: alice, payload: { data: { author: 'frutiger' } } });
      const first = (await upload(app, endpoint, photo('one'))).json<Attachment>();
      const again = await upload(app, endpoint, photo('two', { data: { family: 'sans' } }));
      expect(again.statusCode).toBe(200);
      const second = again.json<Attachment>();
      expect(second.location).not.toBe(first.location);
      expect(await files.read(first.location)).toBeNull();
      expect((await files.read(second.location))?.toString()).toBe('two');
      expect((await app.inject({ url: record, headers: alice })).json().data).toMatchObject({
        author: 'frutiger',
        family: 'sans',
        attachment: second,
      });
    });

    it('keep_old_files keeps replaced and deleted files', async () => {
      const app = await server({ attachment_keep_old_files: true });
      const { record, endpoint } = await place(app);
      const first = (await upload(app, endpoint, photo('one'))).json<Attachment>();
      const second = (await upload(app, endpoint, photo('two'))).json<Attachment>();
      await app.inject({ method: 'DELETE', url: record, headers: alice });
      expect(await files.read(first.location)).not.toBeNull();
      expect(await files.read(second.location)).not.toBeNull();
    });

    it('DELETE {record}/attachment removes the file and sets attachment to null (204)', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const attachment = (await upload(app, endpoint, photo())).json<Attachment>();
      const removed = await app.inject({ method: 'DELETE', url: endpoint, headers: alice });
      expect(removed.statusCode).toBe(204);
      expect(removed.body).toBe('');
      expect(await files.read(attachment.location)).toBeNull();
      expect((await app.inject({ url: record, headers: alice })).json().data.attachment).toBeNull();
      // A record that does not exist is not created by a DELETE of its attachment (the original's bug).
      const missing = await app.inject({ method: 'DELETE', url: `${record}x/attachment`, headers: alice });
      expect(missing.statusCode).toBe(404);
      expect((await app.inject({ url: `${record}x`, headers: alice })).statusCode).toBe(404);
    });

    it('deleting the record, the collection, the bucket or a whole list removes the files', async () => {
      const app = await server();
      const one = await place(app);
      const byRecord = (await upload(app, one.endpoint, photo())).json<Attachment>();
      await app.inject({ method: 'DELETE', url: one.record, headers: alice });
      expect(await files.read(byRecord.location)).toBeNull();

      const two = await place(app);
      const byCollection = (await upload(app, two.endpoint, photo())).json<Attachment>();
      await app.inject({ method: 'DELETE', url: two.collection, headers: alice });
      expect(await files.read(byCollection.location)).toBeNull();

      const three = await place(app);
      const byBucket = (await upload(app, three.endpoint, photo())).json<Attachment>();
      const other = (await upload(app, `${three.collection}/records/r2/attachment`, photo())).json<Attachment>();
      await app.inject({ method: 'DELETE', url: `/v1/buckets/${three.bucket}`, headers: alice });
      expect(await files.read(byBucket.location)).toBeNull();
      expect(await files.read(other.location)).toBeNull();

      const four = await place(app);
      const listed = (await upload(app, four.endpoint, photo())).json<Attachment>();
      await app.inject({ method: 'DELETE', url: `${four.collection}/records`, headers: alice });
      expect(await files.read(listed.location)).toBeNull();
      // A group's deletion touches nothing.
      await app.inject({
        method: 'PUT',
        url: `/v1/buckets/${four.bucket}/groups/g`,
        headers: alice,
        payload: { data: { members: [] } },
      });
      expect(
        (await app.inject({ method: 'DELETE', url: `/v1/buckets/${four.bucket}/groups/g`, headers: alice })).statusCode,
      ).toBe(200);
      expect(await files.notes()).toEqual([]);
    });

    it('refuses what the original refuses, with its messages, and keeps nothing', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const before = await files.list();
      const refusals: Array<[{ body: Buffer; contentType: string }, number, number, string]> = [
        [fileForm({ filename: 'virus.exe', content: 'MZ' }), 400, 107, 'body: File extension is not allowed.'],
        [multipart([{ name: 'attachment', filename: '', value: 'x' }]), 400, 107, 'body: Filename is required.'],
        [multipart([{ name: 'fichierjoint', filename: 'image.jpg', value: 'x' }]), 400, 109, 'Attachment missing.'],
        [multipart([{ name: 'data', value: '{}' }]), 400, 109, 'Attachment missing.'],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'my_field', value: 'a_value' },
          ]),
          400,
          109,
          "body: 'my_field' not in ('data', 'permissions')",
        ],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'data', filename: 'data', value: '{}' },
          ]),
          400,
          109,
          "body: 'data' field should be passed as form data, not files",
        ],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'data', value: '{>author: 12}' },
          ]),
          400,
          109,
          'body: data is not valid JSON',
        ],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'permissions', value: '{"read": >}' },
          ]),
          400,
          109,
          'body: permissions is not valid JSON',
        ],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'data', value: '[1]' },
          ]),
          400,
          109,
          'body: data should be a JSON object',
        ],
        [
          multipart([
            { name: 'attachment', filename: 'a.jpg', value: 'x' },
            { name: 'permissions', value: '{"read": "everyone"}' },
          ]),
          400,
          107,
          'permissions',
        ],
      ];
      for (const [form, status, errno, message] of refusals) {
        const response = await upload(app, endpoint, form);
        expect({ status: response.statusCode, errno: response.json().errno }, message).toEqual({ status, errno });
        expect(response.json().message).toContain(message);
      }
      const json = await app.inject({ method: 'POST', url: endpoint, headers: alice, payload: {} });
      expect(json.statusCode).toBe(400);
      expect(json.json()).toMatchObject({ errno: 107, message: 'Content-Type should be multipart/form-data' });
      const noBoundary = await app.inject({
        method: 'POST',
        url: endpoint,
        headers: { ...alice, 'content-type': 'multipart/form-data' },
        payload: 'x',
      });
      expect(noBoundary.statusCode).toBe(400);
      expect(noBoundary.json()).toMatchObject({ errno: 107, message: "Invalid boundary in multipart form: ''" });
      expect((await app.inject({ url: record, headers: alice })).statusCode).toBe(404);
      expect(await files.list()).toEqual(before);
      expect(await files.notes()).toEqual([]);
    });

    it('refuses a file over max_size with 413 (by Content-Length or as it streams) and keeps nothing', async () => {
      const app = await server({ attachment_max_size: 1000 });
      const { endpoint } = await place(app);
      const before = await files.list();
      const big = await upload(app, endpoint, photo('x'.repeat(1001)));
      expect(big.statusCode).toBe(413);
      expect(big.json()).toMatchObject({ errno: 113, message: 'File too large: the limit is 1000 bytes.' });
      expect((await upload(app, endpoint, photo('x'.repeat(1000)))).statusCode).toBe(201);
      const after = await files.list();
      expect(after.length).toBe(before.length + 1);
    });

    it('allowed media types and extensions, per bucket or collection too', async () => {
      const app = await server({
        attachment_allowed_mimetypes: ['image/*'],
        attachment_resources: { docs: { extensions: 'pdf', allowed_mimetypes: [] } },
      });
      const { endpoint } = await place(app);
      const text = await upload(
        app,
        endpoint,
        fileForm({ filename: 'notes.txt', content: 'x', contentType: 'text/plain' }),
      );
      expect(text.statusCode).toBe(400);
      expect(text.json().message).toBe('body: File type text/plain is not allowed.');
      await app.inject({ method: 'PUT', url: '/v1/buckets/docs', headers: alice });
      await app.inject({ method: 'PUT', url: '/v1/buckets/docs/collections/c', headers: alice });
      expect(
        (
          await upload(
            app,
            '/v1/buckets/docs/collections/c/records/r/attachment',
            fileForm({ filename: 'a.pdf', content: '%PDF' }),
          )
        ).json().mimetype,
      ).toBe('application/pdf');
      expect((await upload(app, '/v1/buckets/docs/collections/c/records/r/attachment', photo())).statusCode).toBe(400);
    });

    it('needs the permission a record write needs, before reading the file', async () => {
      const app = await server();
      const { collection, endpoint } = await place(app);
      expect((await upload(app, endpoint, photo(), {})).statusCode).toBe(401);
      expect((await upload(app, endpoint, photo(), bob)).statusCode).toBe(403);
      expect((await upload(app, '/v1/buckets/nothing/collections/c/records/r/attachment', photo())).statusCode).toBe(
        403,
      );
      // record:create lets bob create a record with a file, not replace alice's.
      await app.inject({
        method: 'PATCH',
        url: collection,
        headers: alice,
        payload: { permissions: { 'record:create': ['system.Authenticated'] } },
      });
      expect((await upload(app, `${collection}/records/bobs/attachment`, photo(), bob)).statusCode).toBe(201);
      expect((await upload(app, endpoint, photo())).statusCode).toBe(201);
      expect((await upload(app, endpoint, photo(), bob)).statusCode).toBe(403);
      const perms = (await app.inject({ url: `${collection}/records/bobs`, headers: bob })).json().permissions;
      expect(perms.write).toHaveLength(1);
      // `permissions` sets the record's ACL.
      await upload(
        app,
        `${collection}/records/shared/attachment`,
        photo('x', { permissions: { read: ['system.Everyone'] } }),
      );
      expect((await app.inject({ url: `${collection}/records/shared` })).statusCode).toBe(200);
    });

    it('protects the attachment field from plain writes; dropping it detaches the file', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const attachment = (await upload(app, endpoint, photo())).json<Attachment>();
      const forged = await app.inject({
        method: 'PATCH',
        url: record,
        headers: alice,
        payload: { data: { attachment: { ...attachment, size: 1 } } },
      });
      expect(forged.statusCode).toBe(400);
      expect(forged.json().message).toBe('Attachment metadata cannot be modified.');
      const other = await app.inject({
        method: 'PUT',
        url: `${record}2`,
        headers: alice,
        payload: { data: { attachment } },
      });
      expect(other.statusCode).toBe(400);
      // Unchanged, the field goes through (a client syncing its whole record).
      const kept = await app.inject({
        method: 'PUT',
        url: record,
        headers: alice,
        payload: { data: { title: 't', attachment } },
      });
      expect(kept.statusCode).toBe(200);
      expect(await files.read(attachment.location)).not.toBeNull();
      const dropped = await app.inject({
        method: 'PUT',
        url: record,
        headers: alice,
        payload: { data: { title: 't' } },
      });
      expect(dropped.statusCode).toBe(200);
      expect(await files.read(attachment.location)).toBeNull();
    });

    it('a refused record write (If-Match, schema) leaves no file and no change', async () => {
      const app = await server({ experimental_collection_schema_validation: true });
      const { record, endpoint } = await place(app, {
        schema: { type: 'object', properties: { author: { type: 'string' } } },
      });
      const before = await files.list();
      const schema = await upload(app, endpoint, photo('x', { data: { author: 12 } }));
      expect(schema.statusCode).toBe(400);
      expect(schema.json().message).toContain('author');
      const first = await upload(app, endpoint, photo());
      const form = photo();
      const stale = await app.inject({
        method: 'POST',
        url: endpoint,
        payload: form.body,
        headers: { ...alice, 'content-type': form.contentType, 'if-match': '"1"' },
      });
      expect(stale.statusCode).toBe(412);
      expect((await app.inject({ url: record, headers: alice })).json().data.attachment).toEqual(first.json());
      expect((await files.list()).length).toBe(before.length + 1);
      expect(await files.notes()).toEqual([]);
    });

    it('gzipped: stores the gzip, describes the original', async () => {
      const app = await server({ attachment_gzipped: true });
      const { endpoint } = await place(app);
      const content = 'a'.repeat(10_000);
      const attachment = (
        await upload(app, endpoint, fileForm({ filename: 'big.txt', content, contentType: 'text/plain' }))
      ).json<Attachment>();
      expect(attachment).toMatchObject({
        filename: 'big.txt.gz',
        mimetype: 'application/x-gzip',
        original: { filename: 'big.txt', hash: sha256(content), mimetype: 'text/plain', size: 10_000 },
      });
      expect(attachment.location).toMatch(/\.txt\.gz$/);
      const stored = await files.read(attachment.location);
      expect(stored?.length).toBe(attachment.size);
      expect(attachment.hash).toBe(sha256(stored!));
      const { gunzipSync } = await import('node:zlib');
      expect(gunzipSync(stored!).toString()).toBe(content);
    });

    it('folder pattern and unrandomized names stay unguessable and unique', async () => {
      const app = await server({ attachment_folder: 'files/{collection_id}', attachment_randomize: false });
      const { endpoint } = await place(app);
      const one = (
        await upload(app, endpoint, fileForm({ filename: 'My Report (final).pdf', content: 'a' }))
      ).json<Attachment>();
      const two = (
        await upload(app, endpoint.replace('r1', 'r2'), fileForm({ filename: 'My Report (final).pdf', content: 'b' }))
      ).json<Attachment>();
      expect(one.location).toMatch(/^files\/c\/[0-9a-f-]{36}\/My_Report_final.pdf$/);
      expect(one.location).not.toBe(two.location);
      expect(one.filename).toBe('My Report (final).pdf');
    });

    it('in /batch: a DELETE of the attachment commits with the batch; a POST is refused', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const attachment = (await upload(app, endpoint, photo())).json<Attachment>();
      const refused = await app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: alice,
        payload: { requests: [{ method: 'POST', path: endpoint.slice(3), body: { data: {} } }] },
      });
      expect(refused.json().responses[0].status).toBe(400);
      // A failing sub-request after it rolls the batch back: the file stays.
      const rolledBack = await app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: alice,
        payload: {
          requests: [
            { method: 'DELETE', path: endpoint.slice(3) },
            { method: 'PUT', path: '/buckets/x/collections/y/records/z', body: { data: { last_modified: 'bad' } } },
          ],
        },
      });
      expect(rolledBack.statusCode).toBeGreaterThanOrEqual(200);
      const batch = await app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: alice,
        payload: { requests: [{ method: 'DELETE', path: endpoint.slice(3) }] },
      });
      expect(batch.json().responses[0].status).toBe(204);
      expect(await files.read(attachment.location)).toBeNull();
      expect((await app.inject({ url: record, headers: alice })).json().data.attachment).toBeNull();
    });

    it('history, quotas and the change monitor see attachment changes', async () => {
      const app = await server({
        history_enabled: true,
        quotas_enabled: true,
        quotas_bucket: { max_bytes: 50_000 },
        changes_enabled: true,
      });
      const { bucket, collection, endpoint } = await place(app);
      const uploaded = await upload(app, endpoint, photo('x'.repeat(20_000)));
      // The change monitor: the collection's entry moves to the upload's timestamp.
      const changes = (
        await app.inject({ url: `/v1/buckets/monitor/collections/changes/records?bucket=${bucket}`, headers: alice })
      ).json().data;
      const entry = changes.find((item: { collection: string }) => item.collection === collection.split('/').at(-1));
      expect(`"${entry.last_modified}"`).toBe(uploaded.headers.etag);
      const entries = (
        await app.inject({ url: `/v1/buckets/${bucket}/history?resource_name=record`, headers: alice })
      ).json().data;
      expect(entries[0]).toMatchObject({ action: 'create', target: { data: { attachment: { size: 20_000 } } } });
      // 20 kB counted: a second file of 40 kB passes the bucket's 50 kB.
      const over = await upload(app, endpoint.replace('r1', 'r2'), photo('y'.repeat(40_000)));
      expect(over.statusCode).toBe(507);
      await app.inject({ method: 'DELETE', url: endpoint, headers: alice });
      const detached = (
        await app.inject({ url: `/v1/buckets/${bucket}/history?resource_name=record`, headers: alice })
      ).json().data;
      expect(detached[0]).toMatchObject({ action: 'update', target: { data: { attachment: null } } });
      expect((await upload(app, endpoint.replace('r1', 'r2'), photo('y'.repeat(40_000)))).statusCode).toBe(201);
    });

    it('the personal bucket: its collection is created on upload, Location names the real bucket', async () => {
      const app = await server({ default_bucket_enabled: true });
      const response = await upload(app, '/v1/buckets/default/collections/pix/records/r/attachment', photo());
      expect(response.statusCode).toBe(201);
      expect(response.headers.location).toMatch(
        /\/v1\/buckets\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/collections\/pix\/records\/r$/,
      );
    });

    it('GET {record}/attachment: the file for readers only', async () => {
      const app = await server({ attachment_private: true });
      const { record, endpoint } = await place(app);
      const attachment = (await upload(app, endpoint, photo('private bytes'))).json<Attachment>();
      expect((await app.inject({ url: `${endpoint}`, headers: bob })).statusCode).toBe(403);
      const mine = await app.inject({ url: endpoint, headers: alice });
      if (fileBackend === 'local') {
        expect(mine.statusCode).toBe(200);
        expect(mine.body).toBe('private bytes');
        expect(mine.headers['content-type']).toMatch(/^image\/jpeg/);
        expect(mine.headers['cache-control']).toBe('private, no-cache');
        // Not served at base_url.
        expect((await app.inject({ url: `/v1/attachments/${attachment.location}` })).statusCode).toBe(404);
      } else {
        expect(mine.statusCode).toBe(307);
        const signed = await fetch(String(mine.headers.location));
        expect(await signed.text()).toBe('private bytes');
      }
      await app.inject({ method: 'DELETE', url: endpoint, headers: alice });
      expect((await app.inject({ url: endpoint, headers: alice })).json()).toMatchObject({
        code: 404,
        message: 'This record has no attachment.',
      });
      expect((await app.inject({ url: `${record}404/attachment`, headers: alice })).statusCode).toBe(404);
    });

    it('export/import carry the file index: imported records keep their files, deleting removes them', async () => {
      const app = await server();
      const { record, endpoint } = await place(app);
      const attachment = (await upload(app, endpoint, photo('moved'))).json<Attachment>();
      const { exportStore } = await import('../src/transfer/export.js');
      const { importStore } = await import('../src/transfer/import.js');
      const { createSqliteStorage } = await import('../src/storage/sqlite/sqlite-storage.js');
      const { buildServer } = await import('../src/app.js');
      const { testSettings } = await import('./helpers/embedded-server.js');
      const { PassThrough, Readable } = await import('node:stream');
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (chunk: Buffer) => chunks.push(chunk));
      await exportStore(app.services.storage, out, { pageSize: 100 });
      out.end();
      const target = await createSqliteStorage();
      // The same file store: with a directory, what `cp -a`/rsync of base_path gives; with S3, the same bucket.
      const copy = await buildServer({ settings: testSettings(files.settings()), storage: target, logger: false });
      try {
        await importStore(target, Readable.from([Buffer.concat(chunks)]), { batchSize: 100, replace: false });
        expect([200, 307]).toContain((await copy.inject({ url: endpoint, headers: alice })).statusCode);
        await copy.inject({ method: 'DELETE', url: record, headers: alice });
        expect(await files.read(attachment.location)).toBeNull();
      } finally {
        await copy.close();
        await target.close();
      }
    });

    it('the journal: an interrupted upload is swept, a committed file is kept', async () => {
      const app = await server({ attachment_sweep_grace_seconds: 10 });
      const { collection, endpoint } = await place(app);
      const kept = (await upload(app, endpoint, photo())).json<Attachment>();
      // What a crash leaves: a stored file no record holds, and a note naming it (and one naming a held file).
      const { Journal } = await import('../src/attachments/journal.js');
      const { createFileBackend } = await import('../src/attachments/index.js');
      const { testSettings } = await import('./helpers/embedded-server.js');
      const backend = await createFileBackend(testSettings(files.settings()));
      const { Readable } = await import('node:stream');
      const orphan = `${collection.slice(12).replace('/collections/', '/')}/orphan.jpg`;
      await backend.write(orphan, Readable.from([Buffer.from('lost')]), {
        contentType: 'image/jpeg',
        disposition: 'inline',
        signal: new AbortController().signal,
      });
      const journal = new Journal(backend, app.services.storage, { graceMs: 10_000, log: () => undefined });
      const { collection: uri } = { collection: collection.slice(3) };
      await journal.announce([
        { location: orphan, collection: uri, record: 'r9' },
        { location: kept.location, collection: uri, record: 'r1' },
      ]);
      expect(await journal.sweep()).toBe(0); // too recent: maybe an upload under way
      expect(await journal.sweep(Date.now() + 20_000)).toBe(1);
      expect(await files.read(orphan)).toBeNull();
      expect(await files.read(kept.location)).not.toBeNull();
      expect(await files.notes()).toEqual([]);
      await backend.close();
    });
  });
}

describe('attachments: heartbeat and metrics', () => {
  const files = useFileStore('local');
  describeOnBackends('observability', { timeout: 30_000 }, ({ serverWith }) => {
    it('the heartbeat fails (503, attachments: false) when the backend cannot write', async () => {
      const dir = String(files.settings().attachment_base_path);
      const app = await serverWith(files.settings());
      const { rm, writeFile, mkdir } = await import('node:fs/promises');
      const { join } = await import('node:path');
      const notes = join(dir, '.quire', 'notes');
      await rm(notes, { recursive: true, force: true });
      await writeFile(notes, 'not a directory');
      try {
        const broken = await app.inject({ url: '/v1/__heartbeat__' });
        expect(broken.statusCode).toBe(503);
        expect(broken.json()).toMatchObject({ storage: true, attachments: false });
      } finally {
        await rm(notes, { force: true });
        await mkdir(notes, { recursive: true });
      }
      expect((await app.inject({ url: '/v1/__heartbeat__' })).json()).toMatchObject({ attachments: true });
    });

    it('metrics count uploads by result, bytes and deleted files', async () => {
      const app = await serverWith(files.settings({ metrics_enabled: true }));
      await app.inject({ method: 'PUT', url: '/v1/buckets/m', headers: alice });
      await app.inject({ method: 'PUT', url: '/v1/buckets/m/collections/c', headers: alice });
      const send = (form: { body: Buffer; contentType: string }) =>
        app.inject({
          method: 'POST',
          url: '/v1/buckets/m/collections/c/records/r/attachment',
          payload: form.body,
          headers: { ...alice, 'content-type': form.contentType },
        });
      expect((await send(fileForm({ filename: 'a.jpg', content: '12345' }))).statusCode).toBe(201);
      expect((await send(fileForm({ filename: 'a.exe', content: 'x' }))).statusCode).toBe(400);
      await app.inject({ method: 'DELETE', url: '/v1/buckets/m/collections/c/records/r/attachment', headers: alice });
      const text = (await app.inject({ url: '/__metrics__' })).body;
      expect(text).toMatch(/quire_attachment_uploads_total\{backend="local",result="stored"\} 1/);
      expect(text).toMatch(/quire_attachment_uploads_total\{backend="local",result="refused"\} 1/);
      expect(text).toMatch(/quire_attachment_upload_bytes_total\{backend="local"\} 5/);
      expect(text).toMatch(/quire_attachment_deleted_files_total\{backend="local"\} 1/);
    });
  });
});

describe('attachments, local files served at base_url', () => {
  const files = useFileStore('local');
  describeOnBackends('serving', { timeout: 30_000 }, ({ serverWith }) => {
    it('serves files with their type, ETag, immutable caching and ranges', async () => {
      const app = await serverWith(files.settings());
      await app.inject({ method: 'PUT', url: '/v1/buckets/s', headers: alice });
      await app.inject({ method: 'PUT', url: '/v1/buckets/s/collections/c', headers: alice });
      const form = fileForm({ filename: 'data.json', content: '0123456789', contentType: 'application/json' });
      const attachment = (
        await app.inject({
          method: 'POST',
          url: '/v1/buckets/s/collections/c/records/r/attachment',
          payload: form.body,
          headers: { ...alice, 'content-type': form.contentType },
        })
      ).json<Attachment>();
      const base = (await app.inject({ url: '/v1/' })).json().capabilities.attachments.base_url as string;
      const url = new URL(attachment.location, base).pathname;
      const whole = await app.inject({ url });
      expect(whole.statusCode).toBe(200);
      expect(whole.body).toBe('0123456789');
      expect(whole.headers['content-type']).toMatch(/^application\/json/);
      expect(whole.headers['cache-control']).toContain('immutable');
      expect(whole.headers['accept-ranges']).toBe('bytes');
      const etag = String(whole.headers.etag);
      expect((await app.inject({ url, headers: { 'if-none-match': etag } })).statusCode).toBe(304);
      const part = await app.inject({ url, headers: { range: 'bytes=2-4' } });
      expect(part.statusCode).toBe(206);
      expect(part.body).toBe('234');
      expect(part.headers['content-range']).toBe('bytes 2-4/10');
      expect((await app.inject({ url, headers: { range: 'bytes=20-30' } })).statusCode).toBe(416);
      for (const bad of [
        '/v1/attachments/s%2f..%2f..%2fx',
        '/v1/attachments/.quire/notes/x',
        '/v1/attachments/s/c/nothing.json',
      ]) {
        expect((await app.inject({ url: bad })).statusCode, bad).toBe(404);
      }
    });
  });
});
