/** Settings of the resource engine (resource/handlers.ts): page sizes and pagination tokens. */
import { Type } from '@sinclair/typebox';
import { Nullable, type SettingSchemas } from '../settings/schema.js';

export const RESOURCE_SETTINGS = {
  paginate_by: Nullable(Type.Integer({ minimum: 1 }), { default: null, description: 'Server page size (unset: `storage_max_fetch_size`).' }),
  pagination_token_validity_seconds: Type.Integer({ default: 600, minimum: 1, description: 'Lifetime of a plural-DELETE pagination token.' }),
} satisfies SettingSchemas;
