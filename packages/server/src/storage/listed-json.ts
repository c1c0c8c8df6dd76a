/**
 * The JSON text of a listed object from its stored data's text, for both stores (`listJson`).
 * Stored data never holds `id`, `last_modified` or `deleted` (every write strips them: the
 * engine's `userFields`, the imports), so appending them makes the object `list` gives, fields
 * in the stored text's order (PostgreSQL's jsonb: by key length, then bytes), then the two.
 */
import type { ListedJson } from './types.js';

export function listedJson(id: string, lastModified: number, deleted: boolean, dataText: string): ListedJson {
  const own = `"id":${JSON.stringify(id)},"last_modified":${lastModified}`;
  if (deleted) return { id, last_modified: lastModified, deleted, json: `{${own},"deleted":true}` };
  // `{}` (with any inner blanks) has nothing to keep before the two fields.
  const body = dataText.slice(1, dataText.lastIndexOf('}')).trim();
  return { id, last_modified: lastModified, deleted, json: body === '' ? `{${own}}` : `{${body},${own}}` };
}
