/**
 * Nothing a user stores runs as script in an app (issue 37, item 1), in Debian's Chromium: files
 * with scripts — SVG, HTML, XHTML, one of them named `receipt.png` and typed `image/svg+xml` —
 * uploaded through the API to a Quire server whose files are on local disk, then on S3 (s3rver):
 *
 * - the server's link: each file opened in a tab, from `base_url` and from `GET {record}/attachment`
 *   (streamed, or the redirect to the S3 object), runs nothing;
 * - the client's link: the Blob `client.remote.getAttachment` and an offline collection's
 *   `getAttachment` hand out (downloaded, or queued on the device) is typed
 *   `application/octet-stream`, and its `blob:` URL opened in a tab of the app's origin — a link
 *   with `target="_blank"`, as the demo had — runs nothing.
 *
 * A listener proves it: each payload logs to the console and fetches the listener's URL; both are
 * watched in every page of the context. Control cases show the listener hears a script that runs:
 * the same SVG served as `image/svg+xml` without a policy, and a Blob typed `image/svg+xml`.
 * Skips with a printed reason when Chromium is missing, unless QUIRE_TEST_REQUIRE_BROWSER=1 (CI).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type S3Server, startS3Server } from '../../server/test/helpers/s3.js';
import { browserBundle } from '../build/browser-bundle.js';
import { createCollection, raw, startServer, type TestServer, uniqueName } from './support/server.js';
import { chromiumAvailable, launchChromium } from './support/chromium.js';

const available = chromiumAvailable('attachments XSS test');
const packageRoot = fileURLToPath(new URL('..', import.meta.url));

const PAGE = `<!doctype html><meta charset="utf-8"><title>an app</title>
<script type="module">
  import { createClient, attachments } from './quire-client.js';
  const auth = { type: 'basic', username: 'alice', password: 'secret' };
  const opened = (blob) => ({ type: blob.type, url: URL.createObjectURL(blob) });
  window.remoteBlob = async (remote, bucket, id) => {
    const client = createClient({ remote, auth });
    try { return opened(await client.remote.getAttachment(bucket, 'files', id)); } finally { await client.close(); }
  };
  window.offlineBlob = async (remote, bucket, text, filename, mimetype) => {
    const client = createClient({ remote, auth, dbPrefix: 'offline-' + bucket });
    const tasks = client.bucket(bucket).collection('files', { attachments: attachments({ policy: 'lazy' }) });
    const record = await tasks.create({ title: filename });
    await tasks.attach(record.id, new Blob([text], { type: mimetype }), { filename, mimetype });
    return opened(await tasks.getAttachment(record.id));
  };
  window.rawBlob = (text, type) => opened(new Blob([text], { type }));
  window.openInTab = (url) => {
    const link = document.createElement('a');
    link.href = url;
    link.target = '_blank';
    link.textContent = 'open';
    document.body.append(link);
    link.click();
  };
  window.ready = true;
</script>`;

/** Files with scripts: each pings `listener` with its name when a script of it runs. */
function payloads(listener: string) {
  const ping = (name: string) => `console.log('QUIRE-XSS ${name}');fetch('${listener}/ran/${name}').catch(()=>{})`;
  const svg = (name: string) =>
    `<svg xmlns="http://www.w3.org/2000/svg" onload="${ping(`${name}-onload`)}"><script>${ping(name)}</script></svg>`;
  return [
    { filename: 'receipt.png', type: 'image/svg+xml', content: svg('receipt') },
    { filename: 'drawing.svg', type: 'image/svg+xml', content: svg('drawing') },
    {
      filename: 'page.html',
      type: 'text/html',
      content: `<!doctype html><img src=x onerror="${ping('html-onerror')}"><script>${ping('html')}</script>`,
    },
    {
      filename: 'doc.xhtml',
      type: 'application/xhtml+xml',
      content: `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>${ping('xhtml')}</script></body></html>`,
    },
  ];
}

