/**
 * `GET /permissions` (protocol-reference §9.3): every object on which the caller holds a
 * permission — through an ACE naming one of its principals (groups included) or through the
 * `<resource>_<permission>_principals` settings — with the permissions it implies on that
 * object. One SQL statement builds, filters, sorts and pages the entries, so a caller with
 * 100k objects and thousands of groups gets a page in one round trip.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidParameter } from '../errors.js';
import { IMPLIED_PERMISSIONS } from '../permission/authorizer.js';
import { setNextPage } from '../http/next-page.js';
import { denied } from '../engine/denied.js';
import { effectiveLimit } from '../engine/pagination.js';
import { encodeToken } from '../engine/pagination.js';
import { compileProjection } from '../engine/querystring.js';
import { registerMethods } from '../engine/routes.js';
import type { PermissionEntry, Sort, StoredObject } from '../storage/types.js';

/** The fields an entry has; filtering or sorting on another one is a 400. */
const ENTRY_FIELDS = new Set([
  'uri',
  'resource_name',
  'permissions',
  'id',
  'bucket_id',
  'collection_id',
  'group_id',
  'record_id',
  'account_id',
]);

/** Entries have no timestamp: Kinto answers this constant ETag. */
const ETAG = '"0"';

function checkField(name: string, field: string): void {
  if (!ENTRY_FIELDS.has(field)) throw invalidParameter('querystring', name, `Unknown field "${field}"`);
}

export function registerPermissions(app: FastifyInstance): void {
  const { services } = app;
  const { settings, authorizer, events } = services;
  if (!settings.experimental_permissions_endpoint) return;
  services.capabilities.permissions_endpoint = {
    description: 'The permissions endpoint can be used to list all user objects permissions.',
    url: 'https://kinto.readthedocs.io/en/latest/configuration/settings.html#activating-the-permissions-endpoint',
  };

  async function list(request: FastifyRequest, reply: FastifyReply) {
    const { principals } = request.identity;
    if (!settings.permissions_read_principals.some((principal) => principals.includes(principal)))
      throw denied(services, request.identity);

    const query = request.input.listing;
    // Entries have no timestamps: `_since`/`_before` and last_modified filters are ignored (§9.3).
    const filters = query.filters.filter((filter) => filter.field !== 'last_modified');
    for (const filter of filters) checkField(filter.field, filter.field);
    const requested = query.sorting.filter((sort) => sort.field !== 'last_modified');
    for (const sort of requested) checkField('_sort', sort.field);
    // The URI is unique: it ends every order so that pages continue exactly (default `-uri`).
    const sorting: Sort[] = requested.some((sort) => sort.field === 'uri')
      ? requested
      : [...requested, { field: 'uri', direction: -1 }];

    const grants = authorizer.settingsGrants(principals);
    const root: PermissionEntry[] = grants.root.length
      ? [{ uri: '/', resource_name: 'root', permissions: [...grants.root].sort() }]
      : [];
    const limit = effectiveLimit(services.settings, query.requestedLimit);

    const page = await request.work.run('read', async (session) => {
      const entries = await session.permissions.entries({
        principals,
        globalGrants: grants.objects,
        implied: IMPLIED_PERMISSIONS,
        extraEntries: root,
        filters,
        sorting,
        ...(query.token ? { after: query.token.lastObject } : {}),
        limit: limit + 1,
      });
      // A `read` of resource `permissions` (§10.1); entries have no timestamp (Kinto's is 0).
      if (events.wants('read', 'permissions')) {
        const impactedObjects = entries.slice(0, limit).map((entry) => ({ new: entry as unknown as StoredObject }));
        request.work.emit(request, {
          resourceName: 'permissions',
          parentId: '',
          action: 'read',
          timestamp: 0,
          impactedObjects,
        });
      }
      return entries;
    });
    const items = page.slice(0, limit);
    if (page.length > limit) {
      const offset = (query.token?.offset ?? 0) + items.length;
      const token = encodeToken(items[items.length - 1]!, sorting, offset);
      setNextPage(reply, request, services.settings, { params: query.params, limit, token: token.encoded });
    }
    reply.header('ETag', ETAG);
    return { data: query.fields ? items.map(compileProjection(query.fields)) : items };
  }

  registerMethods(app, '/v1/permissions', { GET: list });
}
