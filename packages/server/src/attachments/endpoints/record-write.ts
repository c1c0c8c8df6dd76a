/**
 * The record write of an upload or a removal: the engine's PATCH (or PUT) endpoint, called in
 * process as a request for the record's URL would reach it (engine/in-process-call.ts), in this
 * request's unit of work, with its caller and preconditions — so every rule of a record write
 * applies (permissions, `If-Match`, schemas, quotas, history, events).
 */
import type { FastifyRequest } from 'fastify';
import type { ObjectRef } from '../../engine/definition.js';
import { CollectedHead, callEndpoint } from '../../engine/in-process-call.js';
import { FOR_UPDATE, scopeOf } from '../../engine/objects.js';
import { parseJsonBody } from '../../http/content.js';
import type { AttachmentRoutes } from './routes-context.js';

/**
 * Writes `body` on the record: a PATCH, or with `create` a PUT when it does not exist. Its status
 * and headers are returned; a failure throws (and rolls the unit of work back).
 */
export async function writeRecord(
  { app }: AttachmentRoutes,
  request: FastifyRequest,
  ref: ObjectRef,
  body: Record<string, unknown>,
  { create }: { create: boolean },
): Promise<CollectedHead> {
  const { settings } = app.services;
  // Read as a request's body is: its limits and checks apply to what the upload sent.
  const limits = { maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys };
  const checked = parseJsonBody(JSON.stringify(body), limits);
  const path = `/v1${ref.uri.split('/').map(encodeURIComponent).join('/')}`;
  const headers = { ...request.headers, 'content-type': 'application/json' };
  return request.work.run('write', async (session) => {
    // Read locked: nobody creates or deletes it before the write below decides (a creator
    // without write on a missing record must PUT: a PATCH would be refused before its 404).
    const exists = !create || (await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE)) !== null;
    const head = new CollectedHead();
    const call = { method: exists ? 'PATCH' : 'PUT', path, query: '', headers, body: checked };
    await callEndpoint(app, request, call, head);
    return head;
  });
}
