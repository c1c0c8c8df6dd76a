import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { methodNotAllowed } from '../errors.js';
import type { ObjectMethod, PluralMethod, ResourceDefinition } from './definition.js';
import { JsonText, type Answer } from './endpoints/answer.js';
import { deleteObject, getObject, patchObject, putObject } from './endpoints/object.js';
import { createObject, deleteObjects, headObjects, listObjects } from './endpoints/plural.js';
import { ResourceModel } from './model.js';
import type { ResponseHead } from './object-responses.js';

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const PLURAL_METHODS: readonly PluralMethod[] = ['GET', 'HEAD', 'POST', 'DELETE'];
const OBJECT_METHODS: readonly ObjectMethod[] = ['GET', 'PUT', 'PATCH', 'DELETE'];

/** An endpoint of the engine: the resource model, the request, where its status and headers go. */
export type Endpoint = (model: ResourceModel, request: FastifyRequest, reply: ResponseHead) => Promise<Answer>;

/** The endpoint of each method, on a resource's list and on one of its objects. */
export const PLURAL_ENDPOINTS: Record<PluralMethod, Endpoint> = {
  GET: listObjects,
  HEAD: headObjects,
  POST: createObject,
  DELETE: deleteObjects,
};
export const OBJECT_ENDPOINTS: Record<ObjectMethod, Endpoint> = {
  GET: getObject,
  PUT: putObject,
  PATCH: patchObject,
  DELETE: deleteObject,
};

/** The endpoints a definition serves (all eight unless it says otherwise). */
export function endpointsOf(def: ResourceDefinition) {
  return def.endpoints ?? { plural: PLURAL_METHODS, object: OBJECT_METHODS };
}

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

/** A Fastify handler running `endpoint` on `model`: its answer is the body, null none. */
function routeHandler(model: ResourceModel, endpoint: Endpoint) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const body = await endpoint(model, request, reply);
    if (body instanceof JsonText) return reply.type('application/json; charset=utf-8').send(body.text);
    return body === null ? reply.send() : body;
  };
}

const MODELS = new WeakMap<FastifyInstance, ResourceModel[]>();

/** The models of the resources registered on `app` (a batch answers their sub-requests directly: views/batch-direct.ts). */
export function resourceModelsOf(app: FastifyInstance): readonly ResourceModel[] {
  return MODELS.get(app) ?? [];
}

/** The routes of the endpoints `def` serves. */
export function registerResource(app: FastifyInstance, def: ResourceDefinition): ResourceModel {
  const model = new ResourceModel(app.services, def);
  const models = MODELS.get(app) ?? [];
  models.push(model);
  MODELS.set(app, models);
  const paths = resourcePaths(def);
  const endpoints = endpointsOf(def);
  registerMethods(
    app,
    paths.plural,
    Object.fromEntries(endpoints.plural.map((method) => [method, routeHandler(model, PLURAL_ENDPOINTS[method])])),
  );
  if (endpoints.object.length > 0) {
    registerMethods(
      app,
      paths.object,
      Object.fromEntries(endpoints.object.map((method) => [method, routeHandler(model, OBJECT_ENDPOINTS[method])])),
    );
  }
  return model;
}
