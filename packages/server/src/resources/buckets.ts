import type { ResourceDefinition } from '../resource/definition.js';
import { generateName } from './ids.js';

export const bucketResource: ResourceDefinition = {
  name: 'bucket',
  plural: 'buckets',
  parent: null,
  permissions: ['read', 'write', 'collection:create', 'group:create'],
  generateId: generateName,
  cascades: true,
};
