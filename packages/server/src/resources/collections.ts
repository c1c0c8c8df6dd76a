import type { ResourceDefinition } from '../resource/definition.js';
import { bucketResource } from './buckets.js';
import { generateName } from './ids.js';

export const collectionResource: ResourceDefinition = {
  name: 'collection',
  plural: 'collections',
  parent: bucketResource,
  permissions: ['read', 'write', 'record:create'],
  generateId: generateName,
  cascades: true,
};
