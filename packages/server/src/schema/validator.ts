/**
 * JSON-schema validation (protocol-reference §4.1): collection `schema` and bucket
 * `collection:schema` / `group:schema` / `record:schema`, checked as Draft-7 like Kinto does.
 *
 * Schemas come from users, so Ajv is set up to stay safe with hostile ones: no remote `$ref`
 * (Ajv only loads schemas through `loadSchema`, which is not given), a fresh Ajv instance per
 * compiled schema (a schema's `$id` can never shadow another user's), no defaults or coercion
 * written into data, own properties only (`required: ["constructor"]` is not satisfied by the
 * prototype), and schema size bounded by `max_body_bytes`. Compiled validators are cached by
 * (object URI, last_modified) in a bounded LRU, so a schema is compiled once per version.
 * Limitation: `pattern` runs JavaScript regular expressions, so a catastrophic pattern costs CPU,
 * as it does with Kinto's Python `re`.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import type { SchemaSettings } from './settings.js';
import { invalidParameter } from '../errors.js';
import { firstFailure, type SchemaFailure } from './messages.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema';

/**
 * Above this size (JSON text of the checked document) a failure is described from the first
 * error Ajv meets instead of collecting all errors to pick `jsonschema`'s first one: collecting
 * every error of a huge document would cost memory proportional to it.
 */
const DETAILED_ERRORS_MAX_BYTES = 64 * 1024;

/**
 * Compiles a user schema on a fresh instance. `$async` schemas are refused: their validator
 * returns a promise, which would read as "valid".
 */
function compileSchema(schema: Record<string, unknown>, allErrors: boolean): ValidateFunction {
  const validate = createAjv(allErrors).compile(schema);
  if ((validate as { $async?: boolean }).$async) throw new Error('asynchronous schemas ($async) are not supported');
  return validate;
}

function createAjv(allErrors: boolean): Ajv {
  const ajv = new Ajv({
    // Unknown keywords and formats are ignored, as Python jsonschema does.
    strict: false,
    allErrors,
    verbose: true,
    ownProperties: true,
    logger: false,
    // Schemas are checked against Draft 7 before they are compiled (whatever their `$schema`).
    validateSchema: false,
  });
  addFormats(ajv);
  return ajv;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `{}` (or a missing value) means "no schema" (§4.1: an empty mapping removes the schema). */
export function isActiveSchema(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.keys(value).length > 0;
}

interface CompiledSchema {
  /** The schema's JSON text: a cache hit must also be the very same schema. */
  source: string;
  /** The schema as compiled (top-level `required` without the ignored fields). */
  schema: Record<string, unknown>;
  fast: ValidateFunction;
  /** Compiled on the first failure only: collects every error to pick jsonschema's first. */
  detailed?: ValidateFunction;
}

export interface SchemaSource {
  /** URI of the object holding the schema, plus which schema (`/buckets/b#record:schema`). */
  key: string;
  /** The holder's `last_modified`: the schema's version. */
  version: number;
  schema: Record<string, unknown>;
}

export interface ValidateOptions {
  /** Fields the server owns, neither checked nor required (`last_modified`, `schema`). */
  ignoreFields: readonly string[];
  /** The object's id, checked only when the schema declares an `id` property (as Kinto does). */
  id: string;
}

/** Kinto's description of the failure; a value too deep to describe is named by its path. */
function describeFailure(errors: ErrorObject[], schema: unknown): SchemaFailure {
  try {
    return firstFailure(errors, schema);
  } catch {
    const error = errors[0];
    const path = error?.instancePath ?? '';
    return {
      field: path.split('/').pop() || (error?.keyword ?? 'schema'),
      description: `${path || 'value'} ${error?.message ?? 'is not valid'}`,
      instancePath: path,
    };
  }
}

/** Size of a document's JSON text (Infinity when too deep to serialise). */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value).length;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

function errorsOf(validate: ValidateFunction): ErrorObject[] {
  return validate.errors ?? [];
}

export class SchemaValidator {
  readonly enabled: boolean;
  /** Compiled schemas by collection and version; least recently used dropped first. */
  readonly #cache: LRUCache<string, CompiledSchema>;
  readonly #metaFast = createAjv(false);
  readonly #metaDetailed = createAjv(true);

  constructor(options: { enabled: boolean; cacheSize: number }) {
    this.enabled = options.enabled;
    this.#cache = new LRUCache({ max: options.cacheSize });
  }

  /** Number of compiled schemas held (tests). */
  get cacheSize(): number {
    return this.#cache.size;
  }

