/**
 * The "hostile neighbour" row of `pnpm bench` (throughput.ts): a bystander's throughput (GET of
 * one record) while another client sends the worst requests the input limits allow, as a share
 * of the bystander's throughput alone, measured in alternating windows on the same server (issue
 * 36: target ≥ 50%). The hostile client: a page of the 1,000 records sorted on a data field,
 * with the most `_fields` (each a path of the greatest depth), the longest `exclude_` list and
 * the longest `like_` pattern the defaults allow.
 */
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
  const windows = Math.max(1, Math.round(duration / WINDOW_SECONDS));
  for (let window = 0; window < windows; window++) {
    totals.alone += (await load('bystander alone', bystander, 200)).count;
    const hostile = autocannon(hostileOptions);
    totals.beside += (await load('bystander beside a hostile neighbour', bystander, 200)).count;
    totals.hostile += (await hostile).requests.total ?? 0;
  }
  const seconds = windows * WINDOW_SECONDS;
  return { alone: totals.alone / seconds, beside: totals.beside / seconds, hostile: totals.hostile / seconds };
}
