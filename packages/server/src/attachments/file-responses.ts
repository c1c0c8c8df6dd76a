/**
 * Serving stored files: the local backend's (Range, conditional requests, their type) and the
 * policy every file response carries (a sandboxed document of no origin).
 */
import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO } from '../errors.js';
import type { LocalFileBackend } from './local-backend.js';
import { dispositionOf, servedTypeOf } from './media-types.js';
import { backendError } from './upload.js';

/** The API's policy, and `sandbox`: a file opened in a tab is a document of no origin. */
const FILE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox";
const fileResponses = new WeakSet<FastifyRequest>();

/** Files get FILE_CSP, set after the API's security headers (http/headers.ts, registered earlier). */
export function registerFileResponsePolicy(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (fileResponses.has(request)) reply.header('Content-Security-Policy', FILE_CSP);
    return payload;
  });
}

/** Sends a stored local file with Range, conditional requests (ETag, Last-Modified) and its type. */
export async function sendLocalFile(
  request: FastifyRequest,
  reply: FastifyReply,
  backend: LocalFileBackend,
  location: string,
  extraHeaders: Record<string, string> = {},
  immutable = false,
) {
  let path: string;
  try {
    path = backend.pathOf(location);
  } catch {
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The resource you are looking for could not be found.',
    });
  }
  const sent = await send(request.raw, path.slice(backend.root.length), {
    root: backend.root,
    dotfiles: 'deny',
    index: false,
    acceptRanges: true,
    etag: true,
    lastModified: true,
    cacheControl: immutable,
    ...(immutable ? { immutable: true, maxAge: '365d' } : {}),
  });
  if (sent.type !== 'file') {
    const status = (sent.metadata as { error?: { status?: number } }).error?.status;
    if (status === 416 || status === 412) {
      throw new ApiError(status, ERRNO.INVALID_PARAMETERS, {
        error: status === 416 ? 'Range Not Satisfiable' : 'Precondition Failed',
        message: status === 416 ? 'The range is outside the file.' : 'The file does not match the precondition.',
        headers: sent.headers,
      });
    }
    if (sent.type === 'error' && status !== 404 && status !== 403)
      throw backendError((sent.metadata as { error: Error }).error);
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The resource you are looking for could not be found.',
    });
  }
  reply.code(sent.statusCode);
  for (const [name, value] of Object.entries(sent.headers)) reply.header(name, value);
  const type = servedTypeOf(location);
  reply.header('Content-Type', type);
  // Opened in a tab, a file runs nothing: a sandboxed document with no script, and anything
  // but an image, audio, video, PDF or plain text is downloaded rather than shown.
  fileResponses.add(request);
  reply.header('Content-Disposition', dispositionOf(type, location.split('/').at(-1) ?? 'file'));
  for (const [name, value] of Object.entries(extraHeaders)) reply.header(name, value);
  return reply.send(sent.stream);
}
