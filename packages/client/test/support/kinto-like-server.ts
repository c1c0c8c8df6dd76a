/**
 * A small real HTTP server that answers the part of the protocol a replica's sync uses the way
 * the original Kinto (26.x, memory or PostgreSQL backend) answers it, for the tests of what our
 * client does against "another deployment of the protocol" where Quire and Kinto differ.
 *
 * Only what sync touches: `GET /`, a collection's PUT/DELETE, its records list (GET/HEAD with
 * `_since`, `_before`, `_sort=±last_modified`, `_limit`, `_fields`, `_token` pages, ETag,
 * `If-None-Match` → 304, `If-Match` → 412, `Total-Objects`), a record's PUT/DELETE with their
 * preconditions (412 with `details.existing`), and `/batch`. One user, no permissions.
 *
 * Kinto's timestamps, as its storage keeps them (protocol-reference §5):
 * - a collection's timestamp is max(the last_modified of its records and tombstones, its stored
 *   "empty collection" timestamp); the first read of a collection never written stores `now`;
 * - a write takes max(now, timestamp + 1);
 * - deleting a collection hard-deletes its records and tombstones AND its stored timestamp
 *   (Kinto PR #1233, "clear timestamps table when deleting parents"): the re-created collection's
 *   first read stores `now` afresh. So `_since=<old ETag>` answers 200, no records, and an ETag
 *   above the old one — what kinto.js reports as `ServerWasFlushedError`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface StoredRecord {
  id: string;
  last_modified: number;
  deleted?: true;
  [field: string]: unknown;
}

interface Collection {
  records: Map<string, StoredRecord>;
  /** The stored "empty collection" timestamp (Kinto's `timestamps` row), null when none yet. */
  stored: number | null;
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface KintoLikeServer {
  /** Base URL, ending in `/v1`. */
  url: string;
  /** Every request received, as `METHOD /path?query` (batch sub-requests included, prefixed `batch:`). */
  requests: string[];
  close(): Promise<void>;
}

const BATCH_MAX_REQUESTS = 25;
const MAX_PAGE = 10_000;

function error(status: number, errno: number, message: string, details?: unknown): Answer {
  const titles: Record<number, string> = { 400: 'Invalid parameters', 404: 'Not Found', 412: 'Precondition Failed' };
  return {
    status,
    body: { code: status, errno, error: titles[status] ?? 'Error', message, ...(details ? { details } : {}) },
  };
}

/** `"123"` → 123; anything else (absent, `*`) → undefined. */
function quoted(value: string | undefined): number | undefined {
  const match = value ? /^"(\d+)"$/.exec(value) : null;
  return match ? Number(match[1]) : undefined;
}

