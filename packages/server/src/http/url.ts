/** The raw request URL split at `?`: path as sent (still percent-encoded) and query string. */
export function splitUrl(url: string | undefined): { path: string; query: string } {
  const raw = url ?? '';
  const index = raw.indexOf('?');
  return index === -1 ? { path: raw, query: '' } : { path: raw.slice(0, index), query: raw.slice(index + 1) };
}