describe.skipIf(!available)('stored files run no script in Chromium', { timeout: 120_000 }, () => {
  let browser: Browser;
  let outDir: string;
  let app: Server;
  let appOrigin: string;
  let listener: Server;
  let listenerUrl: string;
  /** What the payloads reported: listener hits and console lines, from every page. */
  const heard: string[] = [];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'quire-client-xss-'));
    const entry = join(outDir, 'entry.ts');
    writeFileSync(
      entry,
      `export * from ${JSON.stringify(join(packageRoot, 'src/index.ts'))};\n` +
        `export { attachments } from ${JSON.stringify(join(packageRoot, 'src/attachments/index.ts'))};\n`,
    );
    const { build } = await import('tsup');
    await build({
      ...browserBundle,
      entry: { 'quire-client': entry },
      outDir,
      config: false,
      silent: true,
      dts: false,
    });
    // The bundle and the chunks it loads (on first use, or shared with them).
    const scripts = new Map(
      readdirSync(outDir)
        .filter((name) => name.endsWith('.js'))
        .map((name) => [`/${name}`, readFileSync(join(outDir, name))]),
    );
    app = createServer((request, response) => {
      const script = scripts.get(request.url ?? '');
      if (script) response.writeHead(200, { 'Content-Type': 'text/javascript' }).end(script);
      else response.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appOrigin = `http://127.0.0.1:${(app.address() as { port: number }).port}`;
    listener = createServer((request, response) => {
      if (request.url?.startsWith('/ran/')) heard.push(`hit ${request.url.slice(5)}`);
      if (request.url === '/control.svg') {
        const control = payloads(listenerUrl)[1]!.content.replaceAll('drawing', 'control');
        return void response.writeHead(200, { 'Content-Type': 'image/svg+xml' }).end(control);
      }
      response.writeHead(204, { 'Access-Control-Allow-Origin': '*' }).end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerUrl = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => app?.close(resolve));
    await new Promise((resolve) => listener?.close(resolve));
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  /** A context whose every page (popups too) reports its console lines to `heard`. */
  async function watchedContext(): Promise<BrowserContext> {
    const context = await browser.newContext({ acceptDownloads: true });
    const watch = (page: Page) =>
      page.on('console', (line) => line.text().startsWith('QUIRE-XSS') && heard.push(`console ${line.text()}`));
    context.on('page', watch);
    return context;
  }

  /** Opens `url` in a new tab by a link of the app's page, waits for it to load or download, then a moment. */
  async function openFromApp(page: Page, url: string): Promise<void> {
    const opened = page.context().waitForEvent('page', { timeout: 10_000 });
    await page.evaluate((target) => (window as unknown as { openInTab(url: string): void }).openInTab(target), url);
    const tab = await opened;
    await Promise.race([
      tab.waitForLoadState('load', { timeout: 10_000 }).catch(() => {}),
      tab.waitForEvent('download', { timeout: 10_000 }).catch(() => {}),
      tab.waitForEvent('close', { timeout: 10_000 }).catch(() => {}),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }

  /** Navigates a tab of its own to `url` (as a user pasting the URL), then a moment. */
  async function visit(context: BrowserContext, url: string): Promise<void> {
    const tab = await context.newPage();
    await tab.goto(url, { timeout: 10_000 }).catch(() => {}); // a download aborts the navigation
    await new Promise((resolve) => setTimeout(resolve, 500));
    await tab.close();
  }

  async function appPage(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    await page.goto(appOrigin);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    return page;
  }

  it('control: the listener hears a script that runs (an SVG served as such, a Blob typed image/svg+xml)', async () => {
    heard.length = 0;
    const context = await watchedContext();
    try {
      await visit(context, `${listenerUrl}/control.svg`);
      const page = await appPage(context);
      const { content } = payloads(listenerUrl)[0]!;
      const blob = (await page.evaluate(
        ([text]) => (window as unknown as { rawBlob(t: string, y: string): unknown }).rawBlob(text!, 'image/svg+xml'),
        [content.replaceAll('receipt', 'blob-control')],
      )) as { url: string };
      await openFromApp(page, blob.url);
      await expect.poll(() => heard.join(' '), { timeout: 5_000 }).toContain('hit control');
      await expect.poll(() => heard.join(' '), { timeout: 5_000 }).toContain('hit blob-control');
      expect(heard.join(' ')).toContain('console QUIRE-XSS');
    } finally {
      await context.close();
    }
  });

  for (const fileBackend of ['local', 's3'] as const) {
    describe(`${fileBackend} files`, () => {
      let s3: S3Server | null = null;
      let files: string;
      let server: TestServer;
      let bucket: string;
      let baseUrl: string;
      const stored = new Map<string, { id: string; location: string; mimetype: string }>();

      beforeAll(async () => {
        files = mkdtempSync(join(tmpdir(), 'quire-xss-files-'));
        if (fileBackend === 's3') s3 = await startS3Server('quire-xss', { cors: true });
        server = await startServer({
          attachment_enabled: true,
          attachment_extensions: 'any',
          attachment_sweep_interval_seconds: 0,
          ...(s3 ? s3.settings : { attachment_base_path: files }),
        });
        bucket = uniqueName('xss');
        await createCollection(server.url, bucket, 'files', 'alice', { read: ['system.Everyone'] });
        const info = (await raw(server.url, 'GET', '/')).body as {
          capabilities: { attachments: { base_url: string } };
        };
        baseUrl = info.capabilities.attachments.base_url;
        for (const [index, file] of payloads(listenerUrl).entries()) {
          const form = new FormData();
          form.append('attachment', new Blob([file.content], { type: file.type }), file.filename);
          const id = `f${index}`;
          const response = await fetch(`${server.url}/buckets/${bucket}/collections/files/records/${id}/attachment`, {
            method: 'POST',
            body: form,
            headers: { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` },
          });
          expect(response.status, await response.clone().text()).toBe(201);
          const attachment = (await response.json()) as { location: string; mimetype: string };
          stored.set(file.filename, { id, ...attachment });
        }
      }, 60_000);

      afterAll(async () => {
        await server?.close();
        await s3?.close();
        rmSync(files, { recursive: true, force: true });
      });

      it('the server: no type claims script for an impostor, and no file opened in a tab runs one', async () => {
        expect(stored.get('receipt.png')?.mimetype).toBe('image/png');
        heard.length = 0;
        const context = await watchedContext();
        try {
          const page = await appPage(context);
          for (const [filename, { id, location }] of stored) {
            const fileUrl = new URL(location, baseUrl).href;
            const recordUrl = `${server.url}/buckets/${bucket}/collections/files/records/${id}/attachment`;
            for (const url of [fileUrl, recordUrl]) {
              await visit(context, url);
              await openFromApp(page, url);
              expect(heard, `${filename} at ${url}`).toEqual([]);
            }
          }
        } finally {
          await context.close();
        }
      });

      it('the client: Blobs of active files are octet-stream, and opened from the app they run nothing', async () => {
        heard.length = 0;
        const context = await watchedContext();
        try {
          const page = await appPage(context);
          for (const [filename, { id, mimetype }] of stored) {
            const blob = (await page.evaluate(
              ([remote, b, record]) =>
                (window as unknown as { remoteBlob(...args: string[]): unknown }).remoteBlob(remote!, b!, record!),
              [server.url, bucket, id],
            )) as { type: string; url: string };
            expect(blob.type, `${filename} (recorded ${mimetype})`).toBe(
              mimetype === 'image/png' ? 'image/png' : 'application/octet-stream',
            );
            await openFromApp(page, blob.url);
            expect(heard, filename).toEqual([]);
          }
          // Offline: a file attached on the device, typed image/svg+xml by the app, before any sync.
          for (const { filename, type, content } of payloads(listenerUrl)) {
            const blob = (await page.evaluate(
              ([remote, b, text, name, mime]) =>
                (window as unknown as { offlineBlob(...args: string[]): unknown }).offlineBlob(
                  remote!,
                  b!,
                  text!,
                  name!,
                  mime!,
                ),
              [server.url, bucket, content, filename, type],
            )) as { type: string; url: string };
            expect(blob.type, filename).toBe('application/octet-stream');
            await openFromApp(page, blob.url);
            expect(heard, `${filename} offline`).toEqual([]);
          }
        } finally {
          await context.close();
        }
      });
    });
  }
});
