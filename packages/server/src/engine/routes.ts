import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { methodNotAllowed } from '../errors.js';
import type { ObjectMethod, PluralMethod, ResourceDefinition } from './definition.js';
import { type Answer, JsonText } from './endpoints/answer.js';
import { deleteObject, getObject, patchObject, putObject } from './endpoints/object.js';
import { createObject, deleteObjects, headObjects, listObjects } from './endpoints/plural.js';
import { baseUrl } from '../http/base-url.js';
import { splitUrl } from '../http/url.js';
import { ResourceModel } from './model.js';
import type { RouteParams } from './objects.js';
import { EngineRequest, engineHeaders } from './request.js';
import { type Endpoint, engineRoutesOf } from './route-table.js';

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const PLURAL_METHODS: readonly PluralMethod[] = ['GET', 'HEAD', 'POST', 'DELETE'];
const OBJECT_METHODS: readonly ObjectMethod[] = ['GET', 'PUT', 'PATCH', 'DELETE'];

export type { Endpoint };

/** The endpoint of each method, on a resource's list and on one of its objects. */
const PLURAL_ENDPOINTS: Record<PluralMethod, Endpoint> = {
  GET: listObjects,
  HEAD: headObjects,
  POST: createObject,
  DELETE: deleteObjects,
};
const OBJECT_ENDPOINTS: Record<ObjectMethod, Endpoint> = {
  GET: getObject,
  PUT: putObject,
  PATCH: patchObject,
  DELETE: deleteObject,
};

/** The endpoints a definition serves (all eight unless it says otherwise). */
function endpointsOf(def: ResourceDefinition) {
  return def.endpoints ?? { plural: PLURAL_METHODS, object: OBJECT_METHODS };
}

/** URL patterns of a resource: `/v1/buckets/:bucket_id/collections` and `.../:collection_id`. */
function resourcePaths(def: ResourceDefinition): { plural: string; object: string } {
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

/** The engine's view of a request that came through the router (its route parameters, its caller). */
export function engineRequestOf(request: FastifyRequest): EngineRequest {
  const { settings } = request.server.services;
  return new EngineRequest({
    method: request.method,
    path: splitUrl(request.raw.url).path,
    params: request.params as RouteParams,
    query: request.input,
    headers: engineHeaders(request.headers),
    body: request.body,
    identity: request.identity,
    settings,
    work: request.work,
    id: request.id,
    log: request.log,
    ip: request.ip,
    origin: () => baseUrl(settings, request),
  });
}

/** An endpoint's answer sent as the reply's body: JSON text as it is, null as none. */
export function sendAnswer(reply: FastifyReply, body: Answer) {
  if (body instanceof JsonText) return reply.type('application/json; charset=utf-8').send(body.text);
  return body === null ? reply.send() : body;
}

/** A Fastify handler running `endpoint` on `model`. */
function routeHandler(model: ResourceModel, endpoint: Endpoint) {
  return async (request: FastifyRequest, reply: FastifyReply) =>
    sendAnswer(reply, await endpoint(model, engineRequestOf(request), reply));
}

/** The routes of the endpoints `def` serves (also in the engine's route table: a batch answers them directly). */
export function registerResource(app: FastifyInstance, def: ResourceDefinition): ResourceModel {
  const model = new ResourceModel(app.services, def);
  const table = engineRoutesOf(app);
  const paths = resourcePaths(def);
  const served = endpointsOf(def);
  const plural = Object.fromEntries(served.plural.map((method) => [method, PLURAL_ENDPOINTS[method]]));
  table.add(paths.plural, model, plural);
  registerMethods(app, paths.plural, handlersOf(model, plural));
  if (served.object.length > 0) {
    const object = Object.fromEntries(served.object.map((method) => [method, OBJECT_ENDPOINTS[method]]));
    table.add(paths.object, model, object);
    registerMethods(app, paths.object, handlersOf(model, object));
  }
  return model;
}

function handlersOf(model: ResourceModel, endpoints: Record<string, Endpoint>) {
  return Object.fromEntries(
    Object.entries(endpoints).map(([method, endpoint]) => [method, routeHandler(model, endpoint)]),
  );
}
