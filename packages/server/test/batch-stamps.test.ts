/**
 * A batch's writes stamped at commit (PostgreSQL: the collection is locked only while the batch
 * commits, unit-of-work.ts `answeringAfterCommit`): each entry still answers its own timestamp,
 * in its headers and body, in the order of the sub-requests; what a later sub-request reads of an
 * earlier one's write carries the timestamp it was answered; the store keeps those timestamps.
 * The same on the embedded store, which stamps at once.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = { ...basicAuth('alice'), 'content-type': 'application/json' };
const RECORDS = '/buckets/b/collections/c/records';

interface Entry {
  status: number;
  headers: Record<string, string>;
  body: { data: Record<string, unknown> | Array<Record<string, unknown>> };
}

/** Each entry's timestamp: its ETag, which its Last-Modified and its body's object must agree with. */
function stampOf(entry: Entry): number {
  const etag = Number(entry.headers.ETag?.replaceAll('"', ''));
  expect(Number.isSafeInteger(etag)).toBe(true);
  expect(entry.headers['Last-Modified']).toBe(new Date(etag).toUTCString());
  if (Array.isArray(entry.body.data)) return etag; // a page: PostgreSQL's stored text, spaced
  expect(entry.body.data.last_modified).toBe(etag);
  expect(Number(entry.headers['Content-Length'])).toBe(Buffer.byteLength(JSON.stringify(entry.body)));
  return etag;
}

describeOnBackends('a batch stamped at commit', { timeout: 60_000 }, (backend) => {
  it('answers each write with its own timestamp, in order, as stored', async () => {
    const app = await backend.serverWith();
    for (const url of ['/v1/buckets/b', `/v1/buckets/b/collections/c`])
      expect((await app.inject({ method: 'PUT', url, headers: alice })).statusCode).toBe(201);
    const requests = [
      ...Array.from({ length: 5 }, (_, n) => ({ method: 'POST', path: RECORDS, body: { data: { n } } })),
      { method: 'PUT', path: `${RECORDS}/x`, headers: { 'If-None-Match': '*' }, body: { data: { n: 5 } } },
      { method: 'GET', path: `${RECORDS}/x` },
      { method: 'PUT', path: `${RECORDS}/x`, body: { data: { n: 6 } } },
      { method: 'POST', path: RECORDS, body: { data: { n: 7 } } },
      { method: 'DELETE', path: `${RECORDS}/x` },
      { method: 'GET', path: RECORDS },
    ];
    const response = await app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: { requests } });
    expect(response.statusCode).toBe(200);
    const entries = (response.json() as { responses: Entry[] }).responses;
    expect(entries.map((entry) => entry.status)).toEqual([201, 201, 201, 201, 201, 201, 200, 200, 201, 200, 200]);
    const stamps = entries.map(stampOf);
    // Writes in order, each above the one before; the GET of x answers its creation's timestamp.
    const writes = stamps.filter((_, i) => i !== 6 && i !== 10);
    for (let i = 1; i < writes.length; i++) expect(writes[i]).toBeGreaterThan(writes[i - 1]!);
    expect(stamps[6]).toBe(stamps[5]);
    // The listing after them: the collection's timestamp is the last write's.
    expect(stamps[10]).toBe(stamps[9]);
    const listed = entries[10]!.body.data as Array<Record<string, unknown>>;
    expect(listed.map((record) => record.n).sort()).toEqual([0, 1, 2, 3, 4, 7]);

    // As stored: each record read afterwards has the timestamp its creation answered.
    const after = await app.inject({ method: 'GET', url: `/v1${RECORDS}?_since=0`, headers: alice });
    const stored = new Map(
      (after.json() as { data: Array<{ id: string; last_modified: number }> }).data.map((r) => [r.id, r.last_modified]),
    );
    for (const i of [0, 1, 2, 3, 4, 8]) {
      const created = entries[i]!.body.data as { id: string; last_modified: number };
      expect(stored.get(created.id)).toBe(created.last_modified);
    }
    expect(stored.get('x')).toBe(stamps[9]);
    expect(after.headers.etag).toBe(`"${stamps[9]}"`);
  });

  it('sends a batch of creations in one collection with its commit (PostgreSQL)', async ({ skip }) => {
    if (backend.name !== 'postgresql') skip();
    const app = await backend.serverWith();
    for (const url of ['/v1/buckets/b2', `/v1/buckets/b2/collections/c`])
      expect((await app.inject({ method: 'PUT', url, headers: alice })).statusCode).toBe(201);
    const requests = Array.from({ length: 25 }, (_, n) => ({
      method: 'POST',
      path: '/buckets/b2/collections/c/records',
      body: { data: { n } },
    }));
    const send = () => app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: { requests } });
    await send(); // caches warm
    // What the batch's connection is sent (background work of the store goes on others).
    const sent: Array<{ client: pg.Client; text: string }> = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function logged(this: pg.Client, config: unknown, ...rest: unknown[]) {
      const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
      if (text) sent.push({ client: this, text });
      return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
    } as typeof query;
    try {
      expect((await send()).statusCode).toBe(200);
    } finally {
      pg.Client.prototype.query = query;
    }
    const begin = sent.find((statement) => statement.text.startsWith('BEGIN'));
    const ours = sent.filter((statement) => statement.client === begin?.client).map((statement) => statement.text);
    // The collection's timestamp is bumped once, by the statement storing the records, sent with
    // their ACLs and COMMIT (before them, reads only: the shared cache may have to be filled).
    const stamps = ours.filter((text) => text.includes('INSERT INTO timestamps'));
    expect(stamps.length, ours.join('\n')).toBe(1);
    expect(ours.slice(-3).map((text) => text.replace(/\s+/g, ' ').slice(0, 22))).toEqual([
      'WITH stamp AS ( INSERT',
      'WITH wanted AS ( SELEC',
      'COMMIT',
    ]);
    expect(ours.slice(0, -3).every((text) => /^(BEGIN|SELECT)/.test(text))).toBe(true);
  });
});
