/**
 * `GET /__api__`: a valid OpenAPI 2.0 document (checked by swagger-parser) describing the routes
 * the server registers, and only their real methods (not the 405 catch-alls).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import type { HTTPMethods } from 'fastify';
import { describe, expect, it } from 'vitest';
import { useEmbeddedStore } from '../../test/helpers/embedded-server.js';
import { SETTINGS } from '../config.js';

const { serverWith } = useEmbeddedStore();

/** `/buckets/{bucket_id}` → `/v1/buckets/:bucket_id`, `{path}` → `*`. */
function toFastifyUrl(path: string): string {
  return `/v1${path.replace(/\{path\}$/, '*').replace(/\{(\w+)\}/g, ':$1')}`;
}

describe('GET /__api__', () => {
  it('is a valid OpenAPI 2.0 document of the registered routes and their real methods', async () => {
    // Every optional feature on, so that all their routes are described.
    const optional: Record<string, unknown> = {
      flush_endpoint_enabled: true,
      history_enabled: true,
      multiauth_policies: ['account', 'basicauth'],
    };
    const app = await serverWith(
      Object.fromEntries(Object.entries(optional).filter(([name]) => Object.hasOwn(SETTINGS, name))),
    );
    const response = await app.inject({ url: '/v1/__api__' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeTruthy();

    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations)) {
        expect(
          app.hasRoute({ method: method.toUpperCase() as HTTPMethods, url: toFastifyUrl(path) }),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
    const paths = document.paths as Record<string, Record<string, { parameters: Array<{ name: string }> }>>;
    const record = '/buckets/{bucket_id}/collections/{collection_id}/records/{record_id}';
    expect(Object.keys(paths[record] ?? {}).sort()).toEqual(['delete', 'get', 'patch', 'put']);
    expect(paths[record]?.get?.parameters.map((parameter) => parameter.name)).toEqual([
      'bucket_id',
      'collection_id',
      'record_id',
    ]);
    expect(Object.keys(paths['/buckets/{bucket_id}/collections/{collection_id}/records'] ?? {}).sort()).toEqual([
      'delete',
      'get',
      'head',
      'post',
    ]);
    expect(Object.keys(paths['/__heartbeat__'] ?? {})).toEqual(['get']);
    expect(Object.keys(paths['/__flush__'] ?? {})).toEqual(['post']);
    expect(Object.keys(paths['/batch'] ?? {})).toEqual(['post']);
    // Routes of optional features registered by their own modules appear too.
    expect(Object.keys(paths['/buckets/{bucket_id}/history'] ?? {})).toContain('get');
    expect(Object.keys(paths['/accounts/{account_id}'] ?? {})).toContain('put');
    expect(Object.keys(paths['/buckets/default/{path}'] ?? {})).toContain('get');
    await app.close();
  });
});
