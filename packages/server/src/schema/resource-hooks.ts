/**
 * Where JSON schemas apply to writes (protocol-reference §4.1), for the resources' `processData`:
 * a collection's `schema` on its records, and a bucket's `collection:schema`, `group:schema`
 * and `record:schema` on its children (API 1.20). Only with
 * `experimental_collection_schema_validation`, as Kinto.
 */
import type { WriteContext } from '../engine/definition.js';
import { isActiveSchema, schemaValidator } from './validator.js';

/** Server-owned fields, neither checked nor required by schemas (Kinto's `ignore_fields`). */
export const RECORD_SERVER_FIELDS = ['last_modified', 'schema'] as const;
export const SERVER_FIELDS = ['last_modified'] as const;

/** The bucket fields holding schemas for its children. */
export const BUCKET_SCHEMA_FIELDS = ['collection:schema', 'group:schema', 'record:schema'] as const;

/** Validates `data` against the schema its bucket defines for `resourceName`, if any. */
export async function validateFromBucketSchema(
  resourceName: 'collection' | 'group' | 'record',
  data: Record<string, unknown>,
  context: WriteContext,
  ignoreFields: readonly string[],
): Promise<void> {
  const validator = schemaValidator(context.settings);
  const bucketRef = context.ref.ancestors[0];
  if (!validator.enabled || !bucketRef) return;
  const bucket = await context.session.objects.get({ resourceName: 'bucket', parentId: '' }, bucketRef.id);
  const field = `${resourceName}:schema`;
  const schema = bucket?.[field];
  if (!bucket || !isActiveSchema(schema)) return;
  validator.validate(
    data,
    { key: `${bucketRef.uri}#${field}`, version: bucket.last_modified, schema },
    { ignoreFields, id: context.ref.id },
  );
}

/**
 * A record against its collection's `schema`; a valid record gets `schema: <collection
 * last_modified>`, the schema version it was checked against.
 */
export async function validateRecord(
  data: Record<string, unknown>,
  context: WriteContext,
): Promise<Record<string, unknown>> {
  const validator = schemaValidator(context.settings);
  const collectionRef = context.ref.ancestors.at(-1);
  if (!validator.enabled || !collectionRef) return data;
  const collection = await context.session.objects.get(
    { resourceName: 'collection', parentId: collectionRef.parentUri },
    collectionRef.id,
  );
  let result = data;
  if (collection && isActiveSchema(collection.schema)) {
    validator.validate(
      data,
      { key: collectionRef.uri, version: collection.last_modified, schema: collection.schema },
      { ignoreFields: RECORD_SERVER_FIELDS, id: context.ref.id },
    );
    result = { ...data, schema: collection.last_modified };
  }
  await validateFromBucketSchema('record', result, context, RECORD_SERVER_FIELDS);
  return result;
}
