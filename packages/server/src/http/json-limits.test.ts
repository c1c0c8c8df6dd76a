import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { measureJsonText, measureJsonValue } from './json-limits.js';

/** Depth and keys (object keys + array items) of a parsed value, recursively. */
function shape(value: unknown): { depth: number; keys: number } {
  if (value === null || typeof value !== 'object') return { depth: 0, keys: 0 };
  const children = Array.isArray(value) ? value : Object.values(value);
  let depth = 0;
  let keys = children.length;
  for (const child of children) {
    const inner = shape(child);
    depth = Math.max(depth, inner.depth);
    keys += inner.keys;
  }
  return { depth: depth + 1, keys };
}

describe('JSON limits', () => {
  it('measures the text as the parsed value measures, strings skipped whatever they hold', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const { depth, keys } = shape(value);
        const fits = { maxDepth: Math.max(depth, 1), maxKeys: keys };
        expect(measureJsonText(text, fits)).toBeNull();
        expect(measureJsonValue(value, fits)).toBeNull();
        if (depth > 1) {
          expect(measureJsonText(text, { ...fits, maxDepth: depth - 1 })).toBe('depth');
          expect(measureJsonValue(value, { ...fits, maxDepth: depth - 1 })).toBe('depth');
        }
        if (keys > 0) {
          expect(measureJsonText(text, { ...fits, maxKeys: keys - 1 })).not.toBeNull();
          expect(measureJsonValue(value, { ...fits, maxKeys: keys - 1 })).not.toBeNull();
        }
      }),
      { numRuns: 500, seed: 19 },
    );
  });

  it('is not fooled by brackets, colons and escaped quotes inside strings', () => {
    const text = JSON.stringify({ 'a[{:': ['"]}\\', '\\"[[[', ':,:,'], b: '\\' });
    expect(measureJsonText(text, { maxDepth: 2, maxKeys: 5 })).toBeNull();
    expect(measureJsonText(text, { maxDepth: 1, maxKeys: 5 })).toBe('depth');
    expect(measureJsonText(text, { maxDepth: 2, maxKeys: 4 })).toBe('keys');
  });

  it('refuses unterminated hostile text too', () => {
    expect(measureJsonText('['.repeat(5_000_000), { maxDepth: 100, maxKeys: 10_000 })).toBe('depth');
    expect(measureJsonText(`{${'"k":1,'.repeat(20_000)}`, { maxDepth: 100, maxKeys: 10_000 })).toBe('keys');
    expect(measureJsonText(`["${'x'.repeat(100)}`, { maxDepth: 100, maxKeys: 10_000 })).toBeNull();
  });
});
