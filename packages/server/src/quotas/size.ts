/**
 * The size of an object for quotas, as Kinto's `record_size` counts it: the length of
 * `json.dumps(obj, sort_keys=True, separators=(",", ":"))` — compact JSON with `id` and
 * `last_modified` included (the event's objects carry them). Key order does not change a length,
 * so nothing is sorted here. Python escapes every non-ASCII character (`ensure_ascii`): each
 * UTF-16 unit above U+007F counts as the six characters of its `\uXXXX` escape. (Numbers are
 * counted as JavaScript writes them: Python's `1.0` is 3 characters, ours 1.)
 */
export function objectSize(value: unknown): number {
  const text = JSON.stringify(value);
  let size = text.length;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) size += 5;
  return size;
}

/**
 * The bytes of a record's file, counted with it when attachments are on (the `attachment` field
 * is then the server's: clients cannot change its `size`). As stored: gzipped when so.
 */
export function attachmentSize(value: unknown): number {
  const size = (value as { attachment?: { size?: unknown } | null } | null)?.attachment?.size;
  return typeof size === 'number' && Number.isSafeInteger(size) && size > 0 ? size : 0;
}
