/**
 * The SQL functions the SQLite store's filters and sorts call (registered on each connection).
 * SQLite knows JSON as text: scalars are compared in SQL (queries.ts), but two arrays of one
 * length compare element by element in jsonb, and two objects of one size key by key in jsonb's
 * key order (by length, then bytes), whatever the order they were written in. Only arrays and
 * objects come to the first two, so the common filters and sorts never call into JavaScript.
 *
 * - `quire_jsonb_key(json)`: a blob whose byte order (memcmp) is jsonb's order of the value
 *   (filters/json-order.ts `compareJson`).
 * - `quire_jsonb_contains(array, wanted, any)`: jsonb's `array @> wanted` (`any` = 0), or whether
 *   `array @> [w]` for some element `w` of `wanted` (`any` = 1); both arrays, as JSON text.
 * - `quire_like(text, pattern)`: the `like` filter (filters/like.ts), in linear time, for the
 *   patterns SQLite's own LIKE would take too long over or cannot fold (queries.ts).
 *
 * Strings compare by their UTF-8 bytes, as under PostgreSQL's "C" collation.
 */
import type Database from 'better-sqlite3';
import { type Json, jsonbKeys, jsonContains } from '../filters/json-order.js';
import { likeMatches } from '../filters/like.js';

// Tags in jsonb's type order: null < string < number < boolean < array < object.
const NULL = 1;
const STRING = 2;
const NUMBER = 3;
const BOOLEAN = 4;
const ARRAY = 5;
const OBJECT = 6;

/** The sort key of a JSON value: a byte string that compares (memcmp) as jsonb compares values. */
export function jsonbSortKey(json: string): Buffer {
  const bytes: number[] = [];
  encode(JSON.parse(json) as Json, bytes);
  return Buffer.from(bytes);
}

function encode(value: Json, out: number[]): void {
  if (value === null) out.push(NULL);
  else if (typeof value === 'string') encodeString(value, out);
  else if (typeof value === 'number') encodeNumber(value, out);
  else if (typeof value === 'boolean') out.push(BOOLEAN, value ? 1 : 0);
  else if (Array.isArray(value)) {
    // jsonb: the longer array is the greater; then element by element.
    out.push(ARRAY, ...uint32(value.length));
    for (const element of value) encode(element, out);
  } else {
    // jsonb: the object with more keys is the greater; then key, value, key… in its key order.
    const keys = jsonbKeys(value);
    out.push(OBJECT, ...uint32(keys.length));
    for (const key of keys) {
      encodeString(key, out);
      encode(value[key]!, out);
    }
  }
}

/** UTF-8 bytes, 0x00 escaped as 00 FF and ended by 00 01: a prefix sorts first, and nothing runs on. */
function encodeString(value: string, out: number[]): void {
  out.push(STRING);
  for (const byte of Buffer.from(value, 'utf8')) {
    if (byte === 0) out.push(0, 0xff);
    else out.push(byte);
  }
  out.push(0, 1);
}

/** The IEEE 754 bits, big-endian, sign bit flipped (all bits for negatives): byte order is numeric order. */
function encodeNumber(value: number, out: number[]): void {
  const buffer = Buffer.alloc(8);
  buffer.writeDoubleBE(value === 0 ? 0 : value); // -0 is 0
  if (buffer[0]! & 0x80) for (let i = 0; i < 8; i++) buffer[i] = ~buffer[i]! & 0xff;
  else buffer[0] = buffer[0]! | 0x80;
  out.push(NUMBER, ...buffer);
}

function uint32(value: number): number[] {
  return [(value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
}

export function registerFilterFunctions(db: Database.Database): void {
  db.function('quire_jsonb_key', { deterministic: true }, (json: string) => jsonbSortKey(json));
  db.function('quire_jsonb_contains', { deterministic: true }, (array: string, wanted: string, any: number) => {
    const container = JSON.parse(array) as Json;
    const elements = JSON.parse(wanted) as Json[];
    return (any ? elements.some((element) => jsonContains(container, [element])) : jsonContains(container, elements))
      ? 1
      : 0;
  });
  db.function('quire_like', { deterministic: true }, (text: unknown, pattern: string) =>
    typeof text === 'string' && likeMatches(text, pattern) ? 1 : 0,
  );
}
