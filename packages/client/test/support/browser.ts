/**
 * Debian's Chromium (playwright-core) serving the built browser bundle from a small static
 * server, for the tests that run the SDK in a real browser (Chromium as `chromium.ts` launches it).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserBundle } from '../../build/browser-bundle.js';
import { launchChromium } from './chromium.js';

export { chromiumAvailable } from './chromium.js';

/** The page every browser test opens: the SDK as `window.Quire`, `window.ready` once loaded. */
export const SDK_PAGE = `<!doctype html><meta charset="utf-8"><title>quire e2e</title>
<script type="module">
  import * as Quire from './quire-client.js';
  window.Quire = Quire;
  window.ready = true;
</script>`;

export interface BrowserHarness {
  browser: Browser;
  /** Where the page and the bundle are served. */
  origin: string;
  /** A page of `context` (default: a fresh one, i.e. an empty IndexedDB) with the SDK loaded. */
  openPage(context?: BrowserContext): Promise<{ context: BrowserContext; page: Page; errors: string[] }>;
  close(): Promise<void>;
}

/** Builds the bundle as shipped, serves it with `pageHtml` at `/`, and launches Chromium. */
export async function launchBrowser(pageHtml: string = SDK_PAGE): Promise<BrowserHarness> {
  const outDir = mkdtempSync(join(tmpdir(), 'quire-client-e2e-'));
  const { build } = await import('tsup');
  await build({
    ...browserBundle,
    entry: { 'quire-client': fileURLToPath(new URL('../../src/index.ts', import.meta.url)) },
    outDir,
    config: false,
    silent: true,
    dts: false,
  });
  const files = new Map<string, { type: string; body: string | Buffer }>([
    ['/', { type: 'text/html', body: pageHtml }],
  ]);
  // The entry and the chunks it loads on first use.
  for (const name of readdirSync(outDir).filter((file) => file.endsWith('.js')))
    files.set(`/${name}`, { type: 'text/javascript', body: readFileSync(join(outDir, name)) });
  const staticServer: Server = createServer((request, response) => {
    const file = files.get(request.url ?? '/');
    if (!file) return void response.writeHead(404).end();
    response.writeHead(200, { 'Content-Type': file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => staticServer.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(staticServer.address() as { port: number }).port}`;
  const browser = await launchChromium();
  return {
    browser,
    origin,
    async openPage(given) {
      const context = given ?? (await browser.newContext());
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(origin);
      await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
      return { context, page, errors };
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => staticServer.close(resolve));
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}
