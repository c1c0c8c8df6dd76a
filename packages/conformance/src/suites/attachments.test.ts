/**
 * Attachments: the `kinto-attachment` plugin's protocol (capability `attachments`), as its
 * clients (kinto-http's `addAttachment` / `removeAttachment`, kinto-admin) rely on it:
 * `POST {record}/attachment` with a multipart body (`attachment`, `data`, `permissions`),
 * `DELETE {record}/attachment`, the record's `attachment` field, files at
 * `base_url + location` removed with their record, collection or bucket, the plugin's errors,
 * and the permissions of a record write. Runs only when the server offers the capability.
 *
 * Files are fetched from `base_url` (public, as the original serves them) unless the capability
 * says `private: true` (a Quire setting), where `GET {record}/attachment` serves them instead.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ObjectBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { createBucket, createCollection, randomId } from '../harness/fixtures.js';
import { del, get, patch, put, request } from '../harness/http.js';
import { expectApiError } from '../harness/matchers.js';
import { alice, bob } from '../harness/users.js';

const info = await serverInfo();
const applies = applicable(
  info.hasCapability('attachments'),
  'attachments (kinto-attachment)',
  'capability attachments not offered',
);
const capability = (info.capabilities.attachments ?? {}) as { base_url?: string; private?: boolean };

interface Attachment {
  filename: string;
  hash: string;
  location: string;
  mimetype: string;
  size: number;
}

interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  value: string;
}

function multipart(parts: Part[]): { rawBody: Uint8Array; contentType: string } {
  const boundary = `conformance-${randomBytes(8).toString('hex')}`;
  let text = '';
  for (const part of parts) {
    text +=
      `--${boundary}\r\nContent-Disposition: form-data; ` +
      `name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}\r\n`;
    if (part.contentType) text += `Content-Type: ${part.contentType}\r\n`;
    text += `\r\n${part.value}\r\n`;
  }
  text += `--${boundary}--\r\n`;
  return { rawBody: new TextEncoder().encode(text), contentType: `multipart/form-data; boundary=${boundary}` };
}

function file(content: string, fields: { data?: unknown; permissions?: unknown } = {}, filename = 'image.jpg'): Part[] {
  const parts: Part[] = [{ name: 'attachment', filename, contentType: 'image/jpeg', value: content }];
  if (fields.data !== undefined) parts.push({ name: 'data', value: JSON.stringify(fields.data) });
  if (fields.permissions !== undefined) parts.push({ name: 'permissions', value: JSON.stringify(fields.permissions) });
  return parts;
}

function upload(path: string, parts: Part[], auth: typeof alice | null = alice, headers: Record<string, string> = {}) {
  return request<Attachment>('POST', `${path}/attachment`, { ...multipart(parts), auth, headers });
}

/** A fresh record URL in a new collection of alice's. */
async function place() {
  const bucket = await createBucket(alice);
  const collection = await createCollection(alice, bucket);
  const collectionPath = `/buckets/${bucket}/collections/${collection}`;
  return { bucket, collectionPath, record: `${collectionPath}/records/${randomId('rec')}` };
}

/** The file's bytes as a client gets them, or null when it is not served. */
async function fetchFile(record: string, attachment: Attachment): Promise<string | null> {
  const res = capability.private
    ? await request('GET', `${record}/attachment`, { auth: alice, redirect: 'follow' })
    : await request('GET', new URL(attachment.location, capability.base_url).toString());
  return res.status === 200 ? res.text : null;
}

/** Whether anything is still served at the location (its record may be gone). */
async function served(attachment: Attachment): Promise<boolean> {
  if (capability.private) return false; // only through its record: checked where the record lives
  return (await request('GET', new URL(attachment.location, capability.base_url).toString())).status === 200;
}

