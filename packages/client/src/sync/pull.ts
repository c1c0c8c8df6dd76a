/**
 * Pull: bring the replica up to the server's state with `_since` polling, page by page.
 *
 * A pull sweeps the range `(floor, before)` newest first (`_sort=-last_modified`), following
 * Next-Page with `If-Match: <ETag of the sweep's first page>`. Each page is written together with
 * a checkpoint, so memory stays bounded by one page and a crash resumes where it stopped.
 *
 * When the collection changes during a sweep (412 on a Next-Page, or a resumed checkpoint), the
 * rest of the sweep restarts as `_since=<floor>&_before=<oldest last_modified received>` (nothing
 * already received is fetched again), and once it completes a catch-up sweep runs from the newest
 * `last_modified` actually received.
 *
 * Deliberate difference from the interface spec's recipe ("store the 412's ETag as timestamp"):
 * `_since` is exclusive and the 412's ETag is the collection's *current* timestamp, so a write
 * made at exactly that timestamp — or any write between our first page and the 412 whose record
 * lies above the pages we already hold — would be skipped. Resuming from the newest
 * `last_modified` we received misses nothing. For the same reason the `_since` bound stored after
 * a completed pull is the newest `last_modified` received, not the ETag (on servers whose ETag
 * can run ahead of a not-yet-committed write, Kinto #602); the ETag is stored separately and only
 * used for `If-None-Match` (304 when nothing changed).
 *
 * A poll that returns no change at all while the collection's timestamp moved past the stored
 * ETag means the server's copy was emptied (deleted and re-created, or flushed): the pull then
 * hands over to `onEmptied` before it completes (`PullResult.emptied`).
 *
 * A partial replica's pull carries its filters (and `_unmatched=true` on polls, when the server
 * has `partial_replicas`: its stubs drop the records that left the subset, import.ts).
 */
import { PreconditionFailedError } from '../errors.js';
import type { LocalCollection } from '../store/local-collection.js';
import { completePull, readCheckpoint, readSyncState, writeCheckpoint, writeSyncState } from '../store/meta.js';
import type { PullCheckpoint, RemoteRecord } from '../store/types.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import { type HttpResponse, type HttpTransport, parseETag } from '../transport/http.js';
import { type ImportOutcome, importPage } from './import.js';

export interface PullOptions {
  http: HttpTransport;
  local: LocalCollection;
  bucket: string;
  collection: string;
  pageSize: number;
  signal?: AbortSignal;
  /**
   * A partial replica's subset (sync/subset.ts) and whether the server lists what left it
   * (`partial_replicas`: polls add `_unmatched=true`, and its stubs drop those records).
   * Filtered polls never tell an emptied server: a poll finding nothing while the ETag moved is
   * what any change outside the subset looks like.
   */
  subset?: { query: Record<string, string>; unmatched: boolean };
  /** The collection's remote transformers: each page is decoded before it is written. */
  decode?: (records: RemoteRecord[]) => Promise<RemoteRecord[]>;
  /** Called after each page is written (its conflicts are resolved before the next page). */
  onPage(outcome: ImportOutcome, progress: { done: number; total: number }): Promise<void>;
  /**
   * Called when a poll finds the server's copy emptied (see `PullResult.emptied`), before the
   * pull completes: if it fails (or the tab closes), the next poll sees the same signal again.
   */
  onEmptied?(): Promise<void>;
}

export interface PullResult {
  notModified: boolean;
  /** Records received from the server. */
  received: number;
  /**
   * The server's copy was emptied since the last pull: a poll (`_since`, after a completed pull)
   * returned no change at all while the collection's timestamp moved past the one the replica
   * holds. Only an emptied collection does that — deleted and re-created, or the server flushed —
   * and it is the signal Kinto's own client acts on ("Server has been flushed", protocol-reference
   * §15.3 step 4), from Kinto and from Quire alike.
   */
  emptied: boolean;
}

interface ListBody {
  data: RemoteRecord[];
}

function bounds(page: readonly RemoteRecord[]): { min: number; max: number } | null {
  if (page.length === 0) return null;
  let min = Infinity;
  let max = -Infinity;
  for (const record of page) {
    if (record.last_modified < min) min = record.last_modified;
    if (record.last_modified > max) max = record.last_modified;
  }
  return { min, max };
}

/**
 * A page received: where the next one is, and its records being decoded (started as soon as it
 * arrived). The response itself is not kept: once decoded, what the server sent can be collected.
 */
interface Fetched {
  next: string | null;
  page: Promise<RemoteRecord[]>;
}

function received(options: PullOptions, response: HttpResponse<ListBody>): Fetched {
  const records = response.body.data;
  const page = options.decode ? options.decode(records) : Promise.resolve(records);
  page.catch(() => {}); // awaited when its turn comes; a failure then fails the pull
  return { next: response.headers.get('next-page'), page };
}

/** Where a pull starts: a checkpoint left by an interrupted one, or the state of the last completed one. */
async function startingPoint(options: PullOptions) {
  const { db } = options.local;
  const state = await readSyncState(db);
  const saved = await readCheckpoint(db);
  // Resume an interrupted pull below what we already hold, then catch up from the top.
  let checkpoint: PullCheckpoint = saved
    ? saved.lowest === null
      ? saved
      : { ...saved, before: saved.lowest, lowest: null, catchUp: true }
    : { floor: state.since, before: null, lowest: null, newest: state.since, catchUp: false };
  // A first pull into an empty replica stores pages without per-record lookups (see importPage);
  // the flag survives in the checkpoint, since the records present then all came from this pull.
  const cold = saved ? saved.cold === true : state.since === null && (await options.local.count()) === 0;
  checkpoint = { ...checkpoint, cold };
  // A poll after a completed pull (not a resumed one): the only kind that can tell an emptied server.
  return { state, checkpoint, cold, polled: !saved && state.etag !== null };
}

