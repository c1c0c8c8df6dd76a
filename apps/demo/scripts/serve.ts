/**
 * The demo's launcher (the README's first command): the Quire server on the embedded store, with
 * open sign-up through the accounts plugin (`quire.settings.json`), and the built demo app served
 * by a second, static-only HTTP server. The app finds the API through `/config.json`.
 *
 * Two servers rather than one: the API server stays exactly what production runs (no static files
 * behind its auth and JSON hooks); the app reaches it with CORS like any third-party client would.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import {
  buildServer,
  createStorageFromSettings,
  loadSettings,
  resolveSecrets,
  stopOnSignals,
  type Settings,
} from '@quire/server';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEMO_SETTINGS_FILE = resolve(appRoot, 'quire.settings.json');

export interface DemoOptions {
  /** Server settings (default: `QUIRE_*` variables, then `QUIRE_CONFIG` or `quire.settings.json`). */
  settings?: Settings;
  /** Directory of the built app (default `apps/demo/dist`). */
  appDir?: string;
  appHost?: string;
  /** Port of the app (default `QUIRE_DEMO_PORT` or 8080; 0 picks a free one). */
  appPort?: number;
}

export interface RunningDemo {
  apiUrl: string;
  appUrl: string;
  /** The API server's logger (request lines, shutdown). */
  log: FastifyBaseLogger;
  close(): Promise<void>;
}

function urlOf(app: FastifyInstance, host: string, suffix: string): string {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return `http://${host}:${port}${suffix}`;
}

/**
 * The app's security headers. Its scripts and styles are its own files (the Vite build inlines
 * none); no inline script, no eval. It talks to itself (`/config.json`, the service worker's
 * precache) and to the API only. Images and media may be `blob:` URLs of files on tasks, shown
 * through `<img>`: an image there runs no script. No plugin, no frame, no `<base>`.
 */
export function appPolicy(apiUrl: string): Record<string, string> {
  const api = new URL(apiUrl).origin;
  return {
    'Content-Security-Policy': [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' blob: data:",
      "media-src 'self' blob:",
      "font-src 'self'",
      `connect-src 'self' ${api}`,
      "worker-src 'self'",
      "manifest-src 'self'",
      "object-src 'none'",
      "frame-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ].join('; '),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
}

export async function startDemo(options: DemoOptions = {}): Promise<RunningDemo> {
  const settings =
    options.settings ?? resolveSecrets(loadSettings({ configFile: process.env.QUIRE_CONFIG ?? DEMO_SETTINGS_FILE }));
  const appDir = options.appDir ?? resolve(appRoot, 'dist');
  if (!existsSync(resolve(appDir, 'index.html'))) {
    throw new Error(
      `The demo app is not built (${appDir}/index.html is missing): run \`pnpm --filter @quire/demo build\`.`,
    );
  }

  const storage = await createStorageFromSettings(settings);
  const api = await buildServer({ settings, storage });
  await api.listen({ host: settings.host, port: settings.port });
  const apiUrl = urlOf(api, settings.host, '/v1');

  const appHost = options.appHost ?? settings.host;
  const web = Fastify({ logger: false });
  const policy = appPolicy(apiUrl);
  web.addHook('onSend', async (_request, reply, payload) => {
    for (const [name, value] of Object.entries(policy)) reply.header(name, value);
    return payload;
  });
  web.get('/config.json', async () => ({ remote: apiUrl }));
  await web.register(fastifyStatic, { root: appDir, index: 'index.html' });
  // A client-side route reloaded in the browser still gets the app.
  web.setNotFoundHandler((_request, reply) => reply.sendFile('index.html'));
  await web.listen({ host: appHost, port: options.appPort ?? Number(process.env.QUIRE_DEMO_PORT ?? 8080) });

  return {
    apiUrl,
    appUrl: urlOf(web, appHost, '/'),
    log: api.log,
    async close() {
      await web.close();
      await api.close();
      await storage.close();
    },
  };
}

async function main(): Promise<void> {
  // `pnpm start` runs this from apps/demo: keep the data where the command was typed.
  process.env.QUIRE_DATA_DIR ??= resolve(process.env.INIT_CWD ?? process.cwd(), '.quire-data');
  const demo = await startDemo();
  const settings = loadSettings({ configFile: process.env.QUIRE_CONFIG ?? DEMO_SETTINGS_FILE });
  const where = settings.storage_url ? 'PostgreSQL' : `embedded store in ${resolve(settings.data_dir)}`;
  console.log(`Quire API:  ${demo.apiUrl}/ (${where})`);
  console.log(`Demo app:   ${demo.appUrl}  <- open it in two browser windows (one private) to be two users`);
  if (settings.admin)
    console.log(
      `Console:    ${demo.apiUrl}/admin/  <- Quire Console: browse and manage the data (sign in with an account)`,
    );
  // As `quire start` does: say so, let in-flight requests finish, give up after shutdown_timeout_seconds.
  stopOnSignals(demo.log, settings.shutdown_timeout_seconds, () => demo.close());
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
