import type { ResourceDefinition } from '../engine/definition.js';
import { validateRecord } from '../schema/resource-hooks.js';
import { collectionResource } from './collections.js';
import { generateUuid } from './ids.js';

export const recordResource: ResourceDefinition = {
  name: 'record',
  plural: 'records',
  parent: collectionResource,
  permissions: ['read', 'write'],
  generateId: generateUuid,
  cascades: false,
  // The collection's and the bucket's JSON schemas, when validation is enabled (§4.1).
  processData: validateRecord,
};
