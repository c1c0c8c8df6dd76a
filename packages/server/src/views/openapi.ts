/**
 * `GET /v1/__api__`: an OpenAPI 2.0 description of the routes this instance serves, built from
 * the routes actually registered (so it never drifts from them): every `/v1` route Fastify
 * registers, whoever registers it, with its path parameters.
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { requestHost, requestScheme } from '../http/base-url.js';
import { registerMethods } from '../engine/routes.js';
import { HTTP_API_VERSION } from './hello.js';

interface Parameter {
  name: string;
  in: 'path';
  required: true;
  type: 'string';
  description?: string;
}

interface Operation {
  operationId: string;
  tags: string[];
  parameters: Parameter[];
  responses: Record<string, { description: string }>;
}

interface RegisteredRoute {
  methods: string[];
  url: string;
  /** Registered with several methods at once. */
  grouped: boolean;
  hidden: boolean;
}

const SUCCESS: Record<string, Record<string, { description: string }>> = {
  get: { '200': { description: 'Success.' }, '304': { description: 'Not modified (If-None-Match).' } },
  head: { '200': { description: 'Success (headers only).' } },
  post: { '200': { description: 'Success (or the existing object).' }, '201': { description: 'Created.' } },
  put: { '200': { description: 'Replaced.' }, '201': { description: 'Created.' } },
  patch: { '200': { description: 'Modified.' } },
  delete: { '200': { description: 'Deleted.' } },
};

const ERROR_RESPONSES = {
  '400': { description: 'Invalid parameters (errno 107).' },
  '401': { description: 'Authentication required (errno 104).' },
  '403': { description: 'Forbidden (errno 121).' },
  default: { description: 'Error body: {code, errno, error, message?, details?}.' },
};

const WILDCARD_PARAMETER = 'path';

function tagOf(url: string): string {
  const segments = url
    .split('/')
    .filter((segment) => segment && !segment.startsWith(':') && segment !== '*' && segment !== 'v1');
  return segments.at(-1)?.replace(/^__|__$/g, '') || 'root';
}

/**
 * Fastify's URL syntax to OpenAPI's: `:name` (with an optional `(regex)`) becomes `{name}`, a
 * trailing `*` becomes `{path}` (any sub-path).
 */
function toOpenApiPath(url: string): { path: string; parameters: Parameter[] } {
  const parameters: Parameter[] = [];
  let path = url
    .slice('/v1'.length)
    .replaceAll('::', '\u0000')
    .replace(/:(\w+)(\([^)]*\))?/g, (_match, name: string) => {
      parameters.push({ name, in: 'path', required: true, type: 'string' });
      return `{${name}}`;
    })
    .replaceAll('\u0000', ':');
  if (path.endsWith('*')) {
    path = `${path.slice(0, -1)}{${WILDCARD_PARAMETER}}`;
    parameters.push({
      name: WILDCARD_PARAMETER,
      in: 'path',
      required: true,
      type: 'string',
      description: 'Any sub-path, slashes included.',
    });
  }
  return { path: path || '/', parameters };
}

/**
 * Routes that only answer 405 are left out: `registerMethods` (and views built like it) first
 * register each allowed method alone, then one route grouping all the other methods. A URL
 * served only by grouped routes (e.g. the default bucket's proxy) is documented as is.
 */
function documentedMethods(routes: RegisteredRoute[], route: RegisteredRoute): string[] {
  if (route.hidden) return [];
  if (route.grouped && routes.some((other) => other.url === route.url && !other.grouped)) return [];
  return route.methods;
}

function uniqueId(taken: Set<string>, wanted: string): string {
  let id = wanted;
  for (let n = 2; taken.has(id); n++) id = `${wanted}_${n}`;
  taken.add(id);
  return id;
}

export function registerOpenApi(app: FastifyInstance): void {
  const routes: RegisteredRoute[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url !== '/v1' && !route.url.startsWith('/v1/')) return;
    const methods = [route.method].flat().map((method) => method.toLowerCase());
    const schema = route.schema as { hide?: boolean } | undefined;
    const config = route.config as { hide?: boolean } | undefined;
    routes.push({
      methods,
      url: route.url,
      grouped: methods.length > 1,
      hidden: schema?.hide === true || config?.hide === true,
    });
  });

  registerMethods(app, '/v1/__api__', {
    GET: async (request: FastifyRequest) => {
      const paths: Record<string, Record<string, Operation>> = {};
      const operationIds = new Set<string>();
      for (const route of routes) {
        const { path, parameters } = toOpenApiPath(route.url);
        for (const verb of documentedMethods(routes, route)) {
          if (!(verb in SUCCESS)) continue;
          paths[path] ??= {};
          const operations = paths[path];
          if (operations[verb]) continue;
          const name =
            path
              .replace(/[{}]/g, '')
              .replace(/[^\w]+/g, '_')
              .replace(/^_+|_+$/g, '') || 'root';
          operations[verb] = {
            operationId: uniqueId(operationIds, `${verb}_${name}`),
            tags: [tagOf(route.url)],
            parameters,
            responses: { ...SUCCESS[verb], ...ERROR_RESPONSES },
          };
        }
      }
      const { settings } = app.services;
      return {
        swagger: '2.0',
        info: {
          title: settings.project_name,
          version: HTTP_API_VERSION,
          description: `Kinto-compatible HTTP API (${HTTP_API_VERSION}).`,
        },
        host: requestHost(settings, request),
        basePath: '/v1',
        schemes: [requestScheme(settings, request)],
        consumes: ['application/json'],
        produces: ['application/json'],
        securityDefinitions: { basicAuth: { type: 'basic' } },
        paths,
      };
    },
  });
}
