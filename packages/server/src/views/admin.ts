/**
 * The admin console at `/v1/admin/` (protocol-reference §13.7), with the `admin` setting: the
 * static build of Quire Console (`apps/console`, built into this package's `admin-dist/`),
 * capability `admin`, and `/v1/admin` → 307 `/v1/admin/`. The console is a client like any
 * other: it reaches the API with the user's credentials, through the public protocol only.
 *
 * The files are answered from an `onRequest` hook, registered before authentication: no static
 * file needs a user, and the app's own hook would send every path ending with `/` (such as
 * `/v1/admin/`) to the trailing-slash redirect. They are not routes either, so they stay out of
 * the OpenAPI description. Only regular files inside `admin-dist/` are served; a missing build
 * (running from source without `pnpm --filter @quire/console build`) answers a page that says so.
 */
import { createHash } from 'node:crypto';
import { readFileSync, type Stats, statSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO, methodNotAllowed } from '../errors.js';
import { splitUrl } from '../http/url.js';
import { baseUrl } from '../http/base-url.js';

const PREFIX = '/v1/admin';

/**
 * The console needs more than the API's `default-src 'none'`: its own scripts and styles. No
 * inline script and no eval (it interprets the collections' JSON schemas rather than compiling
 * them into functions, apps/console/src/lib/validate.ts), and it talks to this server only: a
 * script injected into it could reach no other origin. Another deployment is managed with the
 * console that deployment serves.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

interface CachedFile {
  mtimeMs: number;
  size: number;
  type: string;
  etag: string;
  body: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

/** `admin-dist/` of the @quire/server package, from src/views/ or from the bundle in dist/. */
function adminBuildDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === '@quire/server') return join(dir, 'admin-dist');
    } catch {
      // not the package root: one level up
    }
    dir = dirname(dir);
  }
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'admin-dist');
}

function consoleVersion(root: string, fallback: string): string {
  try {
    const info = JSON.parse(readFileSync(join(root, 'version.json'), 'utf8')) as { version?: unknown };
    return typeof info.version === 'string' ? info.version : fallback;
  } catch {
    return fallback;
  }
}

const NOT_BUILT_PAGE = (root: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Quire Console is not built</title></head>
<body><h1>Quire Console is not built</h1>
<p>This server has the <code>admin</code> setting on, but the console's files are missing from
<code>${root.replace(/[<>&]/g, '')}</code>.</p>
<p>Build it with <code>pnpm --filter @quire/console build</code> (or <code>pnpm build</code> at the
repository's root), then reload this page. The API itself works as usual.</p></body></html>
`;

export function registerAdmin(app: FastifyInstance, root: string = adminBuildDir()): void {
  const { services } = app;
  if (!services.settings.admin) return;
  services.capabilities.admin = {
    version: consoleVersion(root, services.version),
    description: 'Serves the admin console.',
    url: 'https://github.com/quire-sync/quire/tree/main/apps/console',
  };
  if (!isBuilt(root))
    app.log.warn(
      { dir: root },
      'admin: the console is not built (pnpm --filter @quire/console build); /v1/admin/ says so',
    );
  const files = new ConsoleFiles(root);
  const consoleRequests = new WeakSet<FastifyRequest>();

  app.addHook('onRequest', async (request, reply) => {
    const { path } = splitUrl(request.raw.url);
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return;
    if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed(['GET', 'HEAD']);
    consoleRequests.add(request);
    return serveConsole(files, request, reply);
  });

  // After the API's security headers (registered earlier): the console's own policy.
  app.addHook('onSend', async (request, reply, payload) => {
    if (consoleRequests.has(request)) {
      reply.header('Content-Security-Policy', CONSOLE_CSP);
      reply.header('Referrer-Policy', 'no-referrer');
    }
    return payload;
  });
}

function isBuilt(root: string): boolean {
  try {
    return statSync(join(root, 'index.html')).isFile();
  } catch {
    return false;
  }
}

/** The console's files, kept in memory and read again when they change on disk. */
class ConsoleFiles {
  readonly root: string;
  readonly #cache = new Map<string, CachedFile>();

  constructor(root: string) {
    this.root = root;
  }

  /** The file for a path below `/v1/admin/`, or null. */
  load(relative: string): CachedFile | null {
    const { root } = this;
    const file = resolve(root, relative === '' ? 'index.html' : relative);
    if (!file.startsWith(root + sep) || relative.split('/').some((part) => part.startsWith('.'))) return null;
    // Source maps are never served, even from a build that has them (apps/console/vite.config.ts).
    if (extname(file) === '.map') return null;
    let stat: Stats;
    try {
      stat = statSync(file);
    } catch {
      return null;
    }
    if (!stat.isFile()) return null;
    const hit = this.#cache.get(file);
    if (hit && hit.mtimeMs === stat.mtimeMs && hit.size === stat.size) return hit;
    const body = readFileSync(file);
    const entry: CachedFile = {
      mtimeMs: stat.mtimeMs,
      size: stat.size,
      type: TYPES[extname(file)] ?? 'application/octet-stream',
      etag: `"${createHash('sha1').update(body).digest('base64url')}"`,
      body,
    };
    this.#cache.set(file, entry);
    return entry;
  }
}

function compressed(entry: CachedFile, acceptEncoding: string): { body: Buffer; encoding?: string } {
  if (entry.body.length < 1024 || !/^(text|application\/json|image\/svg)/.test(entry.type)) return { body: entry.body };
  if (/\bbr\b/.test(acceptEncoding)) {
    entry.br ??= brotliCompressSync(entry.body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 9 } });
    return { body: entry.br, encoding: 'br' };
  }
  if (/\bgzip\b/.test(acceptEncoding)) {
    entry.gzip ??= gzipSync(entry.body, { level: 9 });
    return { body: entry.gzip, encoding: 'gzip' };
  }
  return { body: entry.body };
}

function notBuilt(root: string, request: FastifyRequest, reply: FastifyReply) {
  if (!/text\/html/.test(request.headers.accept ?? '')) {
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The admin console is not built: run `pnpm --filter @quire/console build` on the server.',
    });
  }
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .header('Cache-Control', 'no-cache')
    .send(NOT_BUILT_PAGE(root));
}

/** A request below `/v1/admin`: a redirect to `/v1/admin/`, or one of the console's files. */
async function serveConsole(files: ConsoleFiles, request: FastifyRequest, reply: FastifyReply) {
  const { path, query } = splitUrl(request.raw.url);
  if (path === PREFIX) {
    const { settings } = request.server.services;
    return reply
      .code(307)
      .header('Location', `${baseUrl(settings, request)}${PREFIX}/${query ? `?${query}` : ''}`)
      .send();
  }
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice(PREFIX.length + 1));
  } catch {
    relative = '\0';
  }
  const entry = relative.includes('\0') ? null : files.load(relative);
  if (!entry) {
    if (!files.load('index.html')) return notBuilt(files.root, request, reply);
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The resource you are looking for could not be found.',
    });
  }
  // Vite names the files of assets/ after their content: they never change.
  reply.header('Cache-Control', relative.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
  reply.header('ETag', entry.etag);
  reply.header('Vary', 'Accept-Encoding');
  if (request.headers['if-none-match'] === entry.etag) return reply.code(304).send();
  const { body, encoding } = compressed(entry, String(request.headers['accept-encoding'] ?? ''));
  if (encoding) reply.header('Content-Encoding', encoding);
  return reply.code(200).type(entry.type).send(body);
}
