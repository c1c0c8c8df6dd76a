import type { ResourceDefinition } from '../engine/definition.js';
import { bucketResource } from './buckets.js';
import { collectionResource } from './collections.js';
import { groupResource } from './groups.js';
import { recordResource } from './records.js';

/** Every resource of the protocol, parents before children. */
export const RESOURCES: ResourceDefinition[] = [bucketResource, collectionResource, groupResource, recordResource];
