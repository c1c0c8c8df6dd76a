/** Operational endpoints: `__heartbeat__`, `__lbheartbeat__`, `__version__`, `contribute.json` (§11.2). */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO } from '../errors.js';
import { registerMethods } from '../resource/routes.js';

async function withTimeout(check: Promise<boolean>, seconds: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), seconds * 1000);
  });
  try {
    return await Promise.race([check.catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function registerUtilities(app: FastifyInstance): void {
  const { settings, storage, version } = app.services;

  registerMethods(app, '/v1/__heartbeat__', { GET: async (_request: FastifyRequest, reply: FastifyReply) => {
    // Storage and permissions live in the same backend; both are probed for the protocol's shape.
    const [storageOk, permissionOk] = await Promise.all([
      withTimeout(storage.ping(), settings.heartbeat_timeout_seconds),
      withTimeout(storage.getPermissions(['/__heartbeat__']).then(() => true), settings.heartbeat_timeout_seconds),
    ]);
    const status = { storage: storageOk, permission: permissionOk };
    return reply.code(storageOk && permissionOk ? 200 : 503).send(status);
  } });

  registerMethods(app, '/v1/__lbheartbeat__', { GET: async () => ({}) });

  registerMethods(app, '/v1/__version__', { GET: async () => {
    if (!settings.version_json_path) {
      return { name: '@quire/server', version, source: 'https://github.com/quire-sync/quire', commit: process.env.QUIRE_COMMIT ?? 'unknown' };
    }
    try {
      return JSON.parse(await readFile(settings.version_json_path, 'utf8')) as unknown;
    } catch {
      throw new ApiError(500, ERRNO.UNDEFINED, { message: `Cannot read ${settings.version_json_path}` });
    }
  } });

  registerMethods(app, '/v1/contribute.json', { GET: async () => ({
    name: 'Quire',
    description: 'An offline-first JSON record storage and synchronisation service, compatible with the Kinto HTTP API.',
    repository: { url: 'https://github.com/quire-sync/quire', license: 'Apache-2.0', tests: 'https://github.com/quire-sync/quire/actions' },
    participate: { home: 'https://github.com/quire-sync/quire', docs: settings.project_docs },
    bugs: { list: `${settings.project_docs}/issues`, report: `${settings.project_docs}/issues/new` },
    keywords: ['sync', 'json', 'offline-first', 'kinto', 'typescript'],
  }) });
}
