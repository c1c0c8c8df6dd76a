/**
 * JSON-schema validation: the compiled-validator cache, hostile schemas, Kinto's message texts,
 * and what the setting `experimental_collection_schema_validation` switches (the HTTP behaviour
 * itself is covered by the conformance suite, packages/conformance/src/suites/schemas.test.ts).
 */
import { Ajv } from 'ajv';
import { describe, expect, it, vi } from 'vitest';
import { basicAuth, useEmbeddedStore } from '../../test/helpers/embedded-server.js';
import { ApiError } from '../errors.js';
import { pythonRepr } from './python-repr.js';
import { SchemaValidator } from './validator.js';

const OPTIONS = { ignoreFields: ['last_modified', 'schema'], id: 'r1' };
const ARTICLE = {
  type: 'object',
  properties: { title: { type: 'string' }, n: { type: 'integer' } },
  required: ['title'],
};

function failureOf(fn: () => void): { name: string; description: string; message: string } {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    const body = (error as ApiError).toBody() as {
      message: string;
      details: Array<{ name: string; description: string }>;
    };
    return { ...(body.details[0] as { name: string; description: string }), message: body.message };
  }
  throw new Error('expected a validation failure');
}

describe('pythonRepr', () => {
  it('quotes values as Python repr() does', () => {
    expect(pythonRepr('x')).toBe("'x'");
    expect(pythonRepr("it's")).toBe('"it\'s"');
    expect(pythonRepr('a\'b"c')).toBe("'a\\'b\"c'");
    expect(pythonRepr('line\nbreak\\')).toBe("'line\\nbreak\\\\'");
    expect(pythonRepr([1, true, null, { a: 'b' }])).toBe("[1, True, None, {'a': 'b'}]");
    expect(pythonRepr(1.5)).toBe('1.5');
  });
});

describe('SchemaValidator', () => {
  it('compiles a schema once per (uri, version) and again when the version changes', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    try {
      for (let i = 0; i < 5; i++)
        validator.validate({ title: 'ok' }, { key: '/buckets/b/collections/c', version: 1, schema: ARTICLE }, OPTIONS);
      expect(compile).toHaveBeenCalledTimes(1);
      validator.validate({ title: 'ok' }, { key: '/buckets/b/collections/c', version: 2, schema: ARTICLE }, OPTIONS);
      expect(compile).toHaveBeenCalledTimes(2);
    } finally {
      compile.mockRestore();
    }
  });

  it('never uses a cached validator for another schema under the same (uri, version)', () => {
    // A collection deleted and re-created with a client-supplied last_modified may reuse a version.
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const source = { key: '/buckets/b/collections/c', version: 7 };
    validator.validate(
      { n: 1 },
      { ...source, schema: { type: 'object', properties: { n: { type: 'integer' } } } },
      OPTIONS,
    );
    expect(
      failureOf(() =>
        validator.validate(
          { n: 1 },
          { ...source, schema: { type: 'object', properties: { n: { type: 'string' } } } },
          OPTIONS,
        ),
      ).name,
    ).toBe('n');
  });

  it('keeps at most `cacheSize` compiled schemas, dropping the least recently used', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 2 });
    for (const key of ['a', 'b', 'c', 'd'])
      validator.validate({ title: 't' }, { key, version: 1, schema: ARTICLE }, OPTIONS);
    expect(validator.cacheSize).toBe(2);
  });

  it('isolates schemas that declare the same $id', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const first = { $id: 'http://example.com/s', type: 'object', properties: { a: { type: 'string' } } };
    const second = { $id: 'http://example.com/s', type: 'object', properties: { a: { type: 'integer' } } };
    validator.validate({ a: 'x' }, { key: 'one', version: 1, schema: first }, OPTIONS);
    validator.validate({ a: 1 }, { key: 'two', version: 1, schema: second }, OPTIONS);
    expect(failureOf(() => validator.validate({ a: 1 }, { key: 'one', version: 1, schema: first }, OPTIONS)).name).toBe(
      'a',
    );
  });

  it('refuses remote and unresolvable $refs up front (nothing is fetched)', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const remote = failureOf(() =>
      validator.checkSchema({ properties: { a: { $ref: 'http://schemas.invalid/x.json' } } }, 'data.schema'),
    );
    expect(remote.name).toBe('data.schema');
    expect(remote.description).toMatch(/^Invalid JSON schema: /);
    expect(failureOf(() => validator.checkSchema({ $ref: '#/definitions/missing' }, 'data.schema')).name).toBe(
      'data.schema',
    );
    // Invalid regular expressions are refused by the Draft-7 meta-schema (format "regex").
    expect(failureOf(() => validator.checkSchema({ pattern: '(' }, 'data.schema')).name).toBe('data.schema');
  });

  it('refuses $async schemas, whose validators would answer a promise (read as valid)', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const schema = { $async: true, type: 'object', required: ['title'] };
    expect(failureOf(() => validator.checkSchema(schema, 'data.schema')).description).toMatch(/\$async/);
    // A stored one (saved while validation was off) refuses every record rather than accepting all.
    expect(failureOf(() => validator.validate({}, { key: 'async', version: 1, schema }, OPTIONS)).name).toBe('schema');
  });

  it('answers 400, never a crash, for schemas and documents nested beyond the stack', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    let deepSchema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20_000; i++) deepSchema = { properties: { a: deepSchema } };
    expect(failureOf(() => validator.checkSchema(deepSchema, 'data.schema')).name).toBe('data.schema');

    const recursive = { type: 'object', properties: { a: { $ref: '#' } } };
    let deepData: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 50_000; i++) deepData = { a: deepData };
    expect(() => validator.validate(deepData, { key: 'deep', version: 1, schema: recursive }, OPTIONS)).toThrow(
      ApiError,
    );
  });

  it('describes failures with python-jsonschema texts and Kinto names', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const check = (schema: Record<string, unknown>, data: Record<string, unknown>) =>
      failureOf(() => validator.validate(data, { key: JSON.stringify(schema), version: 1, schema }, OPTIONS));
    expect(check({ properties: { s: { enum: ['a', 'b'] } } }, { s: 'c' })).toMatchObject({
      name: 's',
      description: "'c' is not one of ['a', 'b']",
    });
    expect(check({ properties: { s: { type: ['string', 'null'] } } }, { s: 1 })).toMatchObject({
      description: "1 is not of type 'string', 'null'",
    });
    expect(check({ properties: { s: { minLength: 1 } } }, { s: '' })).toMatchObject({
      description: "'' should be non-empty",
    });
    expect(check({ properties: { code: { pattern: '^a' } } }, { code: 'b' })).toMatchObject({
      name: 'code',
      description: "'b' does not match '^a'",
      message: "code in body: 'b' does not match '^a'",
    });
    expect(check({ properties: { s: { format: 'email' } } }, { s: 'nope' })).toMatchObject({
      description: "'nope' is not a 'email'",
    });
    expect(
      check({ properties: { a: { type: 'string' } }, additionalProperties: false }, { a: 'x', b: 1, c: 2 }),
    ).toMatchObject({
      name: 'b',
      description: "Additional properties are not allowed ('b', 'c' were unexpected)",
    });
    expect(
      check({ properties: { v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } }, { v: 1.5 }),
    ).toMatchObject({
      name: 'v',
      description: '1.5 is not valid under any of the given schemas',
    });
    expect(check({ properties: { tags: { items: { type: 'string' } } } }, { tags: ['a', 2] })).toMatchObject({
      name: '1',
      description: "2 is not of type 'string'",
    });
  });

  it('reports the first error in the conventional keyword order, whatever the stored key order (wire example)', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    // As PostgreSQL jsonb returns it: keys sorted by length.
    const stored = {
      type: 'object',
      required: ['title'],
      properties: { n: { type: 'integer' }, title: { type: 'string' } },
    };
    expect(
      failureOf(() => validator.validate({ n: 'not-an-int' }, { key: 'wire', version: 1, schema: stored }, OPTIONS)),
    ).toEqual({
      location: 'body',
      name: 'n',
      description: "'not-an-int' is not of type 'integer'",
      message: "'not-an-int' is not of type 'integer'",
    });
  });

  it('does not check id unless the schema declares it, and never last_modified or schema', () => {
    const validator = new SchemaValidator({ enabled: true, cacheSize: 10 });
    const schema = { type: 'object', required: ['id', 'last_modified', 'schema'], additionalProperties: false };
    validator.validate({ last_modified: 1, schema: 2 }, { key: 's', version: 1, schema }, OPTIONS);
    const declared = { type: 'object', properties: { id: { pattern: '^x' } }, required: ['id'] };
    expect(failureOf(() => validator.validate({}, { key: 'd', version: 1, schema: declared }, OPTIONS)).name).toBe(
      'id',
    );
  });
});

