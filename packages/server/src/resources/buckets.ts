import type { ResourceDefinition } from '../engine/definition.js';
import { BUCKET_SCHEMA_FIELDS } from '../schema/resource-hooks.js';
import { schemaValidator } from '../schema/validator.js';
import { generateName } from './ids.js';

export const bucketResource: ResourceDefinition = {
  name: 'bucket',
  plural: 'buckets',
  parent: null,
  permissions: ['read', 'write', 'collection:create', 'group:create'],
  generateId: generateName,
  cascades: true,
  // The children's schemas (API 1.20) must be schemas, once validation is on; without it they
  // are plain attributes, as in Kinto.
  processData(data, { settings }) {
    const validator = schemaValidator(settings);
    if (!validator.enabled) return data;
    for (const field of BUCKET_SCHEMA_FIELDS) {
      if (data[field] !== undefined) validator.checkSchema(data[field], `data.${field}`);
    }
    return data;
  },
};
