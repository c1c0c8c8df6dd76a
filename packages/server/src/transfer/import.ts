/**
 * `quire import`: loads an export (format.ts) into any store, objects and tombstones with their
 * ids and `last_modified`, their ACLs, group memberships and the scope timestamps — so clients
 * keep syncing with `_since` against the new store as against the old one.
 *
 * All or nothing, in two passes. The first reads the input once, line by line (a line longer
 * than the limit is refused before it is held whole), and checks every line as the API would
 * (validate.ts) and against the lines before it (staging.ts: parents given and live, no object
 * twice unless `replace`, unique timestamps per scope), keeping them in a temporary file: the
 * first refusal names its line, and nothing has been written. Only then is the store touched:
 * a store that already holds buckets or accounts is refused, unless `replace` (then it is
 * emptied first and holds exactly what the import holds), and the staged lines are written a
 * batch per transaction (memory bounded by the batch size). Should the store fail meanwhile,
 * what was written is removed again (the store was empty, or being replaced) and the error
 * names the lines of the failed batch.
 */
import type { Readable } from 'node:stream';
import type { Permissions, Scope, Storage, StoredObject, Tombstone } from '../storage/types.js';
import { FORMAT, objectUri, VERSION, type Line } from './format.js';
import { Staging, type StagedLine } from './staging.js';
import {
  checkHeader,
  checkLine,
  DEFAULT_LIMITS,
  ImportError,
  isTombstone,
  type LineLimits,
  parseLine,
} from './validate.js';

export { ImportError } from './validate.js';

export interface ImportOptions {
  /** Lines (objects and scope timestamps) per transaction. */
  batchSize: number;
  /**
   * Empty a store that holds data first, rather than refusing; and let a later line for the
   * same object replace an earlier one, rather than refusing the import.
   */
  replace: boolean;
  /** Bounds on one line (default: from the API's default limits on a request body). */
  limits?: LineLimits;
  /** Where the temporary file of the first pass goes (default: the system's). */
  tempDir?: string;
  onProgress?: (objects: number) => void;
}

/** What an import did. */
export interface ImportSummary {
  /** Objects written (tombstones included). */
  objects: number;
  /** Lines that replaced an earlier line for the same object (only with `replace`). */
  replaced: number;
}

/**
 * Lines of a stream with their numbers (every line counts, blank ones too, so that a number
 * names the line an editor shows), pulled as the consumer asks (backpressure). A line is never
 * held past `maxBytes`: a longer one is refused as soon as it passes the limit.
 */
async function* numberedLines(input: Readable, maxBytes: number): AsyncGenerator<{ number: number; text: string }> {
  let pieces: Buffer[] = [];
  let held = 0;
  let number = 1;
  const tooLong = () => new ImportError(`line ${number}: longer than ${maxBytes} bytes`);
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    let data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a)) {
      if (held + end > maxBytes) throw tooLong();
      pieces.push(data.subarray(0, end));
      const text = Buffer.concat(pieces).toString('utf8');
      pieces = [];
      held = 0;
      data = data.subarray(end + 1);
      yield { number, text };
      number++;
    }
    if (held + data.length > maxBytes) throw tooLong();
    if (data.length) {
      pieces.push(Buffer.from(data)); // a copy: the stream may reuse its chunk
      held += data.length;
    }
  }
  if (held > 0) yield { number, text: Buffer.concat(pieces).toString('utf8') };
}

/** Whether the store holds any bucket or account, live or deleted. */
async function holdsData(storage: Storage): Promise<boolean> {
  for (const resourceName of ['bucket', 'account']) {
    if (
      (
        await storage.read((session) =>
          session.objects.list({ resourceName, parentId: '' }, { includeDeleted: true, limit: 1 }),
        )
      ).length
    )
      return true;
  }
  return false;
}

/** First pass: every line checked and staged, or the first refusal. Nothing is written. */
async function stage(input: Readable, options: ImportOptions, staging: Staging): Promise<number> {
  const limits = options.limits ?? DEFAULT_LIMITS;
  let header = false;
  let replaced = 0;
  for await (const { number, text } of numberedLines(input, limits.maxLineBytes)) {
    if (!text.trim()) continue;
    const value = parseLine(text, number, limits);
    if (!header) {
      checkHeader(value, FORMAT, VERSION);
      header = true;
      continue;
    }
    const before = staging.count;
    staging.add(checkLine(value, number, limits), text, number, options.replace);
    if (staging.count === before) replaced++;
  }
  if (!header) throw new ImportError(`not a ${FORMAT} stream: it is empty`);
  return replaced;
}

/** Writes one batch of staged lines in one transaction; returns the number of objects. */
async function write(storage: Storage, batch: StagedLine[]): Promise<number> {
  const lines: Line[] = batch.map((staged) => staged.line);
  await storage.transaction(async (session) => {
    // Consecutive lines of one scope go in one statement.
    for (let start = 0; start < lines.length; ) {
      const line = lines[start]!;
      if ('scope' in line) {
        await session.objects.import(
          { resourceName: line.scope.resource, parentId: line.scope.parent },
          [],
          line.scope.timestamp,
        );
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
        if (uri && scope.resourceName === 'group' && Array.isArray(members) && !isTombstone(item.object))
          groups.push([uri, members as string[]]);
      }
      await session.objects.import(scope, run);
      for (const [uri, permissions] of acls) await session.permissions.set(uri, permissions);
      for (const [uri, members] of groups) await session.permissions.setGroupMembers(uri, members);
      start = end;
    }
  });
  return lines.filter((line) => !('scope' in line)).length;
}

/** Loads the stream into `storage`, all or nothing (see above). */
export async function importStore(storage: Storage, input: Readable, options: ImportOptions): Promise<ImportSummary> {
  const staging = await Staging.open(options.tempDir);
  try {
    const replaced = await stage(input, options, staging);
    if (await holdsData(storage)) {
      if (!options.replace)
        throw new ImportError(
          'the target store already holds data: import into an empty store, or pass --replace to delete everything in it first',
        );
      await storage.flush();
    }
    let objects = 0;
    for (const batch of staging.batches(options.batchSize)) {
      try {
        objects += await write(storage, batch);
      } catch (error) {
        // Not half-written: the store was empty (or emptied), so it is emptied again.
        const range = `${batch[0]!.number}${batch.length > 1 ? `-${batch.at(-1)!.number}` : ''}`;
        const undone = await storage.flush().then(
          () => 'nothing was imported',
          (flushError: unknown) =>
            `and emptying the store again failed too (${(flushError as Error).message}): it may hold part of the import`,
        );
        throw new ImportError(`lines ${range}: the store refused them (${(error as Error).message}); ${undone}`, {
          cause: error,
        });
      }
      options.onProgress?.(objects);
    }
    // A collection created through the API has a records timestamp from the start (the change
    // monitor's `_since` reads walk those); an export has no line for an empty scope.
    for (const uris of staging.emptyCollections(options.batchSize)) {
      await storage.transaction(async (session) => {
        for (const uri of uris) await session.objects.timestamp({ resourceName: 'record', parentId: uri });
      });
    }
    return { objects, replaced };
  } finally {
    await staging.close();
  }
}
