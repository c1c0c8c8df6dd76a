/**
 * Operational endpoints: `__heartbeat__`, `__lbheartbeat__`, `__version__`, `contribute.json`,
 * and `__flush__` when enabled (§11.2, §13.5).
 */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { VERSION_INFO } from '../version.js';
import { registerMethods } from '../engine/routes.js';

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
  const { settings, storage, version, heartbeats } = app.services;

  registerMethods(app, '/v1/__heartbeat__', {
    GET: async (_request: FastifyRequest, reply: FastifyReply) => {
      // Storage and permissions live in the same backend; both are probed for the protocol's shape.
      // Features add theirs (the attachments' file backend), as Kinto's plugins do.
      const checks: Record<string, () => Promise<boolean>> = {
        storage: () => storage.ping(),
        permission: () => storage.read((session) => session.permissions.get(['/__heartbeat__'])).then(() => true),
        ...heartbeats,
      };
      const results = await Promise.all(
        Object.values(checks).map((check) => withTimeout(check(), settings.heartbeat_timeout_seconds)),
      );
      const status = Object.fromEntries(Object.keys(checks).map((name, index) => [name, results[index] as boolean]));
      return reply.code(results.every(Boolean) ? 200 : 503).send(status);
    },
  });

  registerMethods(app, '/v1/__lbheartbeat__', { GET: async () => ({}) });

  registerMethods(app, '/v1/__version__', {
    GET: async () => {
      if (!settings.version_json_path) {
        // Kinto's version.json shape: {name, version, source, commit}.
        return { ...VERSION_INFO, version };
      }
      try {
        return JSON.parse(await readFile(settings.version_json_path, 'utf8')) as unknown;
      } catch {
        throw new ApiError(500, ERRNO.UNDEFINED, { message: `Cannot read ${settings.version_json_path}` });
      }
    },
  });

  if (settings.flush_endpoint_enabled) registerFlush(app);

  registerMethods(app, '/v1/contribute.json', {
    GET: async () => ({
      name: 'Quire',
      description:
        'An offline-first JSON record storage and synchronisation service, compatible with the Kinto HTTP API.',
      repository: {
        url: 'https://github.com/quire-sync/quire',
        license: 'Apache-2.0',
        tests: 'https://github.com/quire-sync/quire/actions',
      },
      participate: { home: 'https://github.com/quire-sync/quire', docs: settings.project_docs },
      bugs: { list: `${settings.project_docs}/issues`, report: `${settings.project_docs}/issues/new` },
      keywords: ['sync', 'json', 'offline-first', 'kinto', 'typescript'],
    }),
  });
}

/**
 * `POST /__flush__` (§13.5): deletes everything in storage — objects, tombstones, permissions,
 * group memberships, pagination nonces, timestamps — and answers 202 `{}` as Kinto does. Like
 * Kinto it needs no permission: it exists for test servers only (`flush_endpoint_enabled`).
 */
function registerFlush(app: FastifyInstance): void {
  const { storage, capabilities } = app.services;
  capabilities.flush_endpoint = {
    description: 'The __flush__ endpoint can be used to remove all data from all backends.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/flush.html',
  };
  registerMethods(app, '/v1/__flush__', {
    POST: async (request: FastifyRequest, reply: FastifyReply) => {
      // Inside a batch the flush would wait for the batch's own transaction to end.
      if (request.work.batch)
        throw invalidParameter('body', 'requests', 'The __flush__ endpoint cannot be called within a batch.');
      await storage.flush();
      return reply.code(202).send({});
    },
  });
}
