/**
 * Records checked in the browser against their collection's JSON schema (and the bucket's
 * `record:schema`), with the rules the server applies (packages/server/src/schema/validator.ts):
 * Ajv, Draft 7, `strict: false` (unknown keywords and formats ignored), own properties only,
 * ajv-formats; `last_modified` and `schema` are neither checked nor required, and `id` is
 * checked only when the schema declares it. So what the console accepts, the server accepts.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { isPlainObject, type JsonSchema, RECORD_SERVER_FIELDS, type SchemaError } from './schema.js';

const compiled = new Map<string, ValidateFunction>();

function compile(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    // A fresh instance per schema, as on the server: a schema's $id never shadows another's.
    const ajv = new Ajv({ strict: false, allErrors: true, ownProperties: true, logger: false, validateSchema: false });
    addFormats(ajv);
    validate = ajv.compile(schema);
    if (compiled.size > 50) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
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

/** Ajv's messages, in plainer words for the common keywords. */
function humanMessage(error: ErrorObject): string | null {
  const params = error.params as Record<string, unknown>;
  const limit = params.limit as number;
  switch (error.keyword) {
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
      const types = String(params.type).split(',');
      return `must be ${types.map((type) => TYPE_NAMES[type] ?? type).join(' or ')}`;
    }
    case 'format':
      return params.format === 'date'
        ? 'must be a date (YYYY-MM-DD)'
        : params.format === 'date-time'
          ? 'must be a date and time'
          : `must be a valid ${String(params.format)}`;
    case 'pattern':
      return `must match the pattern ${String(params.pattern)}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'uniqueItems':
      return 'must not repeat items';
    default:
      return null;
  }
}

function describe(error: ErrorObject): SchemaError {
  let path = error.instancePath;
  let message = error.message ?? 'is not valid';
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty?: string }).missingProperty ?? '';
    path = `${path}/${missing}`;
    message = 'is required';
  } else if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty?: string }).additionalProperty ?? '';
    path = `${path}/${extra}`;
    message = 'is not allowed by the schema';
  } else if (error.keyword === 'enum') {
    const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    message = `must be one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
  } else {
    message = humanMessage(error) ?? message;
  }
  return { path, message };
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
  let validate: ValidateFunction;
  try {
    validate = compile(effective);
  } catch (error) {
    return [{ path: '', message: `The collection's schema cannot be used: ${(error as Error).message}` }];
  }
  if (validate(document)) return [];
  const seen = new Set<string>();
  const errors: SchemaError[] = [];
  for (const error of validate.errors ?? []) {
    // oneOf/anyOf branches produce many errors: keep the first per path.
    const described = describe(error);
    if (seen.has(described.path)) continue;
    seen.add(described.path);
    errors.push(described);
  }
  return errors;
}
