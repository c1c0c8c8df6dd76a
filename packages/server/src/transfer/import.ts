/**
 * `quire import`: loads an export (format.ts) into any store, objects and tombstones with their
 * ids and `last_modified`, their ACLs, group memberships and the scope timestamps — so clients
 * keep syncing with `_since` against the new store as against the old one. The input is read as
 * a stream, a batch of lines per transaction (memory bounded by the batch size).
 *
 * A store that already holds buckets or accounts is refused, unless `replace`: then it is
 * emptied first (everything in it is deleted), and holds exactly what the export holds.
 */
import type { Readable } from 'node:stream';
import type { Permissions, Scope, Storage, StoredObject, Tombstone } from '../storage/types.js';
import { FORMAT, objectUri, VERSION, type HeaderLine, type Line, type ObjectLine } from './format.js';

export interface ImportOptions {
  /** Lines (objects and scope timestamps) per transaction. */
  batchSize: number;
  /** Empty a store that holds data first, rather than refusing. */
  replace: boolean;
  onProgress?: (objects: number) => void;
}

export class ImportError extends Error {
  override name = 'ImportError';
}

/** Lines of a stream, pulled as the consumer asks for them (async iteration keeps backpressure). */
async function* lines(input: Readable): AsyncGenerator<string> {
  let rest = '';
  input.setEncoding('utf8');
  for await (const chunk of input as AsyncIterable<string>) {
    rest += chunk;
    for (let end = rest.indexOf('\n'); end !== -1; end = rest.indexOf('\n')) {
      const line = rest.slice(0, end);
      rest = rest.slice(end + 1);
      if (line.trim()) yield line;
    }
  }
  if (rest.trim()) yield rest;
}

/** Whether the store holds any bucket or account, live or deleted. */
async function holdsData(storage: Storage): Promise<boolean> {
  for (const resourceName of ['bucket', 'account']) {
    if ((await storage.read((session) => session.objects.list({ resourceName, parentId: '' }, { includeDeleted: true, limit: 1 }))).length) return true;
  }
  return false;
}

function parse(text: string, number: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ImportError(`line ${number}: not JSON`);
  }
}

function checkLine(value: unknown, number: number): Line {
  const line = value as Partial<ObjectLine> & { scope?: { resource?: unknown; parent?: unknown; timestamp?: unknown } };
  if (line && typeof line === 'object') {
    if (line.scope && typeof line.scope.resource === 'string' && typeof line.scope.parent === 'string' && Number.isSafeInteger(line.scope.timestamp)) return line as Line;
    const object = line.object as Partial<StoredObject> | undefined;
    if (typeof line.resource === 'string' && typeof line.parent === 'string' && object && typeof object.id === 'string' && Number.isSafeInteger(object.last_modified)) return line as Line;
  }
  throw new ImportError(`line ${number}: neither an object nor a scope line of a ${FORMAT} stream`);
}

/** Loads the stream into `storage`; returns the number of objects imported. */
export async function importStore(storage: Storage, input: Readable, options: ImportOptions): Promise<number> {
  const source = lines(input);
  const first = await source.next();
  const header = first.done ? undefined : (parse(first.value, 1) as Partial<HeaderLine>);
  if (header?.format !== FORMAT) throw new ImportError(`not a ${FORMAT} stream (its first line must be {"format":"${FORMAT}",…})`);
  if (header.version !== VERSION) throw new ImportError(`${FORMAT} version ${String(header.version)} is not supported (this quire reads version ${VERSION})`);
  if (await holdsData(storage)) {
    if (!options.replace) throw new ImportError('the target store already holds data: import into an empty store, or pass --replace to delete everything in it first');
    await storage.flush();
  }

  let imported = 0;
  let batch: Line[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const lines = batch;
    batch = [];
    await storage.transaction(async (session) => {
      // Consecutive lines of one scope go in one statement.
      for (let start = 0; start < lines.length; ) {
        const line = lines[start]!;
        if ('scope' in line) {
          await session.objects.import({ resourceName: line.scope.resource, parentId: line.scope.parent }, [], line.scope.timestamp);
          start++;
          continue;
        }
        const scope: Scope = { resourceName: line.resource, parentId: line.parent };
        let end = start;
        const run: Array<StoredObject | Tombstone> = [];
        const acls: Array<[string, Permissions]> = [];
        const groups: Array<[string, string[]]> = [];
        for (; end < lines.length; end++) {
          const item = lines[end]!;
          if ('scope' in item || item.resource !== line.resource || item.parent !== line.parent) break;
          run.push(item.object);
          const uri = objectUri(scope, item.object.id);
          if (uri && item.permissions) acls.push([uri, item.permissions]);
          const members = (item.object as Record<string, unknown>).members;
          if (uri && scope.resourceName === 'group' && Array.isArray(members) && !(item.object as Partial<Tombstone>).deleted) groups.push([uri, members as string[]]);
        }
        await session.objects.import(scope, run);
        for (const [uri, permissions] of acls) await session.permissions.set(uri, permissions);
        for (const [uri, members] of groups) await session.permissions.setGroupMembers(uri, members);
        start = end;
      }
    });
    imported += lines.filter((line) => !('scope' in line)).length;
    options.onProgress?.(imported);
  };

  let number = 1;
  for await (const text of source) {
    number++;
    batch.push(checkLine(parse(text, number), number));
    if (batch.length >= options.batchSize) await flush();
  }
  await flush();
  return imported;
}
