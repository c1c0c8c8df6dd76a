import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldCase, globMatches, likeMatches, patternLength, sqlLike } from './like.js';

const SEED = 29;

/** Every code point but the surrogates, as strings. */
function* codePoints(): Generator<string> {
  for (let code = 0; code <= 0x10ffff; code++) if (code < 0xd800 || code > 0xdfff) yield String.fromCodePoint(code);
}

/** Any code point but a surrogate (fast-check's `unit: 'binary'` strings take 15 ms each to build). */
const anyCodePoint = fc
  .integer({ min: 0, max: 0x10ffff - 0x800 })
  .map((code) => String.fromCodePoint(code < 0xd800 ? code : code + 0x800));

/** Unicode's simple lowercase mapping of one code point, from `toLowerCase` (full mapping) where it is one code
 * point. */
function simpleLowercase(char: string): string {
  const lower = char.toLowerCase();
  return [...lower].length === 1 ? lower : char === '\u0130' ? 'i' : char;
}

/** The textbook dynamic programme (glob with `*` only), O(n·m): what globMatches must agree with. */
function globByTable(text: string, pattern: string): boolean {
  const t = [...text];
  const p = pattern.includes('*') ? [...pattern] : ['*', ...pattern, '*'];
  let row = [true, ...t.map(() => false)];
  for (const char of p) {
    const next = row.map(() => false);
    for (let i = 0; i <= t.length; i++) {
      if (char === '*') next[i] = row[i]! || (i > 0 && next[i - 1]!);
      else next[i] = i > 0 && row[i - 1]! && t[i - 1] === char;
    }
    row = next;
  }
  return row[t.length]!;
}

describe('like', () => {
  it('folds each code point by its simple lowercase mapping (every code point checked)', () => {
    const wrong: string[] = [];
    const lengthChanged: string[] = [];
    let lastCased = 0;
    for (const char of codePoints()) {
      if (foldCase(char) !== simpleLowercase(char)) wrong.push(char);
      if (char.toLowerCase().length !== char.length && char !== '\u0130') lengthChanged.push(char);
      if (char.toLowerCase() !== char) lastCased = char.codePointAt(0)!;
    }
    expect(wrong).toEqual([]);
    // No lowercase mapping changes a string's UTF-16 length, but İ's (i + U+0307).
    expect(lengthChanged).toEqual([]);
    // sqlLike's index of case variants scans up to U+1FFFF.
    expect(lastCased).toBeLessThanOrEqual(0x1ffff);
    // Σ folds to σ wherever it stands: toLowerCase alone gives ς at the end of a word.
    expect(foldCase('ΟΔΟΣ İSTANBUL \u212Aelvin')).toBe('οδοσ istanbul kelvin');
  });

  it('folds a string as its code points one by one', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          // Where context could matter: Σ between or after letters, İ, titlecase and astral letters.
          fc
            .array(fc.constantFrom('Σ', 'σ', 'ς', 'İ', 'I', 'A', 'a', ' ', '.', 'Ω', 'ǅ', 'ẞ', '😀', '𐐀'), {
              maxLength: 12,
            })
            .map((chars) => chars.join('')),
          fc.array(anyCodePoint, { maxLength: 12 }).map((chars) => chars.join('')),
        ),
        (text) => foldCase(text) === [...text].map(simpleLowercase).join(''),
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('agrees with the dynamic programme on generated texts and patterns', () => {
    const char = fc.constantFrom('a', 'b', 'A', '*', '%', '_', '\\', 'é', 'É', '😀');
    fc.assert(
      fc.property(fc.array(char, { maxLength: 12 }), fc.array(char, { maxLength: 6 }), (text, pattern) => {
        const t = text.join('').replaceAll('*', 'x');
        const p = pattern.join('');
        expect(globMatches(foldCase(t), foldCase(p)), `${JSON.stringify(t)} like ${JSON.stringify(p)}`).toBe(
          globByTable(foldCase(t), foldCase(p)),
        );
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('treats %, _ and \\ literally, ignores case across Unicode, and matches U+FFFD for a lone surrogate', () => {
    expect(likeMatches('50%_off', '0%_o')).toBe(true);
    expect(likeMatches('50 off', '0%_o')).toBe(false);
    expect(likeMatches('back\\slash', 'k\\s')).toBe(true);
    expect(likeMatches('Émile', 'émi*')).toBe(true);
    expect(likeMatches('\u212Aelvin', 'kel')).toBe(true);
    expect(likeMatches('İstanbul', 'ist*')).toBe(true);
    expect(likeMatches('ΟΔΟΣ', '*σ')).toBe(true);
    expect(likeMatches('a\uFFFDb', '\ud800')).toBe(true);
    expect(likeMatches('', '')).toBe(true);
    expect(likeMatches('abc', '*')).toBe(true);
    expect(likeMatches('abc', 'a*c*')).toBe(true);
    expect(likeMatches('abc', 'a*b*b')).toBe(false);
    expect(likeMatches('ab', 'a*b*')).toBe(true);
    expect(likeMatches('aba', 'ab*ba')).toBe(false);
  });

  it('answers the pattern that froze the monitor at once (issue 29)', () => {
    expect(likeMatches('a'.repeat(40), '*a*a*a*a*a*a*a*a*a*z')).toBe(false);
    expect(likeMatches('a'.repeat(100_000), `${'*a'.repeat(200)}*z`)).toBe(false);
  });

  it('gives the SQL backends a folded, escaped pattern and the characters to fold before LIKE', () => {
    expect(sqlLike('Ab')).toEqual({ pattern: '%ab%', from: '', to: '' });
    expect(sqlLike('a*%_\\')).toEqual({ pattern: 'a%\\%\\_\\\\', from: '', to: '' });
    // ASCII capitals are LIKE's business (SQLite) or lower(… COLLATE "C")'s (PostgreSQL).
    expect(sqlLike('kid')).toEqual({ pattern: '%kid%', from: '\u212A\u0130', to: 'ki' });
    expect(sqlLike('É')).toEqual({ pattern: '%é%', from: 'É', to: 'é' });
    expect(patternLength('😀a')).toBe(2);
  });
});