export async function startKintoLikeServer(): Promise<KintoLikeServer> {
  const buckets = new Set<string>();
  const collections = new Map<string, Collection>();
  const requests: string[] = [];

  const timestampOf = (collection: Collection): number => {
    let newest = collection.stored ?? -1;
    for (const record of collection.records.values()) newest = Math.max(newest, record.last_modified);
    if (newest === -1) collection.stored = newest = Date.now();
    return newest;
  };
  const bump = (collection: Collection): number => {
    const next = Math.max(Date.now(), timestampOf(collection) + 1);
    collection.stored = next;
    return next;
  };

  function listRecords(
    collection: Collection,
    method: string,
    query: URLSearchParams,
    headers: Record<string, string | undefined>,
    base: string,
    path: string,
  ): Answer {
    const etag = timestampOf(collection);
    const etagHeaders = { ETag: `"${etag}"`, 'Last-Modified': new Date(etag).toUTCString() };
    const ifNoneMatch = quoted(headers['if-none-match']);
    if (ifNoneMatch === etag) return { status: 304, headers: etagHeaders };
    const ifMatch = quoted(headers['if-match']);
    if (ifMatch !== undefined && ifMatch !== etag)
      return { ...error(412, 114, 'Resource was modified meanwhile'), headers: etagHeaders };
    for (const key of ['_since', '_before', '_limit']) {
      const value = query.get(key);
      if (value !== null && !/^"?\d+"?$/.test(value)) return error(400, 107, `${key} is not a number`);
    }
    const since = query.has('_since') ? Number(query.get('_since')!.replaceAll('"', '')) : undefined;
    const before = query.has('_before') ? Number(query.get('_before')!.replaceAll('"', '')) : undefined;
    const ascending = query.get('_sort') === 'last_modified';
    const limit = Math.min(Number(query.get('_limit') ?? MAX_PAGE), MAX_PAGE);
    // Tombstones come only with a last_modified filter (§5.4).
    const withTombstones = since !== undefined || before !== undefined;
    let matching = [...collection.records.values()].filter(
      (record) =>
        (withTombstones || !record.deleted) &&
        (since === undefined || record.last_modified > since) &&
        (before === undefined || record.last_modified < before),
    );
    const total = matching.filter((record) => !record.deleted).length;
    matching.sort((a, b) => (ascending ? a.last_modified - b.last_modified : b.last_modified - a.last_modified));
    const token = query.get('_token');
    if (token) {
      const { last_object: last } = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as {
        last_object: { last_modified: number };
      };
      matching = matching.filter((record) =>
        ascending ? record.last_modified > last.last_modified : record.last_modified < last.last_modified,
      );
    }
    const page = matching.slice(0, limit);
    const answerHeaders: Record<string, string> = {
      ...etagHeaders,
      'Total-Objects': String(total),
      'Total-Records': String(total),
    };
    if (matching.length > limit) {
      const next = new URLSearchParams(query);
      next.set(
        '_token',
        Buffer.from(
          JSON.stringify({ last_object: { last_modified: page.at(-1)!.last_modified }, offset: limit }),
        ).toString('base64'),
      );
      answerHeaders['Next-Page'] = `${base}${path}?${next}`;
    }
    if (method === 'HEAD') return { status: 200, headers: answerHeaders };
    const fields = query.get('_fields')?.split(',');
    const data = page.map((record) =>
      fields && !record.deleted
        ? Object.fromEntries(
            Object.entries(record).filter(([key]) => key === 'id' || key === 'last_modified' || fields.includes(key)),
          )
        : record,
    );
    return { status: 200, headers: answerHeaders, body: { data } };
  }

  function writeRecord(
    collection: Collection,
    method: string,
    id: string,
    headers: Record<string, string | undefined>,
    body: unknown,
  ): Answer {
    const existing = collection.records.get(id);
    const live = existing && !existing.deleted ? existing : undefined;
    const ifMatch = headers['if-match'];
    const ifNoneMatch = headers['if-none-match'];
    const details = live ? { existing: live } : undefined;
    if (ifNoneMatch === '*' && live) return error(412, 114, 'Resource was modified meanwhile', details);
    if (ifMatch !== undefined && (!live || quoted(ifMatch) !== live.last_modified)) {
      // Kinto: a DELETE of a missing record is 404 before any precondition.
      if (method === 'DELETE' && !live)
        return error(404, 110, 'The resource you are looking for could not be found.', { id, resource_name: 'record' });
      return error(412, 114, 'Resource was modified meanwhile', details);
    }
    if (method === 'DELETE') {
      if (!live)
        return error(404, 110, 'The resource you are looking for could not be found.', { id, resource_name: 'record' });
      const tombstone: StoredRecord = { id, last_modified: bump(collection), deleted: true };
      collection.records.set(id, tombstone);
      return { status: 200, headers: { ETag: `"${tombstone.last_modified}"` }, body: { data: tombstone } };
    }
    const data = ((body as { data?: Record<string, unknown> } | undefined)?.data ?? {}) as Record<string, unknown>;
    const { id: _id, last_modified: _lm, ...fields } = data;
    const record: StoredRecord = { ...fields, id, last_modified: bump(collection) };
    collection.records.set(id, record);
    return {
      status: live ? 200 : 201,
      headers: { ETag: `"${record.last_modified}"` },
      body: { data: record, permissions: { write: ['basicauth:user'] } },
    };
  }

  function handle(
    method: string,
    rawPath: string,
    headers: Record<string, string | undefined>,
    body: unknown,
    base: string,
  ): Answer {
    const url = new URL(rawPath, 'http://kinto.invalid');
    const path = url.pathname.replace(/^\/v1/, '').replace(/\/$/, '') || '/';
    if (path === '/' && method === 'GET') {
      return {
        status: 200,
        body: {
          project_name: 'kinto',
          project_version: '26.3.1',
          http_api_version: '1.23',
          url: `${base}/`,
          settings: { batch_max_requests: BATCH_MAX_REQUESTS, readonly: false },
          capabilities: {},
        },
      };
    }
    if (path === '/batch' && method === 'POST') {
      const { requests: subRequests = [], defaults = {} } = (body ?? {}) as {
        requests?: Array<Record<string, unknown>>;
        defaults?: Record<string, unknown>;
      };
      if (subRequests.length > BATCH_MAX_REQUESTS)
        return error(400, 107, `requests: Number of requests is limited to ${BATCH_MAX_REQUESTS}`);
      const responses = subRequests.map((request) => {
        const sub = { ...defaults, ...request } as {
          method?: string;
          path: string;
          headers?: Record<string, string>;
          body?: unknown;
        };
        const subHeaders = Object.fromEntries(
          Object.entries(sub.headers ?? {}).map(([key, value]) => [key.toLowerCase(), value]),
        );
        const subMethod = (sub.method ?? 'GET').toUpperCase();
        requests.push(`batch:${subMethod} ${sub.path}`);
        const answer = handle(subMethod, sub.path, subHeaders, sub.body, base);
        return { status: answer.status, path: sub.path, headers: answer.headers ?? {}, body: answer.body ?? null };
      });
      return { status: 200, body: { responses } };
    }
    const parts = path.split('/').slice(1);
    if (parts[0] !== 'buckets' || !parts[1])
      return error(404, 111, 'The resource you are looking for could not be found.');
    const bucket = parts[1];
    if (parts.length === 2 && method === 'PUT') {
      const created = !buckets.has(bucket);
      buckets.add(bucket);
      return { status: created ? 201 : 200, body: { data: { id: bucket, last_modified: Date.now() } } };
    }
    if (parts[2] !== 'collections' || !parts[3] || !buckets.has(bucket))
      return error(404, 111, 'The resource you are looking for could not be found.');
    const key = `${bucket}/${parts[3]}`;
    const collection = collections.get(key);
    if (parts.length === 4) {
      if (method === 'PUT') {
        if (!collection) collections.set(key, { records: new Map(), stored: null });
        return { status: collection ? 200 : 201, body: { data: { id: parts[3], last_modified: Date.now() } } };
      }
      if (method === 'DELETE' && collection) {
        // Records, tombstones and the stored timestamp all go (Kinto #1223 / #1233).
        collections.delete(key);
        return { status: 200, body: { data: { id: parts[3], last_modified: Date.now(), deleted: true } } };
      }
      if (method === 'GET' && collection)
        return { status: 200, body: { data: { id: parts[3], last_modified: Date.now() } } };
    }
    if (!collection || parts[4] !== 'records')
      return error(404, 111, 'The resource you are looking for could not be found.');
    if (parts.length === 5 && (method === 'GET' || method === 'HEAD'))
      return listRecords(collection, method, url.searchParams, headers, base, `/v1${path}`);
    if (parts.length === 6 && (method === 'PUT' || method === 'DELETE'))
      return writeRecord(collection, method, parts[5]!, headers, body);
    return error(405, 115, 'Method not allowed on this endpoint.');
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}`);
      const text = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([key, value]) => [key, Array.isArray(value) ? value.join(', ') : value]),
      );
      const { port } = server.address() as AddressInfo;
      const answer = handle(
        req.method ?? 'GET',
        req.url ?? '/',
        headers,
        text ? JSON.parse(text) : undefined,
        `http://127.0.0.1:${port}`,
      );
      const payload =
        answer.body === undefined || req.method === 'HEAD' || answer.status === 304 ? '' : JSON.stringify(answer.body);
      res.writeHead(answer.status, {
        'Content-Type': 'application/json',
        'Access-Control-Expose-Headers':
          'ETag, Last-Modified, Next-Page, Total-Objects, Total-Records, Backoff, Retry-After, Alert',
        ...answer.headers,
      });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}
