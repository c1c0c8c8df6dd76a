/**
 * The throughput bench's child process: one server (bench/throughput.ts forks itself with `--serve`,
 * see child-server.ts).
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildServer } from '../../src/app.js';
import { EMBEDDED_FILE } from '../../src/storage/factory.js';
import { createPgliteStorage, createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import { serveClusterInChild, serveInChild } from '../child-server.js';
import { benchSettings, cpuReply } from '../support.js';
import {
  type ChildConfig,
  ITEMS_PATH,
  ON_A_DATABASE,
  PAGE_SIZE,
  RECORD_IDS,
  recordData,
  WRITES_PATH,
} from './config.js';

/** The ceiling's fixed ETag of `items`. */
const CEILING_ETAG = '"1700000000000"';

/** Answers the five workloads' requests with the shapes Quire answers them with, from memory. */
function ceilingApp(): FastifyInstance {
  const app = Fastify({ logger: false });
  const page = Array.from({ length: PAGE_SIZE }, (_, i) => ({
    ...recordData(i + 1),
    id: RECORD_IDS[i]!,
    last_modified: 1_700_000_000_000 - i,
  }));
  const created = (data: object) => ({ ...data, id: randomUUID(), last_modified: Date.now() });
  app.get<{ Params: { id: string } }>(`${ITEMS_PATH}/:id`, async (request) => ({
    data: { ...page[0], id: request.params.id },
  }));
  app.get(ITEMS_PATH, async (request, reply) => {
    reply.header('etag', CEILING_ETAG);
    if (request.headers['if-none-match'] === CEILING_ETAG) return reply.code(304).send();
    return { data: page };
  });
  app.post<{ Body: { data: object } }>(WRITES_PATH, async (request, reply) =>
    reply.code(201).send({ data: created(request.body.data) }),
  );
  app.post<{ Body: { defaults: { path: string }; requests: Array<{ body: { data: object } }> } }>(
    '/v1/batch',
    async (request) => ({
      responses: request.body.requests.map((sub) => ({
        status: 201,
        path: `/v1${request.body.defaults.path}`,
        body: { data: created(sub.body.data) },
        headers: {},
      })),
    }),
  );
  return app;
}

export async function serve(config: ChildConfig): Promise<void> {
  if (config.server === 'ceiling') return serveInChild(ceilingApp(), null);
  if (ON_A_DATABASE.has(config.server)) {
    // As behind a transaction pooler: unnamed statements, jit set per transaction.
    const storage = await createPostgresStorage({
      url: config.url,
      pooler: 'transaction',
      autoMigrate: true,
      poolSize: 10,
      ...(config.listenUrl ? { listenUrl: config.listenUrl } : {}),
    });
    return serveInChild(await buildServer({ settings: benchSettings(), storage, logger: false }), storage, cpuReply);
  }
  const onPostgresql = config.server === 'postgresql' || config.server === 'observed';
  const settings =
    config.server === 'observed'
      ? benchSettings({ metrics_enabled: true, log_level: 'info', log_format: 'json' })
      : benchSettings();
  const logger = config.server === 'observed' ? { stream: createWriteStream('/dev/null') } : false;
  if (onPostgresql && config.workers > 1) {
    // Every worker migrates the fresh schema: migrate() serialises them with an advisory lock.
    return serveClusterInChild(config.workers, async () => {
      const storage = await createPostgresStorage({
        url: config.url,
        schema: config.schema,
        autoMigrate: true,
        poolSize: 10,
      });
      return { app: await buildServer({ settings, storage, logger }), storage };
    });
  }
  const storage = onPostgresql
    ? await createPostgresStorage({ url: config.url, schema: config.schema, autoMigrate: true, poolSize: 10 })
    : config.server === 'pglite'
      ? await createPgliteStorage({ dataDir: config.dataDir })
      : await createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
  await serveInChild(await buildServer({ settings, storage, logger }), storage, cpuReply);
}
