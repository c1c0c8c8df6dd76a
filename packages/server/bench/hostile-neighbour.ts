/**
 * The "hostile neighbour" row of `pnpm bench` (throughput.ts): a bystander's throughput (GET of
 * one record) while another client sends the worst requests the input limits allow, as a share
 * of the bystander's throughput alone, measured in alternating windows on the same server (issue
 * 36: target ≥ 50%). The hostile client: a page of the 1,000 records sorted on a data field,
 * with the most `_fields` (each a path of the greatest depth), the longest `exclude_` list and
 * the longest `like_` pattern the defaults allow.
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { INPUT_SETTINGS } from '../src/engine/settings.js';
import { AUTH, load } from './support.js';

/** Each measure alternates alone and beside in windows this long. */
const WINDOW_SECONDS = 1;

const limit = (name: keyof typeof INPUT_SETTINGS) => INPUT_SETTINGS[name].default as number;

/** The worst listing the defaults allow, on `listPath`. */
export function worstAllowedListing(listPath: string): string {
  const depth = limit('max_query_field_depth');
  // Short segments: the whole query must still fit in a request line (`max_header_bytes`).
  const path = (i: number) => [`a${i}`, ...Array.from({ length: depth - 1 }, (_, level) => `f${level}`)].join('.');
  const fields = Array.from({ length: limit('max_query_fields') }, (_, i) => path(i)).join(',');
  const excluded = Array.from({ length: limit('max_query_list_length') }, (_, i) => `x${i}`).join(',');
  const like = `*${'t*'.repeat(Math.floor((limit('max_query_like_length') - 1) / 2))}`;
  return `${listPath}?_sort=-title&_fields=${fields}&exclude_id=${excluded}&like_title=${like}`;
}

export interface NeighbourResult {
  alone: number;
  beside: number;
  hostile: number;
  /** The neighbour's listings/s in a window of its own (no bystander). */
  hostileAlone: number;
  /** Where the machine's CPU went in each kind of window, in ms per second (2 cores: 2,000 at most). */
  cpu?: Record<Kind, CpuSplit>;
}

/** The windows: the bystander alone, beside the neighbour, and the neighbour alone. */
export type Kind = 'alone' | 'beside' | 'neighbour';
const KINDS: Kind[] = ['alone', 'beside', 'neighbour'];

/** CPU at one moment: the server's, the load generator's (this process) and each PostgreSQL backend's. */
export interface CpuSample {
  server: number;
  bench: number;
  backends: Map<number, { ms: number; query: string }>;
}

/** CPU per second of a kind of window: PostgreSQL's split between backends that ran listings and the others. */
export interface CpuSplit {
  server: number;
  bench: number;
  pgListings: number;
  pgOthers: number;
}

/** A backend whose last statement was a hostile listing (its `like_`). */
const LISTING = / LIKE /;

/** How often a window samples the backends' CPU: one that exits (a cancelled listing's) loses at most this. */
const SAMPLE_MS = 100;

/** Sums CPU per kind of window; a backend counts as a listing's if it ran one in any sample. */
class CpuAccount {
  readonly #totals = Object.fromEntries(KINDS.map((kind) => [kind, { server: 0, bench: 0, seconds: 0 }])) as Record<
    Kind,
    { server: number; bench: number; seconds: number }
  >;
  readonly #backends = new Map<number, Record<Kind, number> & { listing: boolean }>();

  /** A window's samples, first to last: a backend born during it counts from 0, one gone at its last sample. */
  add(kind: Kind, samples: CpuSample[], seconds: number): void {
    const first = samples[0]!;
    const last = samples.at(-1)!;
    const total = this.#totals[kind];
    total.server += last.server - first.server;
    total.bench += last.bench - first.bench;
    total.seconds += seconds;
    const seen = new Map<number, { from: number; to: number; listing: boolean }>();
    for (const sample of samples)
      for (const [pid, now] of sample.backends) {
        const entry = seen.get(pid) ?? { from: first.backends.has(pid) ? now.ms : 0, to: now.ms, listing: false };
        entry.to = now.ms;
        entry.listing ||= LISTING.test(now.query);
        seen.set(pid, entry);
      }
    for (const [pid, { from, to, listing }] of seen) {
      const backend = this.#backends.get(pid) ?? { alone: 0, beside: 0, neighbour: 0, listing: false };
      backend[kind] += to - from;
      backend.listing ||= listing;
      this.#backends.set(pid, backend);
    }
  }