describe.runIf(applies)('attachments (kinto-attachment)', () => {
  it('capability `attachments` has a description, a url and a base_url ending with /', () => {
    expect(capability).toMatchObject({
      description: expect.any(String),
      url: expect.any(String),
      base_url: expect.stringMatching(/\/$/),
    });
  });

  it('POST creates the record with the file: 201, the attachment, Location of the record', async () => {
    const { record } = await place();
    const res = await upload(record, file('--fake--', { data: { family: 'sans' } }));
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      filename: 'image.jpg',
      hash: createHash('sha256').update('--fake--').digest('hex'),
      location: expect.any(String),
      mimetype: 'image/jpeg',
      size: 8,
    });
    expect(res.headers.get('location')).toMatch(new RegExp(`${record.replaceAll('/', '\\/')}$`));
    const stored = await get(record, { auth: alice });
    expect(stored.json.data).toMatchObject({ family: 'sans', attachment: res.json });
    expect(await fetchFile(record, res.json)).toBe('--fake--');
  });

  it('POST on an existing record: 200, its other fields kept, the previous file removed', async () => {
    const { record } = await place();
    await put(record, { auth: alice, body: { data: { author: 'frutiger' } } });
    const first = await upload(record, file('one'));
    expect(first.status).toBe(200);
    const second = await upload(record, file('two', { data: { family: 'sans' } }));
    expect(second.status).toBe(200);
    expect(second.json.location).not.toBe(first.json.location);
    expect((await get<ObjectBody>(record, { auth: alice })).json.data).toMatchObject({
      author: 'frutiger',
      family: 'sans',
      attachment: second.json,
    });
    expect(await served(first.json)).toBe(false);
    expect(await fetchFile(record, second.json)).toBe('two');
  });

  it('`permissions` sets the record’s permissions', async () => {
    const { record } = await place();
    expect((await upload(record, file('x', { permissions: { read: ['system.Everyone'] } }))).status).toBe(201);
    expect((await get(record)).status).toBe(200);
  });

  it('DELETE {record}/attachment: 204, attachment null, the file removed', async () => {
    const { record } = await place();
    const attachment = (await upload(record, file('x'))).json;
    const res = await del(`${record}/attachment`, { auth: alice });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await get<ObjectBody>(record, { auth: alice })).json.data.attachment).toBeNull();
    expect(await served(attachment)).toBe(false);
  });

  it('deleting the record, its collection or its bucket removes the file', async () => {
    const one = await place();
    const byRecord = (await upload(one.record, file('x'))).json;
    expect((await del(one.record, { auth: alice })).status).toBe(200);
    expect(await served(byRecord)).toBe(false);

    const two = await place();
    const byCollection = (await upload(two.record, file('x'))).json;
    expect((await del(two.collectionPath, { auth: alice })).status).toBe(200);
    expect(await served(byCollection)).toBe(false);

    const three = await place();
    const byBucket = (await upload(three.record, file('x'))).json;
    expect((await del(`/buckets/${three.bucket}`, { auth: alice })).status).toBe(200);
    expect(await served(byBucket)).toBe(false);
  });

  it('the attachment field cannot be changed by a record write', async () => {
    const { record } = await place();
    const attachment = (await upload(record, file('x'))).json;
    const res = await patch(record, {
      auth: alice,
      body: { data: { attachment: { ...attachment, location: 'elsewhere.jpg' } } },
    });
    expect(res.status).toBe(400);
    expect((res.json as { message?: string }).message).toContain('Attachment metadata cannot be modified');
  });

  describe('errors, as the plugin words them', () => {
    it('a body that is not multipart: 400 errno 107', async () => {
      const { record } = await place();
      const res = await request('POST', `${record}/attachment`, { auth: alice, body: {} });
      expectApiError(res, 400, 107, { message: 'Content-Type should be multipart/form-data', error: 'Bad Request' });
    });

    it('no file in `attachment`: 400 errno 109 "Attachment missing."', async () => {
      const { record } = await place();
      expectApiError(await upload(record, [{ name: 'fichierjoint', filename: 'image.jpg', value: 'x' }]), 400, 109, {
        message: 'Attachment missing.',
        error: 'Bad Request',
      });
    });

    it('a field other than data and permissions: 400 errno 109', async () => {
      const { record } = await place();
      const res = await upload(record, [...file('x'), { name: 'my_field', value: 'a_value' }]);
      expectApiError(res, 400, 109, {
        message: "body: 'my_field' not in ('data', 'permissions')",
        error: 'Bad Request',
      });
    });

    it('`data` that is not JSON: 400 errno 109', async () => {
      const { record } = await place();
      const res = await upload(record, [...file('x'), { name: 'data', value: '{>author: 12}' }]);
      expect(res.status).toBe(400);
      expect((res.json as unknown as { errno: number; message: string }).errno).toBe(109);
      expect((res.json as unknown as { message: string }).message).toContain('body: data is not valid JSON');
    });

    it('a file without a name: 400 "body: Filename is required."', async () => {
      const { record } = await place();
      const res = await upload(record, file('x', {}, ''));
      expectApiError(res, 400, 107, 'body: Filename is required.');
    });

    it('an extension outside the default set (.exe): 400 "body: File extension is not allowed."', async () => {
      const { record } = await place();
      const res = await upload(record, file('MZ', {}, 'virus.exe'));
      expectApiError(res, 400, 107, 'body: File extension is not allowed.');
      expect((await get(record, { auth: alice })).status).toBe(404);
    });

    it('DELETE of the attachment of a record that does not exist: 404, nothing created', async () => {
      const { record } = await place();
      expect((await del(`${record}/attachment`, { auth: alice })).status).toBe(404);
      expect((await get(record, { auth: alice })).status).toBe(404);
    });
  });

  describe('permissions: those of a record write', () => {
    it('anonymous: 401; another user: 403', async () => {
      const { record } = await place();
      expect((await upload(record, file('x'), null)).status).toBe(401);
      expect((await upload(record, file('x'), bob)).status).toBe(403);
    });

    it('record:create on the collection creates, but does not replace another’s file', async () => {
      const { collectionPath, record } = await place();
      await patch(collectionPath, {
        auth: alice,
        body: { permissions: { 'record:create': ['system.Authenticated'] } },
      });
      expect((await upload(`${collectionPath}/records/${randomId('bob')}`, file('x'), bob)).status).toBe(201);
      expect((await upload(record, file('x'))).status).toBe(201);
      expect((await upload(record, file('x'), bob)).status).toBe(403);
      expect((await del(`${record}/attachment`, { auth: bob })).status).toBe(403);
    });

    it('read on the collection does not let a reader replace or remove the file', async () => {
      const { collectionPath, record } = await place();
      await upload(record, file('x'));
      await patch(collectionPath, { auth: alice, body: { permissions: { read: ['system.Everyone'] } } });
      expect((await upload(record, file('y'), null)).status).toBe(401);
      expect((await upload(record, file('y'), bob)).status).toBe(403);
    });
  });
});
