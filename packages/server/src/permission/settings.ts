/**
 * Permission settings (permission/authorizer.ts): principals granted a permission on every object
 * of a kind (`<resource>_<permission>_principals`), the author's `write`, and `GET /permissions`.
 */
import { Type } from '@sinclair/typebox';
import { List, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const PERMISSION_SETTINGS = {
  explicit_permissions: Type.Boolean({
    default: true,
    description: 'Add the author of each write to the object’s `write` principals.',
  }),
  bucket_create_principals: List({ default: ['system.Authenticated'], description: 'Who may create buckets.' }),
  bucket_read_principals: List({ default: [], description: 'Principals granted read on every bucket.' }),
  bucket_write_principals: List({ default: [], description: 'Principals granted write on every bucket.' }),
  collection_create_principals: List({
    default: [],
    description: 'Principals granted collection creation in every bucket.',
  }),
  collection_read_principals: List({ default: [], description: 'Principals granted read on every collection.' }),
  collection_write_principals: List({ default: [], description: 'Principals granted write on every collection.' }),
  group_create_principals: List({ default: [], description: 'Principals granted group creation in every bucket.' }),
  group_read_principals: List({ default: [], description: 'Principals granted read on every group.' }),
  group_write_principals: List({ default: [], description: 'Principals granted write on every group.' }),
  record_create_principals: List({
    default: [],
    description: 'Principals granted record creation in every collection.',
  }),
  record_read_principals: List({ default: [], description: 'Principals granted read on every record.' }),
  record_write_principals: List({ default: [], description: 'Principals granted write on every record.' }),
  experimental_permissions_endpoint: Type.Boolean({
    default: true,
    description: 'Serve `GET /permissions` (capability `permissions_endpoint`).',
  }),
  permissions_read_principals: List({
    default: ['system.Everyone'],
    description: 'Who may call `GET /permissions` (each caller sees only its own permissions).',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type PermissionSettings = SettingValues<typeof PERMISSION_SETTINGS>;
