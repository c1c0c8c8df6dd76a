/**
 * Bulk import of a JSON or CSV file into a collection, through `POST /batch` (§8): one batch of
 * `batch_max_requests` writes at a time, with progress and a report of every row that failed.
 *
 * A batch is one transaction on the server. 4xx answers (a record the schema refuses, a
 * precondition) are only entries of its answer, but a 409 rolls the whole batch back (Quire,
 * and Kinto's storage errors): the rows that answered 2xx in it were not kept, so they are sent
 * again in a batch of their own. A failed batch (5xx, network) is retried twice, then its rows
 * are reported as failed and the import goes on.
 */
import type { BatchRequest, BatchResponse } from '@quire/client/admin';
import { type AdminRemote, explain, isAbort, statusOf } from './remote.js';
import { parseCsv } from './csv.js';
import { coerceCell, isActiveSchema, isPlainObject, type JsonSchema } from './schema.js';

interface ImportRow {
  /** Position in the file (1-based, header excluded), as a person would count. */
  row: number;
  id?: string;
  data: Record<string, unknown>;
}

export type CsvTyping = 'auto' | 'text' | 'schema';

interface ParsedImport {
  format: 'JSON' | 'JSON lines' | 'CSV';
  rows: ImportRow[];
  /** Fields seen, for the preview. */
  columns: string[];
  /** Lines that could not be read (they are not imported). */
  problems: string[];
}

const ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;

function fromObject(value: unknown, row: number, problems: string[]): ImportRow | null {
  if (!isPlainObject(value)) {
    problems.push(`Row ${row}: not an object`);
    return null;
  }
  // A full export ({id, last_modified, …}) imports its fields; the server stamps its own time.
  const { id, last_modified: _lastModified, schema: _schema, ...data } = value;
  if (id === undefined || id === null || id === '') return { row, data };
  if (typeof id !== 'string' && typeof id !== 'number') {
    problems.push(`Row ${row}: id must be a string`);
    return null;
  }
  return { row, id: String(id), data };
}

function autoType(text: string): unknown {
  const trimmed = text.trim();
  if (/^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)$/.test(trimmed) && !/^-?0\d/.test(trimmed))
    return JSON.parse(trimmed);
  if ((trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))) {
    try {
      return JSON.parse(trimmed);
    } catch {
      return text;
    }
  }
  return text;
}

export function parseImport(
  fileName: string,
  text: string,
  options: { typing?: CsvTyping; schema?: JsonSchema | null } = {},
): ParsedImport {
  const problems: string[] = [];
  const trimmed = text.replace(/^\uFEFF/, '').trim();
  const looksJson = /\.(json|ndjson|jsonl)$/i.test(fileName) || trimmed.startsWith('[') || trimmed.startsWith('{');
  if (looksJson) {
    let parsed: unknown;
    let format: ParsedImport['format'] = 'JSON';
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      // JSON lines: one object per line.
      const lines = trimmed.split(/\r?\n/);
      if (lines.length > 1) {
        format = 'JSON lines';
        parsed = lines.flatMap((line, index) => {
          if (!line.trim()) return [];
          try {
            return [JSON.parse(line) as unknown];
          } catch {
            problems.push(`Line ${index + 1}: not valid JSON`);
            return [];
          }
        });
      } else {
        return { format, rows: [], columns: [], problems: [`Not valid JSON: ${(error as Error).message}`] };
      }
    }
    // `{"data": [...]}` is what the server's lists answer.
    const list = Array.isArray(parsed)
      ? parsed
      : isPlainObject(parsed) && Array.isArray(parsed.data)
        ? parsed.data
        : isPlainObject(parsed)
          ? [parsed]
          : null;
    if (!list) return { format, rows: [], columns: [], problems: ['Expected a list of objects, or {"data": [...]}'] };
    const rows = list
      .map((value, index) => fromObject(value, index + 1, problems))
      .filter((row): row is ImportRow => row !== null);
    return { format, rows, columns: columnsOf(rows), problems };
  }

  const table = parseCsv(text);
  const [header, ...lines] = table;
  if (!header) return { format: 'CSV', rows: [], columns: [], problems: ['The file is empty'] };
  const names = header.map((name) => name.trim());
  const schema = options.schema && isActiveSchema(options.schema) ? options.schema : null;
  const properties =
    schema && isPlainObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const typing = options.typing ?? (schema ? 'schema' : 'auto');
  const rows: ImportRow[] = [];
  lines.forEach((cells, index) => {
    const object: Record<string, unknown> = {};
    names.forEach((name, column) => {
      if (!name) return;
      const cell = cells[column] ?? '';
      if (cell === '') return;
      const value =
        name === 'id'
          ? cell.trim()
          : typing === 'text'
            ? cell
            : typing === 'schema' && schema
              ? coerceCell(cell, properties[name], schema)
              : autoType(cell);
      if (value !== undefined) object[name] = value;
    });
    if (cells.length > names.length)
      problems.push(`Row ${index + 1}: ${cells.length - names.length} cell(s) beyond the header ignored`);
    const row = fromObject(object, index + 1, problems);
    if (row) rows.push(row);
  });
  return { format: 'CSV', rows, columns: names.filter(Boolean), problems };
}

