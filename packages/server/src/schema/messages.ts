/**
 * Turns Ajv's errors into Kinto's: the first error in the order Python `jsonschema` finds them
 * (schema keywords in document order, depth first), described with `jsonschema`'s message texts,
 * and named after the offending field (protocol-reference §3, "JSON-schema failure").
 */
import type { ErrorObject } from 'ajv';
import { pythonRepr as repr } from './python-repr.js';

function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~'));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Keywords whose value is a map of subschemas, and those whose value is one subschema. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', 'dependencies']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'items']);

/**
 * `jsonschema` walks a schema's keywords in the order they were written. Stored schemas lose it
 * (PostgreSQL jsonb sorts keys by length), so keywords are ranked in the order schemas are
 * conventionally written instead, e.g. `type`, then `properties`, then `required`.
 */
const KEYWORD_ORDER = [
  '$schema',
  '$id',
  '$ref',
  'title',
  'description',
  'type',
  'enum',
  'const',
  'properties',
  'patternProperties',
  'additionalProperties',
  'required',
  'dependencies',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'items',
  'additionalItems',
  'contains',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'multipleOf',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'definitions',
];

function keywordRank(keyword: string): number {
  const rank = KEYWORD_ORDER.indexOf(keyword);
  return rank < 0 ? KEYWORD_ORDER.length : rank;
}

/**
 * Position of an error in `jsonschema`'s order: at each schema object, the keyword's rank (then
 * the property's index among `properties`...). Unresolvable paths (errors reached through a
 * `$ref`) sort after the resolvable ones of the same level.
 */
