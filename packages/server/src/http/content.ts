/**
 * Content negotiation (protocol-reference §3): JSON bodies only (three PATCH types), 415 for
 * anything else sent with a body, 406 when the client cannot accept JSON. Bodies are measured
 * first (`max_json_depth`, `max_json_keys`: json-limits.ts), then parsed with secure-json-parse
 * so `__proto__` / `constructor.prototype` keys cannot pollute objects.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { invalidParameter, invalidParameters } from '../errors.js';
import { describeExcess, measureJsonText, type JsonLimits } from './json-limits.js';

const JSON_TYPE = 'application/json';
const PATCH_TYPES = [JSON_TYPE, 'application/merge-patch+json', 'application/json-patch+json'];

function mediaType(header: string | undefined): string | null {
  if (!header) return null;
  return header.split(';')[0]?.trim().toLowerCase() || null;
}

function acceptsJson(accept: string): boolean {
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = params.find((param) => param.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    return type === JSON_TYPE || type === 'application/*' || type === '*/*' || type === '*';
  });
}

/**
 * PostgreSQL's jsonb cannot hold NUL characters nor unpaired surrogates (both valid JSON
 * escapes): refuse them as bad input rather than fail in the database (bodies here, filter
 * values in engine/querystring.ts).
 */
export function findUnstorableString(value: unknown): string | null {
  return findUnstorable(value, false);
}

/**
 * `findUnstorableString`, and numbers JSON can write but a double cannot hold: `1e400` parses as
 * Infinity, which would be stored as null (bodies here, `quire import`'s lines).
 */
export function findUnstorableValue(value: unknown): string | null {
  return findUnstorable(value, true);
}

/** Why a string cannot be stored, or null. */
function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'the NUL character \\u0000 is not supported';
  return text.isWellFormed() ? null : 'unpaired surrogate in a string';
}

function findUnstorable(value: unknown, numbers: boolean): string | null {
  if (typeof value === 'string') return unstorableText(value);
  if (typeof value === 'number')
    return numbers && !Number.isFinite(value) ? 'a number too large to store (beyond ±1.8e308)' : null;
  if (Array.isArray(value)) {
    for (const item of value) {
      const bad = findUnstorable(item, numbers);
      if (bad) return bad;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const bad = unstorableText(key) ?? findUnstorable(item, numbers);
      if (bad) return bad;
    }
  }
  return null;
}

/**
 * A JSON body's text as every request's is read (undefined when blank): measured before parsing
 * (the parser and the checks recurse, and their time grows with the keys), no prototype keys,
 * only values the stores can hold. A 400 (errno 107) otherwise.
 */
export function parseJsonBody(text: string, limits: JsonLimits): unknown {
  if (text.trim() === '') return undefined;
  const excess = measureJsonText(text, limits);
  if (excess) throw invalidParameter('body', '', `Invalid JSON: ${describeExcess(excess, limits)}`);
  let parsed: unknown;
  try {
    parsed = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'Object contains forbidden prototype property';
    throw invalidParameter('body', '', `Invalid JSON: ${reason}`);
  }
  const bad = findUnstorableValue(parsed);
  if (bad) throw invalidParameter('body', '', `Invalid JSON: ${bad}`);
  return parsed;
}

export function registerContentNegotiation(app: FastifyInstance): void {
  const { settings } = app.services;
  const limits: JsonLimits = { maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys };
  app.decorateRequest('unsupportedContentType', null);
  app.removeAllContentTypeParsers();

  app.addContentTypeParser(PATCH_TYPES, { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string, limits));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  // Anything else is kept aside; writes with such a body get 415 below.
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length > 0) request.unsupportedContentType = mediaType(request.headers['content-type']) ?? '';
    done(null, undefined);
  });

  // A callback hook (a sync throw is an error all the same): an async one costs a promise per request.
  app.addHook('preHandler', (request: FastifyRequest, _reply, done) => {
    const hasBody = request.body !== undefined || request.unsupportedContentType !== null;
    checkNegotiation(request.method, request.headers.accept, request.headers['content-type'], hasBody);
    done();
  });
}

/**
 * 406 when the client accepts no JSON; 415 when a write's body is not of a type it takes (also
 * for a batch's sub-request answered in-process: views/batch-direct.ts).
 */
export function checkNegotiation(
  method: string,
  accept: string | undefined,
  contentType: string | undefined,
  hasBody: boolean,
): void {
  if (accept && !acceptsJson(accept)) {
    throw invalidParameters(
      [{ location: 'header', name: 'Accept', description: "Accept header should be one of ['application/json']" }],
      406,
    );
  }
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH') return;
  const allowed = method === 'PATCH' ? PATCH_TYPES : [JSON_TYPE];
  const type = mediaType(contentType);
  if (hasBody && (type === null || !allowed.includes(type))) throw unsupportedContentType(allowed);
}

/** 415 naming the content types the endpoint takes. */
export function unsupportedContentType(allowed: readonly string[]) {
  const list = `[${allowed.map((item) => `'${item}'`).join(', ')}]`;
  return invalidParameters(
    [{ location: 'header', name: 'Content-Type', description: `Content-Type header should be one of ${list}` }],
    415,
  );
}