  /**
   * Refuses (400 on `field`) a value that is not a Draft-7 schema. Kinto's description is the
   * last step of the path inside the schema glued to jsonschema's message, e.g.
   * `type'nonsense' is not valid under any of the given schemas`.
   */
  checkSchema(value: unknown, field: string): void {
    if (!isPlainObject(value)) {
      throw invalidParameter(
        'body',
        field,
        `${JSON.stringify(value)} is not a mapping type: Does not implement dict-like functionality.`,
      );
    }
    if (!isActiveSchema(value)) return;
    let valid: boolean;
    try {
      valid = this.#metaFast.validate(DRAFT_07, value) as boolean;
    } catch (error) {
      // e.g. a schema nested deeper than the stack allows
      throw invalidParameter('body', field, `Invalid JSON schema: ${(error as Error).message}`);
    }
    if (!valid) {
      let errors = this.#metaFast.errors ?? [];
      if (jsonLength(value) <= DETAILED_ERRORS_MAX_BYTES) {
        try {
          this.#metaDetailed.validate(DRAFT_07, value);
          errors = this.#metaDetailed.errors ?? errors;
        } catch {
          // keep the first error found
        }
      }
      const metaSchema = this.#metaFast.getSchema(DRAFT_07)?.schema;
      const failure = describeFailure(errors, metaSchema);
      const step = failure.instancePath.split('/').pop()?.replace(/~1/g, '/').replace(/~0/g, '~') ?? '';
      throw invalidParameter('body', field, `${step}${failure.description}`);
    }
    // What the meta-schema cannot see: unresolvable `$ref`s, regular expressions JavaScript
    // refuses. Kinto only finds those when a record is validated; we refuse them up front.
    if (this.enabled) {
      try {
        compileSchema(value, false);
      } catch (error) {
        throw invalidParameter('body', field, `Invalid JSON schema: ${(error as Error).message}`);
      }
    }
  }

  /** 400 (errno 107) naming the offending field when `data` does not match `source.schema`. */
  validate(data: Record<string, unknown>, source: SchemaSource, options: ValidateOptions): void {
    const properties = isPlainObject(source.schema.properties) ? source.schema.properties : {};
    // Kinto checks `id` only when the schema declares it; server fields are never checked.
    const ignored = new Set(options.ignoreFields);
    if (!Object.hasOwn(properties, 'id')) ignored.add('id');
    const document: Record<string, unknown> = {};
    for (const [key, value] of Object.entries({ ...data, id: options.id })) {
      if (!ignored.has(key))
        Object.defineProperty(document, key, { value, enumerable: true, writable: true, configurable: true });
    }

    let compiled: CompiledSchema;
    try {
      compiled = this.#compiled(source, ignored);
      if (compiled.fast(document)) return;
    } catch (error) {
      // A stored schema that cannot be compiled (saved before validation was enabled), or a
      // document too deep to check: Kinto answers such failures on the name `schema`.
      throw invalidParameter('body', 'schema', `Invalid JSON schema: ${(error as Error).message}`);
    }
    let errors = errorsOf(compiled.fast);
    if (jsonLength(document) <= DETAILED_ERRORS_MAX_BYTES) {
      try {
        compiled.detailed ??= compileSchema(compiled.schema, true);
        compiled.detailed(document);
        if (errorsOf(compiled.detailed).length > 0) errors = errorsOf(compiled.detailed);
      } catch {
        // keep the first error found
      }
    }
    const failure = describeFailure(errors, compiled.schema);
    throw invalidParameter('body', failure.field, failure.description);
  }

  #compiled(source: SchemaSource, ignored: ReadonlySet<string>): CompiledSchema {
    const key = `${source.key}@${source.version}`;
    const text = JSON.stringify(source.schema);
    const hit = this.#cache.get(key);
    if (hit && hit.source === text) return hit;
    const schema = { ...source.schema };
    if (Array.isArray(schema.required)) {
      const required = schema.required.filter((name) => !ignored.has(name as string));
      if (required.length > 0) schema.required = required;
      else delete schema.required;
    }
    const entry: CompiledSchema = { source: text, schema, fast: compileSchema(schema, false) };
    this.#cache.set(key, entry);
    return entry;
  }
}

const validators = new WeakMap<SchemaSettings, SchemaValidator>();

/** The validator (and its cache) of the server running with these settings. */
export function schemaValidator(settings: SchemaSettings): SchemaValidator {
  let validator = validators.get(settings);
  if (!validator) {
    validator = new SchemaValidator({
      enabled: settings.experimental_collection_schema_validation,
      cacheSize: settings.schema_validator_cache_size,
    });
    validators.set(settings, validator);
  }
  return validator;
}

/** Capability `schema` of `GET /` (protocol-reference §13.8), present only when enabled. */
export const SCHEMA_CAPABILITY = {
  description: 'Validates collection records with JSON schemas.',
  url: 'https://kinto.readthedocs.io/en/latest/api/1.x/collections.html#collection-json-schema',
};