function documentOrder(schema: unknown, schemaPath: string): number[] {
  const segments = pointerSegments(schemaPath.replace(/^#/, ''));
  const order: number[] = [];
  let node: unknown = schema;
  for (let i = 0; i < segments.length; i++) {
    if (!isObject(node)) break;
    const keyword = segments[i] as string;
    order.push(Object.hasOwn(node, keyword) ? keywordRank(keyword) : Number.MAX_SAFE_INTEGER);
    const value = node[keyword];
    if (SCHEMA_MAPS.has(keyword) && isObject(value) && i + 1 < segments.length) {
      const name = segments[++i] as string;
      const position = Object.keys(value).indexOf(name);
      order.push(position < 0 ? Number.MAX_SAFE_INTEGER : position);
      node = value[name];
    } else if (SCHEMA_LISTS.has(keyword) && Array.isArray(value) && i + 1 < segments.length) {
      const position = Number(segments[++i]);
      order.push(Number.isInteger(position) ? position : Number.MAX_SAFE_INTEGER);
      node = value[position];
    } else {
      node = value;
    }
  }
  return order;
}

function compareOrder(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  }
  return a.length - b.length;
}

const isUnder = (path: string, parent: string) => path === parent || path.startsWith(`${parent}/`);

/**
 * The errors `jsonschema` would report at top level: Ajv also lists the failed branches of
 * `anyOf`/`oneOf`/`contains` before the keyword's own error, and wraps `propertyNames` and
 * `if`, which `jsonschema` does not.
 */
function topLevelErrors(errors: ErrorObject[]): ErrorObject[] {
  const kept: ErrorObject[] = [];
  for (const error of errors) {
    if (error.keyword === 'if' || error.keyword === 'propertyNames') continue;
    if (['anyOf', 'oneOf', 'contains'].includes(error.keyword)) {
      const keywordParent = error.schemaPath.slice(0, error.schemaPath.lastIndexOf('/'));
      // Drop the branch errors just before it: same instance, and either under this keyword or
      // outside its schema object (reached through a $ref).
      while (kept.length > 0) {
        const previous = kept[kept.length - 1] as ErrorObject;
        const branch = isUnder(previous.schemaPath, error.schemaPath) || !isUnder(previous.schemaPath, keywordParent);
        if (!isUnder(previous.instancePath, error.instancePath) || !branch) break;
        kept.pop();
      }
    }
    kept.push(error);
  }
  return kept;
}

function describe(error: ErrorObject, extras: unknown[]): string {
  const { keyword, data, schema, params } = error;
  const value = repr(data);
  switch (keyword) {
    case 'type':
      return `${value} is not of type ${[schema].flat().map(repr).join(', ')}`;
    case 'required':
      return `${repr(params.missingProperty)} is a required property`;
    case 'additionalProperties':
    case 'additionalItems':
      return (
        `Additional ${keyword === 'additionalItems' ? 'items' : 'properties'} are not allowed ` +
        `(${extras.map(repr).join(', ')} ${extras.length === 1 ? 'was' : 'were'} unexpected)`
      );
    case 'enum':
      return `${value} is not one of ${repr(schema)}`;
    case 'const':
      return `${repr(schema)} was expected`;
    case 'minimum':
      return `${value} is less than the minimum of ${repr(schema)}`;
    case 'maximum':
      return `${value} is greater than the maximum of ${repr(schema)}`;
    case 'exclusiveMinimum':
      return `${value} is less than or equal to the minimum of ${repr(schema)}`;
    case 'exclusiveMaximum':
      return `${value} is greater than or equal to the maximum of ${repr(schema)}`;
    case 'multipleOf':
      return `${value} is not a multiple of ${repr(schema)}`;
    case 'minLength':
    case 'minItems':
      return `${value} ${schema === 1 ? 'should be non-empty' : 'is too short'}`;
    case 'maxLength':
    case 'maxItems':
      return `${value} ${schema === 0 ? 'is expected to be empty' : 'is too long'}`;
    case 'minProperties':
      return `${value} ${schema === 1 ? 'should be non-empty' : 'does not have enough properties'}`;
    case 'maxProperties':
      return `${value} ${schema === 0 ? 'is expected to be empty' : 'has too many properties'}`;
    case 'pattern':
      return `${value} does not match ${repr(schema)}`;
    case 'format':
      return `${value} is not a ${repr(schema)}`;
    case 'uniqueItems':
      return `${value} has non-unique elements`;
    case 'anyOf':
      return `${value} is not valid under any of the given schemas`;
    case 'oneOf': {
      const passing = params.passingSchemas as number[] | null;
      if (!passing || !Array.isArray(schema)) return `${value} is not valid under any of the given schemas`;
      return `${value} is valid under each of ${passing.map((index) => repr(schema[index])).join(', ')}`;
    }
    case 'not':
      return `${value} should not be valid under ${repr(schema)}`;
    case 'contains':
      return `${value} does not contain items matching the given schema`;
    case 'dependencies':
      return `${repr(params.missingProperty)} is a dependency of ${repr(params.property)}`;
    case 'false schema':
      return `False schema does not allow ${value}`;
    default:
      return `${value} ${error.message ?? 'is not valid'}`;
  }
}

/** The offending field: the last step of the instance path, else the property the error names. */
function fieldOf(error: ErrorObject, extras: unknown[]): string {
  const path = pointerSegments(error.instancePath);
  if (path.length > 0) return path[path.length - 1] as string;
  // Kinto names a missing required field after the *last* entry of `required`, whichever is
  // missing (a bug); we name the missing one.
  if (error.keyword === 'required' || error.keyword === 'dependencies') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties' && extras.length > 0) return String(extras[0]);
  return error.keyword;
}

export interface SchemaFailure {
  /** The offending field (`details[].name`). */
  field: string;
  /** `jsonschema`'s message text (`details[].description`). */
  description: string;
  /** JSON pointer of the failing value inside the validated document. */
  instancePath: string;
}

/** Kinto's single error out of Ajv's list (which must come from a `verbose` validator). */
export function firstFailure(errors: ErrorObject[], schema: unknown): SchemaFailure {
  const candidates = topLevelErrors(errors);
  const pool = candidates.length > 0 ? candidates : errors;
  const orders = new Map(pool.map((error) => [error, documentOrder(schema, error.schemaPath)]));
  const first = [...pool].sort((a, b) =>
    compareOrder(orders.get(a) as number[], orders.get(b) as number[]),
  )[0] as ErrorObject;
  let extras: unknown[] = [];
  if (first.keyword === 'additionalProperties') {
    extras = pool
      .filter(
        (error) =>
          error.keyword === first.keyword &&
          error.instancePath === first.instancePath &&
          error.schemaPath === first.schemaPath,
      )
      .map((error) => error.params.additionalProperty);
  } else if (first.keyword === 'additionalItems' && Array.isArray(first.data)) {
    extras = first.data.slice(Number(first.params.limit));
  }
  return { field: fieldOf(first, extras), description: describe(first, extras), instancePath: first.instancePath };
}
