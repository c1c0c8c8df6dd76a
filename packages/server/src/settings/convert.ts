/**
 * A setting's value as given (environment text, a config file's JSON, an override) read as its
 * schema's type. Only reading: what does not read as that type is left as given, for ajv to
 * refuse with the operator's message (validate.ts).
 */
import type { TSchema } from '@sinclair/typebox';
import { type SettingKeywords, settingKind } from './schema.js';

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** `fail` is called with the reason when the value cannot be read at all (JSON that does not parse). */
export function convertSetting(schema: TSchema & SettingKeywords, raw: unknown, fail: (why: string) => never): unknown {
  const { kind, nullable } = settingKind(schema);
  if (raw === null || (typeof raw === 'string' && raw.trim() === '' && kind !== 'string')) {
    // Unset: null where allowed, an empty list; anything else is refused as missing.
    if (nullable) return null;
    return kind === 'list' ? [] : null;
  }
  switch (kind) {
    case 'string':
      return raw === '' && nullable ? null : raw;
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      const text = String(raw).trim().toLowerCase();
      return TRUE.has(text) ? true : FALSE.has(text) ? false : raw;
    }
    case 'integer':
    case 'number': {
      if (schema.auto && typeof raw === 'string' && raw.trim().toLowerCase() === 'auto') return schema.auto();
      if (typeof raw === 'number') return raw;
      const value = Number(String(raw).trim());
      return Number.isFinite(value) ? value : raw;
    }
    case 'list':
      // Kinto's ini files separate values with spaces or new lines; commas are accepted too.
      return typeof raw === 'string' ? raw.split(/[\s,]+/).filter(Boolean) : raw;
    case 'json':
      if (typeof raw !== 'string') return raw;
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        // The text is not quoted back: JSON settings may hold secrets.
        return fail('expected JSON');
      }
  }
}
