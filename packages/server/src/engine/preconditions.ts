/**
 * If-Match / If-None-Match (protocol-reference §6). Values are `"<digits>"` or `*`, compared as
 * integers for strict equality; anything else is a 400.
 */
import { invalidParameter, preconditionFailed } from '../errors.js';

export type Precondition = { kind: 'any' } | { kind: 'timestamp'; value: number } | null;

export interface Preconditions {
  ifMatch: Precondition;
  ifNoneMatch: Precondition;
}

function parseHeader(name: string, raw: string | string[] | undefined): Precondition {
  if (raw === undefined) return null;
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  if (value.trim() === '*') return { kind: 'any' };
  const match = /^\s*"(\d+)"\s*$/.exec(value);
  if (!match) throw invalidParameter('header', name, 'The value should be integer between double quotes.');
  return { kind: 'timestamp', value: Number(match[1]) };
}

export function parsePreconditions(headers: {
  readonly 'if-match'?: string | string[];
  readonly 'if-none-match'?: string | string[];
}): Preconditions {
  return {
    ifMatch: parseHeader('If-Match', headers['if-match']),
    ifNoneMatch: parseHeader('If-None-Match', headers['if-none-match']),
  };
}

/**
 * The decision table of §6.2 for an object. `current` is the object when it exists (live),
 * else null. Throws 412; returns 'not-modified' when a GET should answer 304.
 * `existing` is what 412 shows in `details.existing`.
 */
export function checkObjectPreconditions(
  preconditions: Preconditions,
  current: { last_modified: number } | null,
  existing: Record<string, unknown> | null,
  options: { method: string },
): 'proceed' | 'not-modified' {
  const { ifMatch, ifNoneMatch } = preconditions;
  const readOnly = options.method === 'GET' || options.method === 'HEAD';
  if (current) {
    if (ifNoneMatch?.kind === 'timestamp' && readOnly && ifNoneMatch.value === current.last_modified)
      return 'not-modified';
    if (ifMatch?.kind === 'timestamp' && ifMatch.value !== current.last_modified) {
      throw preconditionFailed(current.last_modified, existing ?? undefined);
    }
    if (ifNoneMatch?.kind === 'any') throw preconditionFailed(current.last_modified, existing ?? undefined);
    return 'proceed';
  }
  if (ifMatch) throw preconditionFailed(undefined);
  return 'proceed';
}

/** Plural endpoints always "exist"; `current` is the collection timestamp. */
export function checkListPreconditions(
  preconditions: Preconditions,
  current: number,
  method: string,
): 'proceed' | 'not-modified' {
  const { ifMatch, ifNoneMatch } = preconditions;
  if (ifNoneMatch?.kind === 'timestamp' && (method === 'GET' || method === 'HEAD') && ifNoneMatch.value === current)
    return 'not-modified';
  if (ifMatch?.kind === 'timestamp' && ifMatch.value !== current) throw preconditionFailed(current);
  if (ifNoneMatch?.kind === 'any') throw preconditionFailed(current);
  return 'proceed';
}