export async function pull(options: PullOptions): Promise<PullResult> {
  const { local, signal } = options;
  const { db } = local;
  const path = endpoints.records(options.bucket, options.collection);
  const start = await startingPoint(options);
  const { state, cold, polled } = start;
  let { checkpoint } = start;
  let poll = polled;
  const progress = { received: 0, total: null as number | null, counted: false };

  for (;;) {
    signal?.throwIfAborted();
    const { subset } = options;
    const query = {
      ...subset?.query,
      _sort: '-last_modified',
      _limit: options.pageSize,
      _since: checkpoint.floor ?? undefined,
      _before: checkpoint.before ?? undefined,
      _unmatched: subset?.unmatched && checkpoint.floor !== null ? 'true' : undefined,
    };
    const headers: Record<string, string> =
      poll && state.etag !== null ? { 'If-None-Match': quoteETag(state.etag) } : {};
    const opened = await openSweep(options, { path, query, headers });
    if (!opened) {
      await writeSyncState(db, { ...state, lastSyncAt: Date.now() });
      return { notModified: true, received: progress.received, emptied: false };
    }
    poll = false;
    const { etag } = opened;
    const sweep = await sweepPages(options, opened.first, { checkpoint, cold, etag, query, progress });
    checkpoint = sweep.checkpoint;
    if (sweep.restarted) continue;
    if (checkpoint.catchUp) {
      const newest = checkpoint.newest;
      checkpoint = { floor: newest, before: null, lowest: null, newest, catchUp: false, cold };
      await writeCheckpoint(db, checkpoint);
      continue;
    }
    const emptied =
      polled && !options.subset && progress.received === 0 && etag !== null && state.etag !== null && etag > state.etag;
    if (emptied) await options.onEmptied?.();
    await completePull(db, { since: checkpoint.newest, etag, lastSyncAt: Date.now() });
    return { notModified: false, received: progress.received, emptied };
  }
}

/** The first page of a sweep and the collection's ETag; null when the server answered 304. */
async function openSweep(
  options: PullOptions,
  request: { path: string; query: Record<string, string | number | undefined>; headers: Record<string, string> },
): Promise<{ first: Fetched; etag: number | null } | null> {
  const signal = options.signal ? { signal: options.signal } : {};
  const response = await options.http.request<ListBody>({ ...request, ...signal });
  if (response.status === 304) return null;
  return { first: received(options, response), etag: parseETag(response.headers.get('etag')) };
}

/**
 * Writes the pages of one sweep, from its first response, following Next-Page with `If-Match`:
 * the next page is fetched, and decoded, while the current one is written (at most two pages in
 * memory). `restarted`: the collection changed between pages; the checkpoint says where to resume.
 */
async function sweepPages(
  options: PullOptions,
  first: Fetched,
  sweep: {
    checkpoint: PullCheckpoint;
    cold: boolean;
    etag: number | null;
    query: Record<string, string | number | undefined>;
    progress: { received: number; total: number | null; counted: boolean };
  },
): Promise<{ checkpoint: PullCheckpoint; restarted: boolean }> {
  const { http, local, signal } = options;
  const { etag, progress } = sweep;
  let { checkpoint } = sweep;
  let current = first;
  for (;;) {
    const { next } = current;
    const prefetch = next
      ? http
          .request<ListBody>({
            path: next,
            headers: etag === null ? {} : { 'If-Match': quoteETag(etag) },
            ...(signal ? { signal } : {}),
          })
          .then(
            (value) => ({ fetched: received(options, value) }),
            (error: unknown) => ({ error }),
          )
      : null;
    const page = await current.page;
    const range = bounds(page);
    if (range) {
      checkpoint = {
        ...checkpoint,
        lowest: checkpoint.lowest === null ? range.min : Math.min(checkpoint.lowest, range.min),
        newest: checkpoint.newest === null ? range.max : Math.max(checkpoint.newest, range.max),
      };
    }
    if (next && !progress.counted) {
      progress.counted = true;
      progress.total = await countRemote(options, sweep.query);
    }
    progress.received += page.length;
    const outcome = await importPage(local, page, checkpoint, sweep.cold);
    const total = progress.total === null ? progress.received : Math.max(progress.total, progress.received);
    await options.onPage(outcome, { done: progress.received, total });
    if (!prefetch) return { checkpoint, restarted: false };
    const settled = await prefetch;
    signal?.throwIfAborted();
    if ('error' in settled) {
      if (!(settled.error instanceof PreconditionFailedError)) throw settled.error;
      // The collection changed between pages: sweep the rest of the range again, then catch up.
      checkpoint = { ...checkpoint, before: checkpoint.lowest ?? checkpoint.before, lowest: null, catchUp: true };
      await writeCheckpoint(local.db, checkpoint);
      return { checkpoint, restarted: true };
    }
    current = settled.fetched;
  }
}

/** `Total-Objects` of the range being swept (for progress); null when the server does not say. */
async function countRemote(
  options: PullOptions,
  query: Record<string, string | number | undefined>,
): Promise<number | null> {
  const { _sort: _s, _limit: _l, ...filters } = query;
  try {
    const response = await options.http.request({
      method: 'HEAD',
      path: endpoints.records(options.bucket, options.collection),
      query: filters,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const value = response.headers.get('total-objects') ?? response.headers.get('total-records');
    return value === null ? null : Number(value);
  } catch {
    return null;
  }
}
