/**
 * `DELETE {record}/attachment`: the record's `attachment` set to null by a PATCH (a missing
 * record is a 404, not a record created without a file); its file goes after commit
 * (record-hooks.ts). 204.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { writeRecord } from './record-write.js';
import { type AttachmentRoutes, recordRefOf } from './routes-context.js';

export async function deleteAttachment(routes: AttachmentRoutes, request: FastifyRequest, reply: FastifyReply) {
  const ref = await recordRefOf(routes, request);
  const head = await writeRecord(routes, request, ref, { data: { attachment: null } }, { create: false });
  for (const name of ['etag', 'last-modified']) {
    const value = head.headers.get(name);
    if (value !== undefined) reply.header(name, value);
  }
  return reply.code(204).send();
}
