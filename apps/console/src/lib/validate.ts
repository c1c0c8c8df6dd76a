/**
 * Records checked in the browser against their collection's JSON schema (and the bucket's
 * `record:schema`), with the server's rules (packages/server/src/schema/validator.ts): unknown
 * keywords and formats ignored, `last_modified` and `schema` neither checked nor required, and
 * `id` checked only when the schema declares it. So what the console accepts, the server accepts.
 *
 * The server compiles schemas with Ajv, which generates code (`new Function`): in the console
 * that would need `'unsafe-eval'` in its Content-Security-Policy, for schemas anyone allowed to
 * write a collection chooses. The console interprets them instead, with `jsonschema` (no code
 * generated, no dependency), so its policy allows no eval (views/admin.ts on the server).
 */
import { type Schema, type ValidationError, Validator } from 'jsonschema';
import { isPlainObject, type JsonSchema, RECORD_SERVER_FIELDS, type SchemaError } from './schema.js';

/** What no validator accepts: a `pattern` (or `patternProperties` key) that is not a regular expression. */
function badPattern(schema: unknown): string | null {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const found = badPattern(item);
      if (found !== null) return found;
    }
    return null;
  }
  if (!isPlainObject(schema)) return null;
  const patterns = [
    ...(typeof schema.pattern === 'string' ? [schema.pattern] : []),
    ...(isPlainObject(schema.patternProperties) ? Object.keys(schema.patternProperties) : []),
  ];
  for (const pattern of patterns) {
    try {
      new RegExp(pattern, 'u');
    } catch (error) {
      return `invalid pattern ${JSON.stringify(pattern)}: ${(error as Error).message}`;
    }
  }
  for (const value of Object.values(schema)) {
    const found = badPattern(value);
    if (found !== null) return found;
  }
  return null;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};

/** The validator's messages, in plainer words for the common keywords. */
function humanMessage(error: ValidationError): string | null {
  const limit = error.argument as number;
  switch (error.name) {
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${limit} characters long`;
    case 'maxLength':
      return `must be at most ${limit} characters long`;
    case 'minimum':
      return `must be at least ${limit}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'exclusiveMinimum':
      return `must be more than ${limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${limit}`;
    case 'minItems':
      return `must have at least ${limit} item${limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${limit} item${limit === 1 ? '' : 's'}`;
    case 'type': {
      const types = ([] as unknown[]).concat(error.argument).map(String);
      return `must be ${types.map((type) => TYPE_NAMES[type] ?? type).join(' or ')}`;
    }
    case 'format':
      return error.argument === 'date'
        ? 'must be a date (YYYY-MM-DD)'
        : error.argument === 'date-time'
          ? 'must be a date and time'
          : `must be a valid ${String(error.argument)}`;
    case 'pattern':
      return `must match the pattern ${String(error.argument)}`;
    case 'const':
      return `must be ${JSON.stringify(error.argument)}`;
    case 'uniqueItems':
      return 'must not repeat items';
    default:
      return null;
  }
}

/** `['a', 0, 'b']` → `/a/0/b` (JSON Pointer, as the server's details). */
const pointer = (path: Array<string | number>) =>
  path.map((part) => `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

function describe(error: ValidationError): SchemaError {
  const path = pointer(error.path);
  if (error.name === 'required') return { path: `${path}/${String(error.argument)}`, message: 'is required' };
  if (error.name === 'additionalProperties')
    return { path: `${path}/${String(error.argument)}`, message: 'is not allowed by the schema' };
  if (error.name === 'enum') {
    const allowed = Array.isArray(error.argument) ? error.argument : [];
    return { path, message: `must be one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}` };
  }
  return { path, message: humanMessage(error) ?? error.message ?? 'is not valid' };
}

/**
 * Errors of `data` (a record's fields, `id` included) against `schema`; [] when valid. A schema
 * that cannot be compiled is one error on the whole record.
 */
export function validateRecord(data: Record<string, unknown>, schema: JsonSchema, id?: string): SchemaError[] {
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const ignored = new Set(RECORD_SERVER_FIELDS);
  if (!Object.hasOwn(properties, 'id')) ignored.add('id');
  const document: Record<string, unknown> = {};
  for (const [key, value] of Object.entries({ ...data, ...(id !== undefined ? { id } : {}) })) {
    if (!ignored.has(key)) document[key] = value;
  }
  const effective = { ...schema };
  if (Array.isArray(effective.required)) {
    const required = (effective.required as string[]).filter((name) => !ignored.has(name));
    if (required.length) effective.required = required;
    else delete effective.required;
  }
  const problem = badPattern(effective);
  if (problem !== null) return [{ path: '', message: `The collection's schema cannot be used: ${problem}` }];
  let found: ValidationError[];
  try {
    // A validator per call: a schema's $id never shadows another's.
    found = new Validator().validate(document, effective as Schema, { nestedErrors: false }).errors;
  } catch (error) {
    return [{ path: '', message: `The collection's schema cannot be used: ${(error as Error).message}` }];
  }
  const seen = new Set<string>();
  const errors: SchemaError[] = [];
  // Missing and unexpected fields first, as the server's validator reports them.
  const rank = (error: ValidationError) => ({ required: 0, additionalProperties: 1 })[error.name] ?? 2;
  for (const error of [...found].sort((a, b) => rank(a) - rank(b))) {
    // oneOf/anyOf branches produce many errors: keep the first per path.
    const described = describe(error);
    if (seen.has(described.path)) continue;
    seen.add(described.path);
    errors.push(described);
  }
  return errors;
}
