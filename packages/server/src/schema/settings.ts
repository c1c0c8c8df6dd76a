/** Settings of JSON schema validation (schema/validator.ts). */
import { Type } from '@sinclair/typebox';
import type { SettingSchemas, SettingValues } from '../settings/schema.js';

export const SCHEMA_SETTINGS = {
  experimental_collection_schema_validation: Type.Boolean({
    default: false,
    description:
      'Validate records against their collection’s `schema`, and children against their bucket’s ' +
      '`collection:schema`, `group:schema`, `record:schema` (capability `schema`).',
  }),
  schema_validator_cache_size: Type.Integer({
    default: 256,
    minimum: 1,
    description: 'Compiled JSON schemas kept in memory per process (least recently used dropped first).',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type SchemaSettings = SettingValues<typeof SCHEMA_SETTINGS>;
