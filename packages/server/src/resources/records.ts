import type { ResourceDefinition } from '../resource/definition.js';
import { collectionResource } from './collections.js';
import { generateUuid } from './ids.js';

export const recordResource: ResourceDefinition = {
  name: 'record',
  plural: 'records',
  parent: collectionResource,
  permissions: ['read', 'write'],
  generateId: generateUuid,
  cascades: false,
};
