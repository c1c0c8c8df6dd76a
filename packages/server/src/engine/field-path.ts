/** Dotted field paths (`person.name`) of filters, sorts, `_fields` and pagination tokens (§7). */

/** Resolves a dotted path in an object; `undefined` when absent. */
export function getPath(object: Record<string, unknown>, path: string): unknown {
  let current: unknown = object;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current) || !Object.hasOwn(current, part))
      return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}
