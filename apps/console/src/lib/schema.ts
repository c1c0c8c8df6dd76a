/**
 * JSON-schema helpers shared by the form, the import and the validation: no Ajv here, so the
 * pages load without it (lib/validate.ts, loaded on demand, holds it).
 */
export type JsonSchema = Record<string, unknown>;

export const RECORD_SERVER_FIELDS = ['last_modified', 'schema'];

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `{}` or a missing value means "no schema". */
export function isActiveSchema(value: unknown): value is JsonSchema {
  return isPlainObject(value) && Object.keys(value).length > 0;
}

export interface SchemaError {
  /** JSON pointer of the offending value (`/tags/0`), '' for the whole record. */
  path: string;
  message: string;
}

/** `/tags/0` → `tags[0]`; '' → 'record'. */
export function readablePath(pointer: string): string {
  if (!pointer) return 'record';
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

/** Resolves a local `$ref` (`#/definitions/x`) against the root schema; other refs stay as they are. */
export function resolveRef(schema: JsonSchema, root: JsonSchema, depth = 0): JsonSchema {
  const ref = schema.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#') || depth > 10) return schema;
  let target: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    if (!isPlainObject(target)) return schema;
    target = target[decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'))];
  }
  return isPlainObject(target) ? resolveRef(target, root, depth + 1) : schema;
}

/** The schema's main type: `["string", "null"]` → string. */
export function mainType(schema: JsonSchema): string | undefined {
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) return (schema.type as string[]).find((type) => type !== 'null');
  if (isPlainObject(schema.properties)) return 'object';
  if (schema.items !== undefined) return 'array';
  if (Array.isArray(schema.enum)) {
    const first = schema.enum.find((value) => value !== null);
    return first === undefined
      ? undefined
      : Array.isArray(first)
        ? 'array'
        : typeof first === 'object'
          ? 'object'
          : typeof first;
  }
  return undefined;
}

/**
 * A CSV cell typed for a property of the schema: numbers, booleans and JSON where the schema
 * says so, text otherwise. Empty cells are left out.
 */
export function coerceCell(text: string, property: JsonSchema | undefined, root: JsonSchema): unknown {
  if (text === '') return undefined;
  const schema = property ? resolveRef(property, root) : undefined;
  const type = schema ? mainType(schema) : undefined;
  switch (type) {
    case 'integer':
    case 'number': {
      const number = Number(text.trim());
      return Number.isFinite(number) ? number : text;
    }
    case 'boolean': {
      const lower = text.trim().toLowerCase();
      if (['true', '1', 'yes', 'y'].includes(lower)) return true;
      if (['false', '0', 'no', 'n'].includes(lower)) return false;
      return text;
    }
    case 'array':
    case 'object':
    case 'null':
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}
