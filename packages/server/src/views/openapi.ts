/**
 * `GET /v1/__api__`: an OpenAPI 2.0 description of the routes this instance serves, built from
 * the routes actually registered (so it never drifts from them).
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { registerMethods } from '../resource/routes.js';
import { HTTP_API_VERSION } from './hello.js';

interface Operation {
  operationId: string;
  tags: string[];
  parameters: Array<Record<string, unknown>>;
  responses: Record<string, { description: string }>;
}

const ERROR_RESPONSES = {
  '400': { description: 'Invalid parameters (errno 107).' },
  '401': { description: 'Authentication required (errno 104).' },
  '403': { description: 'Forbidden (errno 121).' },
  default: { description: 'Error body: {code, errno, error, message?, details?}.' },
};

function tagOf(url: string): string {
  const segments = url.split('/').filter((segment) => segment && !segment.startsWith(':') && segment !== 'v1');
  return segments.at(-1)?.replace(/^__|__$/g, '') ?? 'root';
}

export function registerOpenApi(app: FastifyInstance): void {
  const routes: Array<Pick<RouteOptions, 'method' | 'url'>> = [];
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/v1')) routes.push({ method: route.method, url: route.url });
  });

  registerMethods(app, '/v1/__api__', {
    GET: async (request: FastifyRequest) => {
      const paths: Record<string, Record<string, Operation>> = {};
      for (const route of routes) {
        const path = route.url.slice('/v1'.length).replace(/:(\w+)/g, '{$1}') || '/';
        const parameters = [...route.url.matchAll(/:(\w+)/g)].map((match) => ({ name: match[1], in: 'path', required: true, type: 'string' }));
        for (const method of [route.method].flat()) {
          const verb = method.toLowerCase();
          const operations = (paths[path] ??= {});
          if (operations[verb]) continue;
          operations[verb] = {
            operationId: `${verb}_${path.replace(/[{}]/g, '').replace(/[^\w]+/g, '_').replace(/^_|_$/g, '') || 'root'}`,
            tags: [tagOf(route.url)],
            parameters,
            responses: { '200': { description: 'Success.' }, ...ERROR_RESPONSES },
          };
        }
      }
      const { settings } = app.services;
      return {
        swagger: '2.0',
        info: { title: settings.project_name, version: HTTP_API_VERSION, description: 'Kinto-compatible HTTP API (1.22).' },
        host: settings.http_host ?? request.host,
        basePath: '/v1',
        schemes: [settings.http_scheme ?? request.protocol],
        consumes: ['application/json'],
        produces: ['application/json'],
        securityDefinitions: { basicAuth: { type: 'basic' } },
        paths,
      };
    },
  });
}