  split(kind: Kind): CpuSplit {
    const { server, bench, seconds } = this.#totals[kind];
    let pgListings = 0;
    let pgOthers = 0;
    for (const backend of this.#backends.values()) {
      if (backend.listing) pgListings += backend[kind];
      else pgOthers += backend[kind];
    }
    const perSecond = (ms: number) => ms / Math.max(seconds, 1e-3);
    return {
      server: perSecond(server),
      bench: perSecond(bench),
      pgListings: perSecond(pgListings),
      pgOthers: perSecond(pgOthers),
    };
  }
}

/**
 * The bystander's req/s alone and beside the hostile client, in alternating windows of
 * `WINDOW_SECONDS` (`duration` seconds of each in all), so that both see the same load of
 * whatever else runs on the machine.
 */
export async function hostileNeighbour(
  origin: string,
  bystanderPath: () => string,
  listPath: string,
  duration: number,
  cpu?: () => Promise<CpuSample>,
): Promise<NeighbourResult> {
  const bystander: autocannon.Options = {
    url: origin,
    // Another user than the neighbour's (AUTH): each has its fair share (max_requests_in_progress_per_identity).
    headers: { authorization: `Basic ${Buffer.from('bystander:bench').toString('base64')}` },
    connections: 8,
    duration: WINDOW_SECONDS,
    requests: [{ setupRequest: (request) => ({ ...request, path: bystanderPath() }) }],
  };
  const hostileOptions: autocannon.Options = {
    url: `${origin}${worstAllowedListing(listPath)}`,
    connections: 4,
    duration: WINDOW_SECONDS,
    headers: { authorization: AUTH },
  };
  const totals = { alone: 0, beside: 0, hostile: 0 };
  const account = new CpuAccount();
  /** Runs `work` as a window of `kind`, its CPU counted when `cpu` samples it. */
  const measured = async <T>(kind: Kind, work: () => Promise<T>): Promise<T> => {
    if (!cpu) return work();
    const samples = [await cpu()];
    const began = performance.now();
    let running = true;
    const sampling = (async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
        if (running) samples.push(await cpu());
      }
    })();
    const result = await work();
    running = false;
    await sampling;
    const seconds = (performance.now() - began) / 1000;
    samples.push(await cpu());
    account.add(kind, samples, seconds);
    return result;
  };
  const windows = Math.max(1, Math.round(duration / WINDOW_SECONDS));
  for (let window = 0; window < windows; window++) {
    totals.alone += (await measured('alone', () => load('bystander alone', bystander, 200))).count;
    await measured('beside', async () => {
      const hostile = autocannon(hostileOptions);
      totals.beside += (await load('bystander beside a hostile neighbour', bystander, 200)).count;
      totals.hostile += (await hostile).requests.total ?? 0;
    });
  }
  // The neighbour by itself: what each of its listings costs the server and PostgreSQL.
  const solo = await measured('neighbour', () => autocannon({ ...hostileOptions, duration: 2 * WINDOW_SECONDS }));
  const seconds = windows * WINDOW_SECONDS;
  return {
    alone: totals.alone / seconds,
    beside: totals.beside / seconds,
    hostile: totals.hostile / seconds,
    hostileAlone: (solo.requests.total ?? 0) / (2 * WINDOW_SECONDS),
    ...(cpu
      ? { cpu: Object.fromEntries(KINDS.map((kind) => [kind, account.split(kind)])) as Record<Kind, CpuSplit> }
      : {}),
  };
}
