import { invalidParameter } from '../errors.js';
import type { ResourceDefinition } from '../engine/definition.js';
import { SERVER_FIELDS, validateFromBucketSchema } from '../schema/resource-hooks.js';
import { bucketResource } from './buckets.js';
import { generateName } from './ids.js';

/**
 * Groups: `members` is a list of principals, always present (default []). Members may not be
 * other groups (no nesting: `/buckets/...`) nor `system.Everyone` (protocol-reference §4.1).
 */
export const groupResource: ResourceDefinition = {
  name: 'group',
  plural: 'groups',
  parent: bucketResource,
  permissions: ['read', 'write'],
  generateId: generateName,
  cascades: false,
  async processData(data, context) {
    const members = data.members ?? [];
    if (!Array.isArray(members) || !members.every((member) => typeof member === 'string')) {
      throw invalidParameter('body', 'data.members', `${JSON.stringify(members)} is not a list of principals`);
    }
    for (const member of members as string[]) {
      if (member.startsWith('/buckets/'))
        throw invalidParameter('body', 'data.members', `${member}: groups cannot be members of groups`);
      if (member === 'system.Everyone')
        throw invalidParameter('body', 'data.members', 'system.Everyone cannot be a group member');
    }
    const processed = { ...data, members: [...new Set(members as string[])] };
    // The bucket's `group:schema` (API 1.20), when validation is enabled.
    await validateFromBucketSchema('group', processed, context, SERVER_FIELDS);
    return processed;
  },
  // The group's URI becomes a principal of its members (protocol-reference §9.1).
  async afterWrite({ session, ref }, stored) {
    await session.permissions.setGroupMembers(ref.uri, stored.members as string[]);
  },
};
