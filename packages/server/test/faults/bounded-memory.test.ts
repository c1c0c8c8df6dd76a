/**
 * Issue 19 item 10: after fuzzing, the embedded server's RSS reached ~955 MB. The SQLite
 * connections kept their 256 most recent prepared statements whatever their size, and a listing
 * with many filters or sort fields (each dotted field with number segments is up to eight JSON
 * paths) is a statement of tens of kilobytes of SQL, some hundreds of kilobytes of prepared
 * memory: distinct hostile listings filled the caches with them. Every cache keyed by what a
 * request sends must stay bounded: checked here by the caches' own sizes, not by RSS.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/app.js';
import { schemaValidator } from '../../src/schema/validator.js';
import {
  STATEMENT_CACHE_MAX_SQL_LENGTH,
  STATEMENT_CACHE_MAX_TOTAL_SQL_LENGTH,
  statementCacheTotals,
} from '../../src/storage/sqlite/connection.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { basicAuth, testSettings } from '../helpers/embedded-server.js';
import { listen } from './protocol.js';

const AUTH = { ...basicAuth('alice'), 'content-type': 'application/json' };
const RECORDS = '/v1/buckets/b/collections/c/records';

describe('caches keyed by request input stay bounded (issue 19.10)', { timeout: 120_000 }, () => {
  let dir: string;
  let storage: Storage;
  let base: string;
  let close: () => Promise<void>;
  // Query limits raised: the statements must be long to show what the caches keep.
  const settings = testSettings({
    experimental_collection_schema_validation: true,
    schema_validator_cache_size: 16,
    max_query_sort_fields: 100,
    max_query_filters: 1000,
  });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'quire-bounded-'));
    // On a file, as `quire start` runs it: a writer and read-only connections, each with its cache.
    storage = await createSqliteStorage({ path: join(dir, 'quire.sqlite') });
    const app = await buildServer({ settings, storage, logger: false });
    base = `http://127.0.0.1:${await listen(app)}`;
    close = () => app.close();
    for (const path of ['/v1/buckets/b', '/v1/buckets/b/collections/c']) {
      expect((await request(`${base}${path}`, { method: 'PUT', headers: AUTH, body: '{}' })).statusCode).toBe(201);
    }
  });

  afterAll(async () => {
    await close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function get(path: string): Promise<number> {
    const response = await request(`${base}${path}`, { headers: AUTH });
    await response.body.text();
    return response.statusCode;
  }

  it('keeps the SQLite statement caches within their budget under distinct hostile listings', async () => {
    const statusCodes = new Set<number>();
    for (let index = 0; index < 400; index++) {
      const count = 5 + (index % 60);
      const fields = Array.from({ length: count }, (_, field) => `f${index}_${field}.${field % 7}.1.2`);
      const queries = [
        `_sort=${fields.join(',')}`,
        fields
          .map(
            (field, position) => `${['eq', 'min', 'has', 'like', 'in', 'contains'][position % 6]}_${field}=${position}`,
          )
          .join('&'),
        `_fields=${fields.join(',')}&not_${fields[0]}=1&_since=${index}`,
      ];
      for (const query of queries) statusCodes.add(await get(`${RECORDS}?${query}`));
    }
    expect([...statusCodes].filter((status) => status >= 500)).toEqual([]);
    const totals = statementCacheTotals();
    console.log(
      `[bounded memory] statement caches after 1,200 hostile listings: ${totals.statements} statements, ` +
        `${totals.sqlLength} characters of SQL on ${totals.connections} connections`,
    );
    expect(totals.connections).toBeGreaterThan(0);
    // No statement built from a long query is kept, and each connection stays within its budget.
    expect(totals.longest).toBeLessThanOrEqual(STATEMENT_CACHE_MAX_SQL_LENGTH);
    expect(totals.sqlLength).toBeLessThanOrEqual(totals.connections * STATEMENT_CACHE_MAX_TOTAL_SQL_LENGTH);
  });

  it('keeps compiled schemas within schema_validator_cache_size', async () => {
    for (let index = 0; index < 40; index++) {
      const schema = { type: 'object', properties: { [`p${index}`]: { type: 'string', maxLength: index + 1 } } };
      const put = await request(`${base}/v1/buckets/b/collections/s${index}`, {
        method: 'PUT',
        headers: AUTH,
        body: JSON.stringify({ data: { schema } }),
      });
      expect(put.statusCode).toBe(201);
      await put.body.text();
      const record = await request(`${base}/v1/buckets/b/collections/s${index}/records`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ data: { [`p${index}`]: 'x' } }),
      });
      expect(record.statusCode).toBe(201);
      await record.body.text();
    }
    expect(schemaValidator(settings).cacheSize).toBeLessThanOrEqual(16);
  });
});
