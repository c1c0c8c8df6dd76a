/**
 * The settings given (environment, config file, overrides) checked against their schemas by ajv,
 * and ajv's first error told in the operator's terms: `Invalid setting <name> (from <where it came
 * from>): <why>`, or the setting's own message (its `invalid` keyword) for rules beyond its type.
 * Defaults are not checked at each start: they are the schemas' own (config.test.ts checks them).
 * A setting's validator is compiled when a value is first given to it, and the schemas are checked
 * against JSON Schema's meta-schema only in that test: compiling them all, with that check, added
 * some 100 ms to every start.
 */
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ConfigError } from './config-error.js';
import { DATE_TEXT_FORMAT, SETTING_KEYWORDS, type SettingKind, type SettingSchemas, settingKind } from './schema.js';

/** Where a value came from (`QUIRE_PORT`, a config file, `overrides`, `default`) and the value as given there. */
export interface SettingOrigin {
  source: string;
  raw: unknown;
}

/** Checks the settings named in `origins`, in the schemas' order; throws a ConfigError for the first wrong one. */
export type SettingsValidator = (
  settings: Record<string, unknown>,
  origins: ReadonlyMap<string, SettingOrigin>,
) => void;

export interface SettingsValidatorOptions {
  /** Check each schema against JSON Schema's meta-schema as it is compiled (tests). */
  checkSchemas?: boolean;
}

export function createSettingsValidator(
  schemas: SettingSchemas,
  options: SettingsValidatorOptions = {},
): SettingsValidator {
  let ajv: Ajv | undefined;
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (name: string, schema: TSchema): ValidateFunction => {
    ajv ??= createAjv(options.checkSchemas ?? false);
    let validate = validators.get(name);
    if (!validate) {
      validate = ajv.compile(schema);
      validators.set(name, validate);
    }
    return validate;
  };
  return (settings, origins) => {
    for (const [name, schema] of Object.entries(schemas)) {
      const origin = origins.get(name);
      if (!origin) continue;
      const validate = validatorOf(name, schema);
      if (validate(settings[name])) continue;
      const error = validate.errors?.[0];
      if (!error) throw new ConfigError(`Invalid setting ${name} (from ${origin.source})`);
      const path = error.instancePath.split('/').slice(1).map(unescapePointer);
      throw new ConfigError(describe(name, schema, path, error, settings[name], origin));
    }
  };
}

function createAjv(checkSchemas: boolean): Ajv {
  const ajv = new Ajv({ allowUnionTypes: true, validateSchema: checkSchemas, meta: checkSchemas });
  ajv.addVocabulary([...SETTING_KEYWORDS]);
  ajv.addFormat(DATE_TEXT_FORMAT.name, DATE_TEXT_FORMAT.check);
  return ajv;
}

function describe(
  name: string,
  schema: SettingSchemas[string],
  path: string[],
  error: ErrorObject,
  value: unknown,
  origin: SettingOrigin,
): string {
  const { kind } = settingKind(schema);
  const generic = (why: string) => `Invalid setting ${name} (from ${origin.source}): ${why}`;
  if (path.length === 0 && error.keyword === 'type' && value === null) return generic('a value is required');
  // Types of scalars and lists are told the same way for every setting; a JSON value's shape, by its own.
  if (error.keyword === 'type' && kind !== 'json') {
    const got = schema.secret ? '' : `, got ${JSON.stringify(origin.raw)}`;
    return generic(wrongType(kind, schema.auto !== undefined, value, got));
  }
  if (path.length === 0 && error.keyword === 'minimum')
    return generic(`must be at least ${String(error.params.limit)}`);
  if (path.length === 0 && error.keyword === 'maximum') return generic(`must be at most ${String(error.params.limit)}`);
  if (!schema.invalid) return generic(error.message ?? error.keyword);
  const told = schema.invalid({ keyword: error.keyword, path, params: error.params, value: valueAt(value, path) });
  return typeof told === 'string'
    ? `Invalid setting ${name}: ${told}`
    : `Invalid setting ${name}${told.where}: ${told.why}`;
}

function wrongType(kind: Exclude<SettingKind, 'json'>, auto: boolean, value: unknown, got: string): string {
  switch (kind) {
    case 'list':
      return 'expected a list of strings';
    case 'boolean':
      return `expected true or false${got}`;
    case 'string':
      return `expected a string${got}`;
    case 'number':
      return `expected a number${got}`;
    case 'integer':
      // A number that is not whole, or no number at all.
      if (auto) return `expected an integer or auto${got}`;
      return `${typeof value === 'number' ? 'expected an integer' : 'expected a number'}${got}`;
  }
}

function valueAt(value: unknown, path: string[]): unknown {
  return path.reduce<unknown>((inner, key) => (inner as Record<string, unknown> | undefined)?.[key], value);
}

/** A JSON Pointer segment as the key it names (`~1` is `/`, `~0` is `~`). */
function unescapePointer(segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}
