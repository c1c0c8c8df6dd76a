import type { FastifyInstance, HTTPMethods } from 'fastify';
import { methodNotAllowed } from '../errors.js';
import type { ResourceDefinition } from './definition.js';
import { createResourceHandlers, endpointsOf } from './handlers.js';

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** URL patterns of a resource: `/v1/buckets/:bucket_id/collections` and `.../:collection_id`. */
export function resourcePaths(def: ResourceDefinition): { plural: string; object: string } {
  let prefix = '';
  for (let ancestor = def.parent; ancestor; ancestor = ancestor.parent) {
    prefix = `/${ancestor.plural}/:${ancestor.name}_id${prefix}`;
  }
  const plural = `/v1${prefix}/${def.plural}`;
  return { plural, object: `${plural}/:${def.name}_id` };
}

/** Registers a route's methods and answers 405 (with `Allow`) for the others. */
export function registerMethods(
  app: FastifyInstance,
  url: string,
  handlers: Partial<Record<HTTPMethods, (request: never, reply: never) => unknown>>,
): void {
  const allowed = Object.keys(handlers) as HTTPMethods[];
  for (const method of allowed) {
    app.route({ method, url, handler: handlers[method] as never });
  }
  const others = ALL_METHODS.filter((method) => !allowed.includes(method));
  if (others.length) {
    app.route({
      method: others,
      url,
      handler: async () => {
        throw methodNotAllowed(allowed);
      },
    });
  }
}

/** The routes of the endpoints `def` serves (all eight unless it says otherwise). */
export function registerResource(app: FastifyInstance, def: ResourceDefinition): void {
  const handlers = createResourceHandlers(app.services, def);
  const paths = resourcePaths(def);
  const endpoints = endpointsOf(def);
  const pluralHandlers = { GET: handlers.getList, HEAD: handlers.getList, POST: handlers.create, DELETE: handlers.deleteList };
  const objectHandlers = { GET: handlers.get, PUT: handlers.put, PATCH: handlers.patch, DELETE: handlers.delete };
  registerMethods(app, paths.plural, Object.fromEntries(endpoints.plural.map((method) => [method, pluralHandlers[method]])));
  if (endpoints.object.length > 0) {
    registerMethods(app, paths.object, Object.fromEntries(endpoints.object.map((method) => [method, objectHandlers[method]])));
  }
}