function columnsOf(rows: ImportRow[]): string[] {
  const columns = new Set<string>();
  if (rows.some((row) => row.id !== undefined)) columns.add('id');
  for (const row of rows.slice(0, 200)) for (const key of Object.keys(row.data)) columns.add(key);
  return [...columns];
}

export type ImportMode = 'upsert' | 'create';

interface ImportFailure {
  row: number;
  id?: string;
  status: number;
  message: string;
}

export interface ImportProgress {
  total: number;
  done: number;
  created: number;
  replaced: number;
  failures: ImportFailure[];
}

export interface ImportOptions {
  bucket: string;
  collection: string;
  rows: ImportRow[];
  mode: ImportMode;
  /** Sub-requests per batch (the server's `batch_max_requests`; null or 0: no limit). */
  batchSize: number | null;
  signal?: AbortSignal;
  onProgress?: (progress: ImportProgress) => void;
}

function messageOf(response: BatchResponse): string {
  const body = response.body as { message?: string; details?: { name?: string; description?: string }[] } | null;
  const detail = Array.isArray(body?.details) ? body.details[0] : undefined;
  if (response.status === 412) return 'A record with this id already exists (not replaced)';
  if (detail?.description) return `${detail.name ? `${detail.name}: ` : ''}${detail.description}`;
  return body?.message ?? `HTTP ${response.status}`;
}

function requestFor(row: ImportRow, base: string, mode: ImportMode): BatchRequest {
  if (row.id === undefined) return { method: 'POST', path: `${base}/records`, body: { data: row.data } };
  return {
    method: 'PUT',
    path: `${base}/records/${encodeURIComponent(row.id)}`,
    body: { data: row.data },
    ...(mode === 'create' ? { headers: { 'If-None-Match': '*' } } : {}),
  };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new DOMException('Aborted', 'AbortError'));
    });
  });

export async function runImport(api: AdminRemote, options: ImportOptions): Promise<ImportProgress> {
  const base = `/buckets/${encodeURIComponent(options.bucket)}/collections/${encodeURIComponent(options.collection)}`;
  const size = options.batchSize && options.batchSize > 0 ? options.batchSize : 100;
  const progress: ImportProgress = { total: options.rows.length, done: 0, created: 0, replaced: 0, failures: [] };
  const report = () => options.onProgress?.({ ...progress, failures: [...progress.failures] });
  const invalid = options.rows.filter((row) => row.id !== undefined && !ID.test(row.id));
  for (const row of invalid)
    progress.failures.push({
      row: row.row,
      id: row.id,
      status: 400,
      message: `Invalid id “${row.id}”: letters, digits, _ and - only`,
    });
  progress.done += invalid.length;
  const queue = options.rows.filter((row) => !invalid.includes(row));

  const fail = (rows: ImportRow[], status: number, message: string) => {
    for (const row of rows) progress.failures.push({ row: row.row, id: row.id, status, message });
    progress.done += rows.length;
  };

  /** Sends one batch; rows rolled back by a 409 come back to be sent again. */
  async function send(rows: ImportRow[]): Promise<ImportRow[]> {
    let responses: BatchResponse[] | null = null;
    for (let attempt = 0; attempt < 3 && !responses; attempt++) {
      try {
        responses = await api.sendBatch(
          rows.map((row) => requestFor(row, base, options.mode)),
          options.signal,
        );
      } catch (error) {
        if (isAbort(error)) throw error;
        const status = statusOf(error) ?? 0;
        const transient = status === 0 || status >= 500 || status === 429;
        if (!transient || attempt === 2) {
          fail(rows, status, `The batch failed: ${explain(error)}`);
          return [];
        }
        const retryAfter = Number((error as { headers?: Headers }).headers?.get('Retry-After') ?? 1);
        await sleep(Math.min(10, Number.isFinite(retryAfter) ? retryAfter : 1) * 1000, options.signal);
      }
    }
    if (!responses) return [];
    const rolledBack = responses.some((response) => response.status === 409);
    const again: ImportRow[] = [];
    for (const [index, row] of rows.entries()) {
      const response = responses[index];
      if (!response) fail([row], 0, 'No answer for this row');
      else if (response.status === 409) fail([row], 409, messageOf(response));
      else if (response.status < 200 || response.status >= 300) fail([row], response.status, messageOf(response));
      else if (rolledBack) again.push(row);
      else {
        progress.done++;
        if (response.status === 201) progress.created++;
        else progress.replaced++;
      }
    }
    return again;
  }

  report();
  for (let start = 0; start < queue.length; start += size) {
    if (options.signal?.aborted) break;
    let rows = queue.slice(start, start + size);
    // A batch with a 409 is sent again without the conflicting rows (a few times at most).
    for (let round = 0; round < 3 && rows.length; round++) rows = await send(rows);
    if (rows.length) fail(rows, 409, 'Rolled back with a conflicting row of its batch');
    report();
  }
  return progress;
}

/** The failures as a CSV-friendly table. */
export function failureRows(failures: ImportFailure[]): string[][] {
  return [
    ['row', 'id', 'status', 'message'],
    ...failures.map((failure) => [String(failure.row), failure.id ?? '', String(failure.status), failure.message]),
  ];
}