describe('setting experimental_collection_schema_validation', () => {
  const auth = basicAuth('alice');
  const { serverWith } = useEmbeddedStore();

  it('off (default): no capability, records unchecked, a collection schema must be a schema (as Kinto)', async () => {
    const app = await serverWith({});
    expect((await app.inject({ url: '/v1/' })).json().capabilities.schema).toBeUndefined();
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/off',
      headers: auth,
      payload: { data: { 'record:schema': ARTICLE } },
    });
    const bad = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/off/collections/c',
      headers: auth,
      payload: { data: { schema: { type: 'nonsense' } } },
    });
    expect(bad.statusCode).toBe(400);
    const col = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/off/collections/c',
      headers: auth,
      payload: { data: { schema: ARTICLE } },
    });
    expect(col.statusCode).toBe(201);
    const rec = await app.inject({
      method: 'POST',
      url: '/v1/buckets/off/collections/c/records',
      headers: auth,
      payload: { data: { n: 'x' } },
    });
    expect(rec.statusCode).toBe(201);
    expect(rec.json().data.schema).toBeUndefined();
    await app.close();
  });

  it('on: capability `schema`, and records are checked', async () => {
    const app = await serverWith({ experimental_collection_schema_validation: true });
    expect((await app.inject({ url: '/v1/' })).json().capabilities.schema).toEqual({
      description: 'Validates collection records with JSON schemas.',
      url: 'https://kinto.readthedocs.io/en/latest/api/1.x/collections.html#collection-json-schema',
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/on', headers: auth });
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/on/collections/c',
      headers: auth,
      payload: { data: { schema: ARTICLE } },
    });
    const rec = await app.inject({
      method: 'POST',
      url: '/v1/buckets/on/collections/c/records',
      headers: auth,
      payload: { data: { n: 'x' } },
    });
    expect(rec.statusCode).toBe(400);
    // Bucket schemas must be schemas once validation is on.
    const bucket = await app.inject({
      method: 'PATCH',
      url: '/v1/buckets/on',
      headers: auth,
      payload: { data: { 'record:schema': 'nope' } },
    });
    expect(bucket.statusCode).toBe(400);
    expect(bucket.json().details[0].name).toBe('data.record:schema');
    await app.close();
  });
});
