import { describe, expect, it } from 'vitest';
import { nativeValue } from './querystring.js';

/** What nativeValue must agree with: JSON when it parses, the raw string otherwise. */
function reference(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

describe('nativeValue', () => {
  it('answers as JSON.parse with a fallback does, without throwing for plain words', () => {
    const cases = [
      ...['1', '-0', '01', '1.', '1.5e3', '-1.5E-3', '1e400', '1e', '+1', '.5', '0x10', 'NaN', 'Infinity', '-'],
      ...[' 2 ', '\t3\n', '\u00a01', '', ' ', 'true', 'truex', 'null', 'nul', 'x'],
      ...['"a"', '"a', '"\\u00e9"', '"\\x"', '"a\u0001"', '"\\""', '"é"', '""', '"a\\\\"', '"\\\\"x"', '"\t"'],
      ...['[1,2]', '[1', '{"a":1}', '{a}', '[x]', '[]', '{}', ' [ 1 ] ', '[1]x', 'x[1]'],
    ];
    // Short random strings of the characters JSON's grammar turns on.
    const alphabet = '01-.eE+"\\[]{}tnrux, \t';
    for (let i = 0; i < 2000; i++) {
      let text = '';
      for (let length = (i * 7) % 6; length > 0; length--)
        text += alphabet[Math.floor(Math.random() * alphabet.length)];
      cases.push(text);
    }
    for (const raw of cases) expect([raw, nativeValue(raw)]).toEqual([raw, reference(raw)]);
  });
});
