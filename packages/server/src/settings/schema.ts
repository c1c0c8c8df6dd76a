/**
 * How a setting is declared: a TypeBox schema (JSON Schema, checked by ajv) with a `default` and a
 * `description`, and these keywords of ours. Each feature declares its settings with these in its
 * own `settings.ts`; config.ts composes them.
 */
import {
  Type,
  type SchemaOptions,
  type Static,
  type TArray,
  type TObject,
  type TSchema,
  type TString,
  type TUnsafe,
} from '@sinclair/typebox';

/** What ajv found wrong in a setting's value: the keyword, where below the setting, the value there. */
export interface SettingProblem {
  keyword: string;
  path: string[];
  params: Record<string, unknown>;
  value: unknown;
}

/** Our keywords, beside JSON Schema's (validate.ts declares them to ajv). */
export interface SettingKeywords {
  /** Never logged nor shown (redactSettings). */
  secret?: boolean;
  /** An integer setting that also accepts `auto`, which stands for what this returns. */
  auto?: () => number;
  /**
   * What the operator is told when the value breaks a rule of the schema beyond its type (a
   * pattern, a choice, the shape of a JSON value); `where` names a part of the value.
   */
  invalid?: (problem: SettingProblem) => string | { where: string; why: string };
}

export const SETTING_KEYWORDS = ['secret', 'auto', 'invalid'] as const satisfies ReadonlyArray<keyof SettingKeywords>;

export type SettingOptions = SchemaOptions & SettingKeywords;

/** One feature's settings, by name. */
export type SettingSchemas = Record<string, TSchema & SettingKeywords>;

/** The loaded values of some settings (a feature's checks take their own, not all of `Settings`). */
export type SettingValues<T extends SettingSchemas> = Static<TObject<T>>;

/** A text that `Date.parse` reads (`eos`): the format's name and its check, for ajv. */
export const DATE_TEXT_FORMAT = { name: 'date-text', check: (text: string) => !Number.isNaN(Date.parse(text)) };

export function DateText(): TString {
  return Type.String({ format: DATE_TEXT_FORMAT.name });
}

/** `schema`'s values or null; one `type` list rather than anyOf, so that ajv reports one error. */
export function Nullable<T extends TSchema>(schema: T, options: SettingOptions = {}): TUnsafe<Static<T> | null> {
  if (typeof schema.type !== 'string') throw new TypeError('Nullable() takes a schema of one type');
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [schema.type, 'null'] });
}

/** A list of strings: in the environment, separated by spaces or commas. */
export function List(options: SettingOptions): TArray<TString> {
  return Type.Array(Type.String(), options);
}

/** One of a few strings. */
export function Choice<const V extends readonly string[]>(values: V, options: SettingOptions): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ ...options, type: 'string', enum: [...values] });
}

/** How a value given as text is read: by the type the schema declares. */
export type SettingKind = 'string' | 'integer' | 'number' | 'boolean' | 'list' | 'json';

export function settingKind(schema: TSchema): { kind: SettingKind; nullable: boolean } {
  const types: unknown[] = [schema.type].flat();
  const nullable = types.includes('null');
  const type = types.find((name) => name !== 'null');
  if (type === 'string' || type === 'integer' || type === 'number' || type === 'boolean')
    return { kind: type, nullable };
  if (type === 'array' && (schema.items as TSchema | undefined)?.type === 'string') return { kind: 'list', nullable };
  return { kind: 'json', nullable };
}

export function envName(setting: string): string {
  return `QUIRE_${setting.toUpperCase()}`;
}

type Merged<T extends readonly SettingSchemas[]> = T extends readonly [
  infer First,
  ...infer Rest extends readonly SettingSchemas[],
]
  ? First & Merged<Rest>
  : unknown;

/** The features' settings in one record, in the order given (the README's); a name twice is a bug. */
export function composeSettings<const T extends readonly SettingSchemas[]>(...groups: T): Merged<T> {
  const all: SettingSchemas = {};
  for (const group of groups) {
    for (const [name, schema] of Object.entries(group)) {
      if (Object.hasOwn(all, name)) throw new Error(`Setting ${name} is declared twice`);
      all[name] = schema;
    }
  }
  return all as Merged<T>;
}
