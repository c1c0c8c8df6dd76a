import { invalidParameter } from '../errors.js';
import type { ResourceDefinition } from '../engine/definition.js';
import { SERVER_FIELDS, validateFromBucketSchema } from '../schema/resource-hooks.js';
import { schemaValidator } from '../schema/validator.js';
import { bucketResource } from './buckets.js';
import { generateName } from './ids.js';

export const collectionResource: ResourceDefinition = {
  name: 'collection',
  plural: 'collections',
  parent: bucketResource,
  permissions: ['read', 'write', 'record:create'],
  generateId: generateName,
  cascades: true,
  async processData(data, context) {
    // Kinto checks `schema` is a Draft-7 schema even while validation is off (§4.1).
    if (data.schema !== undefined) schemaValidator(context.settings).checkSchema(data.schema, 'data.schema');
    // Seconds anonymous reads of its records may be cached (§12.5). Kinto takes any integer;
    // a negative max-age means nothing, so it is refused too.
    const cacheExpires = data.cache_expires;
    if (cacheExpires !== undefined && !(Number.isInteger(cacheExpires) && (cacheExpires as number) >= 0)) {
      throw invalidParameter(
        'body',
        'data.cache_expires',
        `${JSON.stringify(cacheExpires)} is not a whole number of seconds`,
      );
    }
    await validateFromBucketSchema('collection', data, context, SERVER_FIELDS);
    return data;
  },
};
