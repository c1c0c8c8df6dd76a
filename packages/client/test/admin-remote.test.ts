/**
 * `@quire/client/admin` (the console's protocol client) against a real Quire server on the
 * embedded store: objects by path with their version, pages and their Next-Page links, counts,
 * preconditions, JSON-Patch of permissions, accounts, and a batch abandoned through its signal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AdminRemote,
  createAdminRemote,
  type KintoObject,
  PreconditionFailedError,
  ServerError,
  SyncAbortedError,
} from '../src/admin.js';
import { basicAuth, createCollection, seed, startServer, type TestServer, uniqueName } from './support/server.js';

describe('AdminRemote', () => {
  let server: TestServer;
  let admin: AdminRemote;
  let bucket: string;
  const records = () => `/buckets/${bucket}/collections/tasks/records`;

  beforeAll(async () => {
    server = await startServer({
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
    });
    admin = createAdminRemote({ remote: server.url, auth: { type: 'header', value: basicAuth('alice') }, retries: 0 });
    bucket = uniqueName('admin');
    await createCollection(server.url, bucket, 'tasks');
    await seed(server.url, bucket, 'tasks', 7);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('reads the server, and an object with its permissions and version', async () => {
    const hello = await admin.hello();
    expect(hello.user?.id).toMatch(/^basicauth:/);
    expect(hello.capabilities.accounts).toBeDefined();
    const collection = await admin.getObject(`/buckets/${bucket}/collections/tasks`);
    expect(collection.data.id).toBe('tasks');
    expect(collection.etag).toBe(`"${collection.data.last_modified}"`);
    expect(collection.permissions.write).toEqual([hello.user!.id]);
  });

  it('reads a list page by page through Next-Page, and counts it with HEAD', async () => {
    const first = await admin.page<KintoObject>(`${records()}?_limit=3&_sort=n`);
    expect(first.data.map((record) => record.n)).toEqual([0, 1, 2]);
    expect(first.nextPage).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/buckets\//);
    const second = await admin.page<KintoObject>(first.nextPage!);
    expect(second.data.map((record) => record.n)).toEqual([3, 4, 5]);
    expect(await admin.count(`${records()}?min_n=2`)).toBe(5);
    // Where the caller may not list, the count is unknown rather than an error.
    expect(await admin.count('/buckets/does-not-exist/collections/x/records')).toBeNull();
  });

  it('writes by path with preconditions: create once, update the version read, refuse a stale one', async () => {
    const path = `${records()}/by-path`;
    const created = await admin.putObject(path, { title: 'first' }, { ifNoneMatch: true });
    await expect(admin.putObject(path, { title: 'again' }, { ifNoneMatch: true })).rejects.toBeInstanceOf(
      PreconditionFailedError,
    );
    const patched = await admin.patchObject(path, { data: { done: true } }, { ifMatch: created.data.last_modified });
    expect(patched.data).toMatchObject({ title: 'first', done: true });
    const stale = admin.deleteObject(path, { ifMatch: created.data.last_modified });
    await expect(stale).rejects.toMatchObject({ status: 412 });
    const posted = await admin.createIn(records(), { title: 'server id' });
    expect(posted.data.id).toMatch(/^[0-9a-f-]{36}$/);
    await admin.deleteObject(path, { ifMatch: patched.data.last_modified });
    await expect(admin.getObject(path)).rejects.toMatchObject({ status: 404 });
  });

  it('changes one principal of one permission with JSON-Patch', async () => {
    const path = `/buckets/${bucket}/collections/tasks`;
    const answer = await admin.jsonPatch(path, [{ op: 'add', path: '/permissions/read/system.Authenticated' }]);
    expect(answer.permissions?.read).toEqual(['system.Authenticated']);
    expect((await admin.getObject(path)).permissions.write).toHaveLength(1);
  });

  it('manages accounts', async () => {
    // Signing up is done anonymously (a signed-in user may only create an account of its own id).
    const id = uniqueName('carol');
    const anonymous = createAdminRemote({ remote: server.url, retries: 0 });
    await anonymous.createAccount(id, 'first-password');
    await expect(anonymous.createAccount(id, 'other')).rejects.toMatchObject({ status: 412 });
    const carol = createAdminRemote({
      remote: server.url,
      auth: { type: 'basic', username: id, password: 'first-password' },
      retries: 0,
    });
    expect((await carol.hello()).user?.id).toBe(`account:${id}`);
    await carol.setAccountPassword(id, 'second-password');
    const renewed = createAdminRemote({
      remote: server.url,
      auth: { type: 'basic', username: id, password: 'second-password' },
      retries: 0,
    });
    await renewed.deleteAccount(id);
    await expect(renewed.getObject(`/accounts/${id}`)).rejects.toBeInstanceOf(ServerError);
  });

  it('sends one batch, and abandons it when its signal aborts', async () => {
    const responses = await admin.sendBatch([
      { method: 'PUT', path: `${records()}/b1`, body: { data: { n: 100 } } },
      { method: 'GET', path: `${records()}/missing` },
    ]);
    expect(responses.map((response) => response.status)).toEqual([201, 404]);
    // The page that sent it moves on while the request is on its way (fetch delayed by 200 ms).
    const slow = createAdminRemote({
      remote: server.url,
      auth: { type: 'header', value: basicAuth('alice') },
      retries: 0,
      fetch: (input, init) =>
        new Promise((resolve, reject) => setTimeout(() => fetch(input, init).then(resolve, reject), 200)),
    });
    const controller = new AbortController();
    const sent = slow.sendBatch(
      [{ method: 'PUT', path: `${records()}/b2`, body: { data: { n: 101 } } }],
      controller.signal,
    );
    setTimeout(() => controller.abort(), 20);
    await expect(sent).rejects.toBeInstanceOf(SyncAbortedError);
    await expect(admin.getObject(`${records()}/b2`)).rejects.toMatchObject({ status: 404 });
    // Aborted before the call: nothing goes out.
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      admin.sendBatch([{ method: 'PUT', path: `${records()}/b3`, body: { data: { n: 102 } } }], aborted.signal),
    ).rejects.toBeInstanceOf(SyncAbortedError);
    await expect(admin.getObject(`${records()}/b3`)).rejects.toMatchObject({ status: 404 });
  });
});
