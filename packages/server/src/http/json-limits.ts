/**
 * Bounds on the shape of JSON documents (settings `max_json_depth`, `max_json_keys`): the time a
 * write takes grows with its number of keys (100,000 keys once took 10 s on the embedded store),
 * and deep nesting overflows recursive code (JSON.stringify, secure-json-parse: a body nested
 * 10,000 deep used to be refused as "forbidden prototype property"). Bodies are measured on
 * their text, before JSON.parse: parsing 10 MB nested five million deep takes seconds.
 */

export interface JsonLimits {
  /** Levels of objects and arrays, the outermost being level 1. */
  maxDepth: number;
  /** Object keys and array items, all levels together. */
  maxKeys: number;
}

export type JsonLimitExceeded = 'depth' | 'keys';

/** True when the quote at `index` is escaped (preceded by an odd run of backslashes). */
function escapedQuote(text: string, index: number): boolean {
  let backslashes = 0;
  for (let at = index - 1; text.charCodeAt(at) === 0x5c; at--) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Which limit the JSON `text` exceeds, if any, from one pass over its structural characters
 * (strings are skipped with indexOf). Stops at the first excess, so a hostile body costs little.
 * Text that is not JSON is measured as best it can be; JSON.parse refuses it afterwards.
 */
export function measureJsonText(text: string, limits: JsonLimits): JsonLimitExceeded | null {
  const inArray: boolean[] = [];
  let keys = 0;
  let arrayJustOpened = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (char === 0x20 || char === 0x0a || char === 0x0d || char === 0x09) continue;
    // The first item of a non-empty array has no comma before it.
    if (arrayJustOpened) {
      arrayJustOpened = false;
      if (char !== 0x5d) keys++;
    }
    switch (char) {
      case 0x22: {
        let end = index;
        do {
          end = text.indexOf('"', end + 1);
          if (end === -1) return null;
        } while (escapedQuote(text, end));
        index = end;
        break;
      }
      case 0x7b: // {
      case 0x5b: // [
        inArray.push(char === 0x5b);
        if (inArray.length > limits.maxDepth) return 'depth';
        arrayJustOpened = char === 0x5b;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        inArray.pop();
        break;
      case 0x3a: // : one object key
        keys++;
        break;
      case 0x2c: // , one more array item (in an object, its key's colon counted it)
        if (inArray[inArray.length - 1]) keys++;
        break;
    }
    if (keys > limits.maxKeys) return 'keys';
  }
  return null;
}

/**
 * The same measure on a parsed value (e.g. an object's data after a PATCH), without recursion.
 * `depth` is the level of `value` itself (2 for the `data` of a body `{"data": …}`), and
 * `keys` what was already counted around it.
 */
export function measureJsonValue(
  value: unknown,
  limits: JsonLimits,
  { depth = 1, keys = 0 } = {},
): JsonLimitExceeded | null {
  const stack: Array<[unknown, number]> = [[value, depth]];
  let count = keys;
  while (stack.length > 0) {
    const [current, level] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (level > limits.maxDepth) return 'depth';
    const children: unknown[] = Array.isArray(current) ? current : Object.values(current);
    count += children.length;
    if (count > limits.maxKeys) return 'keys';
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, level + 1]);
  }
  return null;
}

/** Object keys and array items in `value`, all levels together; counting stops past `atMost`. */
export function countJsonKeys(value: unknown, atMost: number): number {
  const stack: unknown[] = [value];
  let count = 0;
  while (stack.length > 0 && count <= atMost) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object') continue;
    const children: unknown[] = Array.isArray(current) ? current : Object.values(current);
    count += children.length;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push(child);
  }
  return count;
}

/** The refusal's text, naming the setting to change. */
export function describeExcess(excess: JsonLimitExceeded, limits: JsonLimits): string {
  return excess === 'depth'
    ? `more than max_json_depth (${limits.maxDepth}) levels of nesting`
    : `more than max_json_keys (${limits.maxKeys}) object keys and array items`;
}
