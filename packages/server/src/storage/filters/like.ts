/**
 * The `like` filter: what it matches, in linear time, and how each SQL dialect says the same.
 *
 * Meaning (storage/types.ts): `*` matches any run of characters, every other character is
 * literal (`%`, `_` and `\` too); a pattern without `*` matches anywhere in the string. Case is
 * ignored the way PostgreSQL's ILIKE ignores it under a UTF-8 locale, but the same everywhere:
 * both sides are folded code point by code point by Unicode's simple lowercase mapping
 * (`foldCase`), so `É` matches `é` and the Kelvin sign `K` matches `k`, whatever the database's
 * locale (Kinto's ILIKE folds only ASCII under the C locale, which PGlite has, and where SQLite
 * has no ICU). A lone surrogate matches U+FFFD, as the drivers send it.
 *
 * Linear: the pattern is cut at each `*`; the first piece must start the string, the last end
 * it, and each one between is found leftmost after the previous (`indexOf`, which V8 runs in
 * linear time: Boyer-Moore past a few characters). No regular expression: the one the change
 * monitor built from `*a*a*a…` backtracked for 26 s on a 40-character id (issue 29).
 */

/** The code points that lowercase to something else, by what they lowercase to (built once, when first needed). */
let variantsByFold: Map<string, string[]> | undefined;

/** Uppercase and titlecase letters end below U+1E944 (Adlam); like.test.ts checks every code point. */
const LAST_CASED = 0x1ffff;

/** Unicode's simple lowercase mapping of one code point: `toLowerCase`, but U+0130 İ → i (its full mapping is i +
 * U+0307). */
function foldCodePoint(char: string): string {
  return char === '\u0130' ? 'i' : char.toLowerCase();
}

/**
 * `text` folded code point by code point (Unicode simple lowercase): `toLowerCase` is that, but
 * for İ (two code points) and Σ, which it lowercases to ς at the end of a word.
 */
export function foldCase(text: string): string {
  return text.replace(/[\u0130\u03a3]/g, (char) => (char === '\u0130' ? 'i' : '\u03c3')).toLowerCase();
}

/** Whether `text` matches the `like` pattern (both as given: folded here). */
export function likeMatches(text: string, pattern: string): boolean {
  return globMatches(foldCase(text.toWellFormed()), foldCase(pattern.toWellFormed()));
}

/** Case-sensitive match of a pattern whose only wildcard is `*` (none: a substring). */
export function globMatches(text: string, pattern: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return text.includes(pattern);
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  const end = text.length - last.length;
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let position = first.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i]!;
    if (piece === '') continue;
    const found = text.indexOf(piece, position);
    if (found < 0 || found + piece.length > end) return false;
    position = found + piece.length;
  }
  return true;
}

/** The number of characters (code points) of a pattern, as `max_query_like_length` counts them. */
export function patternLength(pattern: string): number {
  let length = 0;
  for (const _ of pattern) length++;
  return length;
}

function variantsIndex(): Map<string, string[]> {
  if (variantsByFold) return variantsByFold;
  const index = new Map<string, string[]>();
  for (let code = 0; code <= LAST_CASED; code++) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const char = String.fromCodePoint(code);
    const folded = foldCodePoint(char);
    if (folded === char) continue;
    const list = index.get(folded);
    if (list) list.push(char);
    else index.set(folded, [char]);
  }
  variantsByFold = index;
  return index;
}

/** A `like` pattern as the SQL backends run it. */
export interface SqlLike {
  /** The folded pattern for LIKE with `ESCAPE '\'`: `%` for each `*`, `%…%` around one without. */
  pattern: string;
  /**
   * The characters of a string that fold to a character of the pattern, other than ASCII
   * capitals (LIKE's own business in SQLite, `lower(… COLLATE "C")`'s in PostgreSQL): a string
   * must have each replaced by `to`'s character at the same place before LIKE compares it.
   * Empty for most patterns; `K` (Kelvin) → `k` and `İ` → `i` for ASCII ones.
   */
  from: string;
  to: string;
}

export function sqlLike(value: string): SqlLike {
  const folded = foldCase(value.toWellFormed());
  const escaped = folded.replace(/[\\%_]/g, (char) => `\\${char}`);
  const pattern = escaped.includes('*') ? escaped.replaceAll('*', '%') : `%${escaped}%`;
  let from = '';
  let to = '';
  for (const char of new Set(folded)) {
    for (const variant of variantsIndex().get(char) ?? []) {
      if (variant >= 'A' && variant <= 'Z') continue;
      from += variant;
      to += char;
    }
  }
  return { pattern, from, to };
}
