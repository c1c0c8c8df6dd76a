/** Batch atomicity, which the HTTP suite cannot provoke: a failing sub-request rolls back all. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../app.js';
import { loadSettings } from '../config.js';
import { BackendError } from '../storage/errors.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { ObjectStore, Storage, StorageSession } from '../storage/types.js';

const auth = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };

/** Methods bound to their object (private fields need it); `replaced` ones answered instead. */
function intercept<T extends object>(target: T, replaced: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(replaced, property)) return replaced[property as keyof T];
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}

/** Wraps sessions so that creating the record id `explode` fails like a lost database. */
function failingOn(storage: Storage): Storage {
  const wrap = (session: StorageSession): StorageSession => {
    const create: ObjectStore['create'] = async (scope, id, ...rest) => {
      if (id === 'explode') throw new BackendError('connection lost');
      return session.objects.create(scope, id, ...rest);
    };
    return intercept(session, { objects: intercept(session.objects, { create }) });
  };
  return intercept(storage, {
    transaction: <T>(fn: (session: StorageSession) => Promise<T>) =>
      storage.transaction((session) => fn(wrap(session))),
    snapshot: <T>(fn: (session: StorageSession) => Promise<T>) => storage.snapshot((session) => fn(wrap(session))),
  });
}

describe('POST /batch atomicity', () => {
  let storage: Storage;
  let app: Awaited<ReturnType<typeof buildServer>>;

  beforeAll(async () => {
    storage = await createSqliteStorage();
    const settings = loadSettings({
      env: {},
      configFile: null,
      overrides: { userid_hmac_secret: 's', log_level: 'silent' },
    });
    app = await buildServer({ settings, storage: failingOn(storage), logger: false });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: auth });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: auth });
  });
  afterAll(async () => {
    await app.close();
    await storage.close();
  });

  it('rolls back every sub-request when one fails with a 5xx, and answers that error', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: auth,
      payload: {
        defaults: { method: 'PUT' },
        requests: [
          { path: '/buckets/b/collections/c/records/first', body: { data: { n: 1 } } },
          { path: '/buckets/b/collections/c/records/explode', body: { data: { n: 2 } } },
        ],
      },
    });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ code: 503, errno: 201 });
    expect(response.headers['retry-after']).toBeDefined();
    const first = await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/first', headers: auth });
    expect(first.statusCode).toBe(404);
  });

  it('keeps the writes of a batch whose failures are only 4xx', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: auth,
      payload: {
        requests: [
          { method: 'PUT', path: '/buckets/b/collections/c/records/kept', body: { data: { n: 1 } } },
          { method: 'GET', path: '/buckets/b/collections/c/records/missing' },
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().responses.map((entry: { status: number }) => entry.status)).toEqual([201, 404]);
    const kept = await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/kept', headers: auth });
    expect(kept.statusCode).toBe(200);
  });
});
