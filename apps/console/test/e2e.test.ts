/**
 * Quire Console end to end, in Debian's Chromium driven by playwright-core: the production
 * build, served by a real Quire server at /v1/admin/ (the `admin` setting), on the embedded
 * store with accounts, history and schema validation. The steps run in order and build on each
 * other: sign-in, a collection of 100,000 records (time to first page printed), editing with a
 * schema, a conflict, permissions and group members, history and its diff, bulk import, a
 * record's file (attachments on the local disk), accounts.
 * Screenshots of each screen go to test-artifacts/screenshots/.
 *
 * Skips with a printed reason when Chromium is missing, unless QUIRE_TEST_REQUIRE_BROWSER=1
 * (CI), where that is a failure.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildServer, createStorageFromSettings, loadSettings, resolveSecrets, type Storage } from '@quire/server';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OUT_DIR } from '../vite.config.js';
import { chromiumAvailable, launchChromium } from '../../../packages/client/test/support/chromium.js';

const available = chromiumAvailable('console e2e test');

const appRoot = fileURLToPath(new URL('..', import.meta.url));
const SCREENSHOTS = join(appRoot, 'test-artifacts', 'screenshots');
const WAIT = 20_000;
const PASSWORD = 'correct-horse-42';
const BIG = 100_000;
const BIG_BUCKET = 'catalog';
const BIG_COLLECTION = 'items';
const BUCKET = 'team';

const TASK_SCHEMA = {
  type: 'object',
  title: 'Task',
  properties: {
    title: { type: 'string', title: 'Title', minLength: 1, maxLength: 80 },
    priority: { type: 'integer', title: 'Priority', minimum: 1, maximum: 5, description: '1 (low) to 5 (urgent)' },
    status: { type: 'string', title: 'Status', enum: ['todo', 'doing', 'done'] },
    due: { type: 'string', title: 'Due date', format: 'date' },
    done: { type: 'boolean', title: 'Done' },
    tags: { type: 'array', title: 'Tags', items: { type: 'string' } },
  },
  required: ['title'],
};

// ---- Waiting on the UI (never fixed sleeps) -----------------------------------------------------

/** The text as shown: innerText follows the layout (line breaks between blocks and cells). */
// biome-ignore lint/performance/useDomNodeTextContent: the rendered text, as the user reads it, is what is checked
const shownText = (locator: Locator) => locator.innerText();
const visible = (locator: Locator) => locator.waitFor({ state: 'visible', timeout: WAIT });
const hidden = (locator: Locator) => locator.waitFor({ state: 'hidden', timeout: WAIT });
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: WAIT, interval: 100 });

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

/** The console's build is current when no source file is newer than its index.html. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

async function buildConsoleIfStale(): Promise<void> {
  const index = join(OUT_DIR, 'index.html');
  const sources = Math.max(
    newestSource(join(appRoot, 'src')),
    // The console compiles @quire/client from its source: a change there is a change of the build.
    newestSource(join(appRoot, '../../packages/client/src')),
    newestSource(join(appRoot, 'public')),
    ...['index.html', 'vite.config.ts', 'package.json'].map((file) => statSync(join(appRoot, file)).mtimeMs),
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  const started = performance.now();
  const { build } = await import('vite');
  // A production build, as `vite build` makes it (vitest sets NODE_ENV=test, which Vite would keep).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ root: appRoot, configFile: join(appRoot, 'vite.config.ts'), mode: 'production', logLevel: 'warn' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  console.log(`console e2e: built the console into ${OUT_DIR} in ${Math.round(performance.now() - started)} ms`);
}

// ---- Direct API calls (set-up and server-side checks) --------------------------------------------

let apiUrl = '';

/** What these checks read of the server's answers (`api<Stored>(…)`); not checked on arrival. */
interface Stored {
  data: Record<string, unknown>;
  permissions: Record<string, string[]>;
}
interface Root {
  capabilities: Record<string, unknown>;
}

async function api<Body = unknown>(
  method: string,
  path: string,
  user: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Body }> {
  const all: Record<string, string> = { Accept: 'application/json', ...headers };
  if (user) all.Authorization = `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`;
  if (body !== undefined) all['Content-Type'] ??= 'application/json';
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: all,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
}

describe.skipIf(!available)('Quire Console in Chromium', () => {
  let storage: Storage;
  let server: Awaited<ReturnType<typeof buildServer>>;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let dataDir: string;
  let baseUrl = '';
  const errors: string[] = [];
  const pages: Page[] = [];

  function watch(target: Page): void {
    pages.push(target);
    target.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
    target.on('console', (message) => {
      // The browser logs every 4xx answer; the console expects some (conflicts, counts).
      if (message.type() === 'error' && !/Failed to load resource/.test(message.text()))
        errors.push(`console: ${message.text()}`);
    });
  }

  async function signIn(target: Page, username: string, shot?: string): Promise<void> {
    await target.goto(`${baseUrl}/v1/admin`);
    await visible(target.getByText(/● quire/));
    await target.getByLabel('Username').fill(username);
    await target.getByLabel('Password').fill(PASSWORD);
    if (shot) await screenshot(target, shot);
    await target.getByRole('button', { name: 'Sign in with your account' }).click();
    await visible(target.getByText('Signed in as'));
  }

  /** Navigates inside the console (hash routes) and waits for the page's heading. */
  async function go(hash: string, heading: string | RegExp): Promise<void> {
    await page.evaluate((to) => {
      location.hash = to;
    }, hash);
    await visible(page.getByRole('heading', { level: 1, name: heading }));
  }

  beforeAll(async () => {
    rmSync(SCREENSHOTS, { recursive: true, force: true });
    mkdirSync(SCREENSHOTS, { recursive: true });
    await buildConsoleIfStale();
    dataDir = mkdtempSync(join(tmpdir(), 'quire-console-data-'));
    const settings = resolveSecrets(
      loadSettings({
        configFile: null,
        env: { QUIRE_DATA_DIR: dataDir },
        overrides: {
          port: 0,
          log_level: 'silent',
          admin: true,
          multiauth_policies: ['account', 'basicauth'],
          account_create_principals: ['system.Everyone'],
          account_write_principals: ['account:admin'],
          history_enabled: true,
          experimental_collection_schema_validation: true,
          // Files on records, on the local disk below the data directory.
          attachment_enabled: true,
        },
      }),
    );
    storage = await createStorageFromSettings(settings);
    server = await buildServer({ settings, storage });
    await server.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
    apiUrl = `${baseUrl}/v1`;
    for (const user of ['admin', 'alice'])
      expect((await api('PUT', `/accounts/${user}`, null, { data: { password: PASSWORD } })).status).toBe(201);

    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    watch(page);
  }, 180_000);

  afterEach(async (test) => {
    if (test.task.result?.state !== 'fail') return;
    const name = test.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
    await Promise.all(pages.map((target, i) => screenshot(target, `failed-${name}-${i}`).catch(() => {})));
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await storage?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the console at /v1/admin/ and signs in with an account', async () => {
    const redirect = await fetch(`${apiUrl}/admin`, { redirect: 'manual' });
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get('location')).toBe(`${apiUrl}/admin/`);
    const hello = await api<Root>('GET', '/', null);
    expect(hello.body.capabilities.admin).toMatchObject({ description: 'Serves the admin console.' });

    await page.goto(`${baseUrl}/v1/admin`);
    expect(page.url()).toBe(`${apiUrl}/admin/`);
    await visible(page.getByText(/● quire/));
    expect(await page.getByLabel('Server').inputValue()).toBe(apiUrl);
    // A wrong password is said plainly.
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in with your account' }).click();
    await poll(() => shownText(page.getByRole('alert'))).toBe('Wrong username or password.');
    await page.getByLabel('Password').fill(PASSWORD);
    await screenshot(page, '01-sign-in');
    await page.getByRole('button', { name: 'Sign in with your account' }).click();

    await visible(page.getByRole('heading', { name: 'Overview', level: 1 }));
    await visible(page.getByText('account:admin', { exact: true }));
    const principals = page.getByRole('list', { name: 'Your principals' });
    await visible(principals.getByText('Signed-in users'));
    await visible(principals.getByText('Everyone'));
    await visible(page.getByText('Admin console').first());
    await screenshot(page, '02-overview');
  });

  it('opens a collection of 100,000 records at once and scrolls through it', async () => {
    expect((await api('PUT', `/buckets/${BIG_BUCKET}`, 'admin', {})).status).toBe(201);
    expect(
      (
        await api('PUT', `/buckets/${BIG_BUCKET}/collections/${BIG_COLLECTION}`, 'admin', {
          data: { displayFields: ['title', 'category', 'price', 'stock'] },
        })
      ).status,
    ).toBe(201);
    // Loaded through the storage API, in chunks of 10,000 (a /batch loop would take minutes).
    const seedStarted = performance.now();
    const categories = ['books', 'music', 'garden', 'toys', 'kitchen', 'sports', 'office', 'tools', 'games', 'travel'];
    const scope = { resourceName: 'record', parentId: `/buckets/${BIG_BUCKET}/collections/${BIG_COLLECTION}` };
    for (let start = 0; start < BIG; start += 10_000) {
      const objects = Array.from({ length: 10_000 }, (_, i) => {
        const n = start + i;
        return {
          id: `item-${String(n).padStart(6, '0')}`,
          data: {
            title: `Item ${n}`,
            n,
            category: categories[n % 10],
            price: Math.round(((n * 7919) % 10000) / 10) / 10,
            stock: (n * 31) % 500,
          },
        };
      });
      await storage.transaction((session) => session.objects.insertMany(scope, objects));
    }
    const seedMs = Math.round(performance.now() - seedStarted);

    const opened = performance.now();
    await page.evaluate((to) => {
      location.hash = to;
    }, `#/buckets/${BIG_BUCKET}/collections/${BIG_COLLECTION}`);
    const table = page.getByRole('table', { name: `Records of ${BIG_COLLECTION}` });
    // Newest first: the last record written is the first row.
    await visible(table.getByRole('link', { name: `item-${String(BIG - 1).padStart(6, '0')}`, exact: true }));
    const firstRowMs = Math.round(performance.now() - opened);
    await poll(() => shownText(page.locator('.list-status'))).toMatch(/^100,000 records/);
    // The console's own measure, from the start of the list to its first page: shown in the toolbar.
    const firstPageMs = Number(/first page in (\d+) ms/.exec(await shownText(page.locator('.list-status')))?.[1]);
    await screenshot(page, '03-collection-100k');

    // Scrolling: frames while scrolling through loaded rows, then a jump to the middle of the list.
    const frames = await page.evaluate(async () => {
      const list = document.querySelector<HTMLElement>('.records-table')!;
      const durations: number[] = [];
      let last = performance.now();
      for (let i = 0; i < 60; i++) {
        list.scrollTop += 120;
        await new Promise((resolve) => requestAnimationFrame(resolve));
        const now = performance.now();
        durations.push(now - last);
        last = now;
      }
      durations.sort((a, b) => a - b);
      return { median: durations[30]!, worst: durations[59]!, rows: list.querySelectorAll('[role=row]').length };
    });
    const jumped = performance.now();
    await page.evaluate(() => {
      const list = document.querySelector<HTMLElement>('.records-table')!;
      list.scrollTop = list.scrollHeight / 2;
    });
    const middle = table.getByRole('link', { name: /^item-0[45]\d{4}$/ }).first();
    await visible(middle);
    const jumpMs = Math.round(performance.now() - jumped);
    await screenshot(page, '04-collection-scrolled');
    console.log(
      `console e2e: ${BIG.toLocaleString('en-US')} records seeded in ${seedMs} ms; ` +
        `collection opened, first row shown in ${firstRowMs} ms (first page fetched in ${firstPageMs} ms); ` +
        `scrolling: median frame ${frames.median.toFixed(1)} ms, worst ${frames.worst.toFixed(1)} ms, ` +
        `${frames.rows} rows in the DOM; jump to the middle shown in ${jumpMs} ms`,
    );
    expect(frames.rows).toBeLessThan(80);

    // Filters with the protocol's operators, and sorting by a column.
    await page.getByRole('button', { name: '+ Filter' }).click();
    const form = page.getByRole('form', { name: 'New filter' });
    await form.getByLabel('Field').fill('category');
    await form.getByLabel('Operator').selectOption('eq');
    await form.getByLabel('Value').fill('garden');
    await form.getByRole('button', { name: 'Apply filter' }).click();
    await poll(() => shownText(page.locator('.list-status'))).toMatch(/^10,000 records/);
    await page.getByRole('button', { name: '+ Filter' }).click();
    await form.getByLabel('Field').fill('stock');
    await form.getByLabel('Operator').selectOption('lt');
    await form.getByLabel('Value').fill('20');
    await form.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByRole('button', { name: 'Sort by price' }).click();
    await poll(() => shownText(page.locator('.list-status'))).toMatch(/^400 records/);
    expect(page.url()).toContain('category=garden');
    expect(page.url()).toContain('lt_stock=20');
    expect(page.url()).toContain('_sort=price');
    const prices = await table.locator('[role=row][aria-rowindex] [role=cell]:nth-child(4)').allInnerTexts();
    const numbers = prices.slice(0, 10).map(Number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    await screenshot(page, '05-collection-filtered');
  });

  it('edits a record with the form generated from the schema, checked in the browser', async () => {
    expect((await api('PUT', `/buckets/${BUCKET}`, 'admin', {})).status).toBe(201);
    expect(
      (
        await api('PUT', `/buckets/${BUCKET}/collections/tasks`, 'admin', {
          data: { schema: TASK_SCHEMA, displayFields: ['title', 'status', 'priority', 'due'] },
        })
      ).status,
    ).toBe(201);
    for (const [id, title, status, priority] of [
      ['t1', 'Write the release notes', 'doing', 3],
      ['t2', 'Fix the login page', 'todo', 5],
      ['t3', 'Order coffee', 'done', 1],
    ] as const) {
      expect(
        (
          await api('PUT', `/buckets/${BUCKET}/collections/tasks/records/${id}`, 'admin', {
            data: { title, status, priority, tags: ['q3'] },
          })
        ).status,
      ).toBe(201);
    }
    await go('#/buckets', 'Buckets');
    await visible(page.getByRole('table', { name: 'buckets' }).getByRole('link', { name: BUCKET, exact: true }));
    await screenshot(page, '06-buckets');
    await go(`#/buckets/${BUCKET}`, BUCKET);
    await visible(page.getByRole('table', { name: 'collections' }).getByRole('link', { name: 'tasks', exact: true }));
    await screenshot(page, '07-bucket-collections');
    await go(`#/buckets/${BUCKET}/collections/tasks`, 'tasks');
    await page.getByRole('link', { name: 't2', exact: true }).click();
    const panel = page.getByRole('complementary', { name: 'Record t2' });
    await visible(panel.getByLabel('Title'));
    expect(await panel.getByLabel('Title').inputValue()).toBe('Fix the login page');
    expect(await panel.getByLabel('Status').inputValue()).not.toBe('');

    // Invalid values are refused in the browser, with the server's rules, before any request.
    let writes = 0;
    const countWrites = (request: { method(): string }) => request.method() === 'PUT' && writes++;
    page.on('request', countWrites);
    await panel.getByLabel('Title').fill('');
    await panel.getByLabel('Priority').fill('9');
    await panel.getByRole('button', { name: 'Save' }).click();
    const problems = panel.getByRole('alert').filter({ hasText: 'Not valid for this collection' });
    await visible(problems);
    await expect(shownText(problems)).resolves.toMatch(/title\s+must not be empty[\s\S]*priority\s+must be at most 5/);
    await visible(panel.getByText('must be at most 5', { exact: true }));
    await screenshot(page, '08-schema-form-errors');
    expect(writes).toBe(0);

    await panel.getByLabel('Title').fill('Fix the login page on mobile');
    await panel.getByLabel('Priority').fill('4');
    await panel.getByLabel('Status').selectOption('doing');
    await panel.getByLabel('Due date').fill('2030-01-31');
    await panel.getByRole('button', { name: 'Add an item to Tags' }).click();
    await panel.getByLabel('Tags 2').fill('mobile');
    await panel.getByRole('button', { name: 'Save' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'Record saved.' }).last());
    page.off('request', countWrites);
    const saved = (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks/records/t2`, 'admin')).body.data;
    expect(saved).toMatchObject({
      title: 'Fix the login page on mobile',
      priority: 4,
      status: 'doing',
      due: '2030-01-31',
      tags: ['q3', 'mobile'],
    });
    // The list shows the new values without a reload.
    await visible(page.getByRole('table', { name: 'Records of tasks' }).getByText('Fix the login page on mobile'));
    await screenshot(page, '09-record-saved');

    // A new record, through the same form.
    await page.getByRole('link', { name: 'New record' }).click();
    const fresh = page.getByRole('complementary', { name: 'New record' });
    await fresh.getByLabel('Id').fill('t4');
    await fresh.getByLabel('Title').fill('Plan the offsite');
    await fresh.getByLabel('Status').selectOption('todo');
    await fresh.getByRole('button', { name: 'Create record' }).click();
    await visible(page.getByRole('complementary', { name: 'Record t4' }));
    await visible(page.getByRole('table', { name: 'Records of tasks' }).getByRole('link', { name: 't4', exact: true }));
    expect(
      (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks/records/t4`, 'admin')).body.data,
    ).toMatchObject({ title: 'Plan the offsite', status: 'todo' });
  });

  it('shows both versions when someone else changed the record meanwhile (If-Match, 412)', async () => {
    await page.getByRole('table', { name: 'Records of tasks' }).getByRole('link', { name: 't2', exact: true }).click();
    const panel = page.getByRole('complementary', { name: 'Record t2' });
    await visible(panel.getByLabel('Title'));
    // Another client changes the record after the console read it.
    const current = (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks/records/t2`, 'admin')).body.data;
    expect(
      (
        await api('PATCH', `/buckets/${BUCKET}/collections/tasks/records/t2`, 'admin', {
          data: { status: 'done', priority: 2 },
        })
      ).status,
    ).toBe(200);
    await panel.locator('label.segment', { hasText: 'JSON' }).click();
    expect(await panel.getByRole('radio', { name: 'JSON' }).isChecked()).toBe(true);
    const editor = panel.getByLabel('Record JSON');
    const mine: Record<string, unknown> = { ...current, title: 'Fix the login page (mine)' };
    delete mine.id;
    delete mine.last_modified;
    delete mine.schema;
    await editor.fill(JSON.stringify(mine, null, 2));
    await panel.getByRole('button', { name: 'Save' }).click();
    const dialog = page.getByRole('dialog', { name: 'This record was changed meanwhile' });
    await visible(dialog);
    const diff = dialog.getByRole('table', { name: /Differences between/ });
    await visible(diff.getByText('"status": "done"'));
    await visible(diff.getByText('"title": "Fix the login page (mine)"'));
    await screenshot(page, '10-conflict');
    await dialog.getByRole('button', { name: 'Overwrite with mine' }).click();
    await hidden(dialog);
    await visible(page.getByRole('status').filter({ hasText: 'Record saved.' }).last());
    const after = (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks/records/t2`, 'admin')).body.data;
    expect(after).toMatchObject({ title: 'Fix the login page (mine)', status: 'doing', priority: 4 });
  });

  it('edits group members and permissions, showing what each principal inherits', async () => {
    // A group, through the console.
    await go(`#/buckets/${BUCKET}/groups`, BUCKET);
    await page.getByRole('button', { name: 'New group' }).click();
    const create = page.getByRole('dialog', { name: 'New group' });
    await create.getByLabel('Id').fill('editors');
    await create.getByRole('button', { name: 'Create group' }).click();
    await visible(page.getByRole('heading', { level: 1, name: 'editors' }));
    await page.getByLabel('Add a member').fill('account:alice');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('button', { name: 'Save members' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'Members saved.' }));
    expect((await api<Stored>('GET', `/buckets/${BUCKET}/groups/editors`, 'admin')).body.data.members).toEqual([
      'account:alice',
    ]);
    await screenshot(page, '11-group-members');

    // The collection's permissions: the group may write, signed-in users may read.
    await go(`#/buckets/${BUCKET}/collections/tasks/permissions`, 'tasks');
    const table = page.locator('.perm-table');
    await visible(table.getByText('write on bucket', { exact: true }));
    await page.getByLabel('Principal', { exact: true }).fill(`/buckets/${BUCKET}/groups/editors`);
    await page.getByRole('combobox', { name: /^Permission/ }).selectOption('write');
    await page.getByRole('button', { name: 'Grant' }).click();
    await page.getByLabel('Principal', { exact: true }).fill('system.Authenticated');
    await page.getByRole('combobox', { name: /^Permission/ }).selectOption('read');
    await page.getByRole('button', { name: 'Grant' }).click();
    // The group's write implies read.
    await visible(
      table
        .getByRole('row', { name: /editors/ })
        .getByText('implied by write')
        .first(),
    );
    await page.getByRole('button', { name: 'Save permissions' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'Permissions saved.' }));
    const permissions = (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks`, 'admin')).body.permissions;
    expect(permissions.write!.sort()).toEqual([`/buckets/${BUCKET}/groups/editors`, 'account:admin']);
    expect(permissions.read).toEqual(['system.Authenticated']);
    await screenshot(page, '12-permissions');
    await go(`#/buckets/${BUCKET}/collections/tasks/attributes`, 'tasks');
    await visible(page.getByLabel('collection attributes'));
    expect(await page.getByLabel('collection attributes').inputValue()).toContain('"schema"');
    await screenshot(page, '13-collection-schema');

    // What Alice can do now, in her own browser context, from GET /permissions.
    const aliceContext = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const alicePage = await aliceContext.newPage();
    watch(alicePage);
    await signIn(alicePage, 'alice');
    await alicePage.evaluate(() => {
      location.hash = '#/permissions';
    });
    const access = alicePage.getByRole('table', { name: 'My access' });
    const row = access.getByRole('row', { name: new RegExp(`/buckets/${BUCKET}/collections/tasks`) });
    await visible(row);
    await expect(shownText(row)).resolves.toMatch(/write/);
    await visible(
      alicePage
        .getByRole('region', { name: 'Your principals' })
        .or(alicePage.locator('.principal-strip'))
        .getByText('editors'),
    );
    await screenshot(alicePage, '14-my-access');
    // And she edits a record through the group.
    expect(
      (await api('PATCH', `/buckets/${BUCKET}/collections/tasks/records/t3`, 'alice', { data: { status: 'todo' } }))
        .status,
    ).toBe(200);
    await aliceContext.close();
  });

  it('shows the history with filters, and the difference between two versions', async () => {
    await go(`#/buckets/${BUCKET}/history`, BUCKET);
    const table = page.getByRole('table', { name: 'History' });
    await visible(table.getByText('record t2 in tasks').first());
    await page.getByLabel('User').fill('account:alice');
    await poll(() => shownText(page.locator('.list-status'))).toBe('1 change');
    await page.getByLabel('User').fill('');
    await page.getByLabel('Kind').selectOption('record');
    await page.getByLabel('Object').fill('/records/t2');
    await poll(() => shownText(page.locator('.list-status'))).toBe('4 changes');
    // The newest change of t2 (the overwrite after the conflict), against the one before it.
    await table.getByRole('row').nth(1).click();
    const detail = page.getByRole('region', { name: 'Change details' });
    const diff = detail.getByRole('table', { name: /Differences between/ });
    await visible(diff);
    await visible(diff.locator('tr.removed').getByText('"status": "done"'));
    await visible(diff.locator('tr.added').getByText('"status": "doing"'));
    await visible(detail.getByText('title changed'));
    await screenshot(page, '15-history-diff');
    // Any two versions: the first one against this one.
    const compare = detail.getByLabel('Compare with');
    const firstVersion = (await compare.locator('option').allInnerTexts()).find((text) => text.startsWith('created'))!;
    await compare.selectOption({ label: firstVersion });
    await visible(diff.locator('tr.removed').getByText('"title": "Fix the login page"'));
    await visible(diff.locator('tr.added').getByText('"due": "2030-01-31"'));
    await screenshot(page, '16-history-compare');

    // A record's own history, beside the list.
    await go(`#/buckets/${BUCKET}/collections/tasks/records/t2/history`, 'tasks');
    const panel = page.getByRole('complementary', { name: 'Record t2' });
    await panel.getByRole('table', { name: 'History' }).getByRole('row').nth(1).click();
    await visible(
      panel.getByRole('region', { name: 'Change details' }).getByRole('table', { name: /Differences between/ }),
    );
    await screenshot(page, '17-record-history');
  });

  it('imports a CSV file through /batch with a progress bar and a report of what failed', async () => {
    const rows = ['id,title,priority,status,done'];
    for (let i = 1; i <= 300; i++) rows.push(`imp-${i},Imported task ${i},${(i % 5) + 1},todo,${i % 2 === 0}`);
    rows[50] = 'imp-50,,3,todo,false'; // no title: refused by the schema
    rows[120] = 'imp-120,Bad priority,urgent,todo,false'; // not an integer
    rows[200] = 'imp 200,Bad id,2,todo,false'; // not a valid id
    const csv = `${rows.join('\n')}\n`;

    await go(`#/buckets/${BUCKET}/collections/tasks`, 'tasks');
    await page.getByRole('button', { name: 'Import…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import records into tasks' });
    await dialog
      .getByLabel('File to import')
      .setInputFiles({ name: 'tasks.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await visible(dialog.getByText('tasks.csv'));
    await visible(dialog.getByText(/2 records do not match the collection's schema/));
    await visible(dialog.getByRole('table', { name: 'Preview' }).getByText('Imported task 1', { exact: true }));
    await screenshot(page, '18-import-preview');

    // A slow network, to watch the progress bar move.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 250,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    await dialog.getByRole('button', { name: 'Import 300 records' }).click();
    const progress = dialog.getByRole('progressbar');
    await visible(progress);
    // The first batch (the server's batch_max_requests: 25) has answered.
    await poll(async () => Number(await progress.getAttribute('value'))).toBeGreaterThanOrEqual(25);
    expect(Number(await progress.getAttribute('value'))).toBeLessThan(300);
    await screenshot(page, '19-import-progress');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    await visible(dialog.getByText('Imported 300 of 300 · 100%'));
    await visible(dialog.getByText('297 created'));
    await visible(dialog.getByText('3 failed'));
    const failures = dialog.getByRole('table', { name: 'Failed records' });
    await expect(shownText(failures)).resolves.toMatch(/50\s+imp-50\s+400\s+title/);
    await expect(shownText(failures)).resolves.toMatch(/120\s+imp-120\s+400\s+priority/);
    await expect(shownText(failures)).resolves.toMatch(/200\s+imp 200\s+400\s+Invalid id/);
    await screenshot(page, '20-import-report');
    await dialog.getByRole('button', { name: 'Done' }).click();
    const count = await fetch(`${apiUrl}/buckets/${BUCKET}/collections/tasks/records`, {
      method: 'HEAD',
      headers: { Authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` },
    });
    // t1-t4, and the 297 imported.
    expect(count.headers.get('Total-Objects')).toBe('301');
    await poll(() => shownText(page.locator('.list-status'))).toMatch(/^301 records/);
  });

  it("shows a record's file, downloads it, uploads, replaces and removes it", async () => {
    interface Attachment {
      filename: string;
      mimetype: string;
      size: number;
      location: string;
    }
    const recordPath = `/buckets/${BUCKET}/collections/tasks/records/t1`;
    const attachmentOf = async () =>
      (await api<Stored>('GET', recordPath, 'admin')).body.data.attachment as Attachment | null | undefined;
    // An 8×8 PNG (any bytes would do: the server checks the extension, not the content).
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC',
      'base64',
    );
    await go(`#/buckets/${BUCKET}/collections/tasks/records/t1/file`, 'tasks');
    const panel = page.getByRole('complementary', { name: 'Record t1' });
    const file = panel.getByRole('region', { name: 'Record file' });
    await visible(file.getByText('This record has no file.'));

    // Upload.
    await file.getByLabel('File to upload').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: png });
    await visible(file.getByText('photo.png', { exact: true }));
    await file.getByRole('button', { name: 'Upload', exact: true }).click();
    await visible(page.getByRole('status').filter({ hasText: 'File “photo.png” uploaded.' }).last());
    await visible(file.getByRole('button', { name: 'Download' }));
    const facts = file.locator('dl.facts');
    await expect(shownText(facts)).resolves.toMatch(
      new RegExp(String.raw`Name\s+photo\.png\s+Type\s+image/png\s+Size\s+${png.length} B`),
    );
    const uploaded = await attachmentOf();
    expect(uploaded).toMatchObject({ filename: 'photo.png', mimetype: 'image/png', size: png.length });
    await screenshot(page, '21-record-file');

    // Download: the very bytes that were sent.
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: WAIT }),
      file.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('photo.png');
    expect(readFileSync(await download.path())).toEqual(png);

    // Replace: the record points at the new file, the old one is gone from the server.
    const notes = Buffer.from('Meeting notes\n- ship the console\n');
    await file
      .getByLabel('File to replace it with')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: notes });
    await file.getByRole('button', { name: 'Replace the file' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'File replaced by “notes.txt”.' }).last());
    await expect(shownText(facts)).resolves.toMatch(
      new RegExp(String.raw`Name\s+notes\.txt\s+Type\s+text/plain\s+Size\s+${notes.length} B`),
    );
    expect(await attachmentOf()).toMatchObject({ filename: 'notes.txt', mimetype: 'text/plain', size: notes.length });
    const baseUrl = ((await api<Root>('GET', '/', null)).body.capabilities.attachments as { base_url: string })
      .base_url;
    await poll(async () => (await fetch(new URL(uploaded!.location, baseUrl))).status).toBe(404);
    await screenshot(page, '22-record-file-replaced');

    // Remove, after a confirmation.
    await file.getByRole('button', { name: 'Remove the file' }).click();
    const confirm = page.getByRole('dialog', { name: 'Remove “notes.txt”?' });
    await confirm.getByRole('button', { name: 'Remove the file' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'File removed.' }).last());
    await visible(file.getByText('This record has no file.'));
    expect(await attachmentOf()).toBeNull();
    // The record's other fields are untouched.
    expect((await api<Stored>('GET', recordPath, 'admin')).body.data).toMatchObject({
      title: 'Write the release notes',
    });
  });

  it('runs no script of a file (downloaded, never opened), allows no eval, stores no password', async () => {
    const heard: string[] = [];
    const listen = (target: Page) =>
      target.on('console', (line) => line.text().startsWith('QUIRE-XSS') && heard.push(line.text()));
    listen(page);
    page.context().on('page', listen);
    const svg = Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" onload="console.log('QUIRE-XSS onload')">` +
        `<script>console.log('QUIRE-XSS script')</script></svg>`,
    );
    await go(`#/buckets/${BUCKET}/collections/tasks/records/t1/file`, 'tasks');
    const file = page.getByRole('complementary', { name: 'Record t1' }).getByRole('region', { name: 'Record file' });
    await file
      .getByLabel('File to upload')
      .setInputFiles({ name: 'drawing.svg', mimeType: 'image/svg+xml', buffer: svg });
    await file.getByRole('button', { name: 'Upload', exact: true }).click();
    await visible(page.getByRole('status').filter({ hasText: 'File “drawing.svg” uploaded.' }).last());
    const tabs = page.context().pages().length;
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: WAIT }),
      file.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('drawing.svg');
    expect(readFileSync(await download.path())).toEqual(svg);
    expect(page.context().pages()).toHaveLength(tabs);
    // The file at base_url, opened in a tab of its own: sandboxed and downloaded by the server.
    const { location } = (await api<Stored>('GET', `/buckets/${BUCKET}/collections/tasks/records/t1`, 'admin')).body
      .data.attachment as { location: string };
    const filesUrl = ((await api<Root>('GET', '/', null)).body.capabilities.attachments as { base_url: string })
      .base_url;
    const tab = await page.context().newPage();
    await tab.goto(new URL(location, filesUrl).href).catch(() => {}); // a download aborts the navigation
    await new Promise((resolve) => setTimeout(resolve, 500)); // a script would have logged by now
    await tab.close();
    expect(heard).toEqual([]);

    const policy = (await fetch(`${apiUrl}/admin/`)).headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self';");
    expect(policy).toContain("connect-src 'self';");
    expect(policy).not.toMatch(/unsafe-eval|unsafe-inline/);
    const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
    expect(stored).not.toContain(PASSWORD);
    expect(stored).not.toContain(Buffer.from(`admin:${PASSWORD}`).toString('base64'));
    expect((await api('DELETE', `/buckets/${BUCKET}/collections/tasks/records/t1/attachment`, 'admin')).status).toBe(
      204,
    );
  });

  it('manages accounts as an account administrator', async () => {
    await go('#/accounts', 'Accounts');
    const table = page.getByRole('table', { name: 'Accounts' });
    await visible(table.getByText('alice', { exact: true }));
    await page.getByRole('button', { name: 'New account' }).click();
    const create = page.getByRole('dialog', { name: 'New account' });
    await create.getByLabel('Username').fill('carol');
    await create.getByLabel('Password').fill('carol-password-1');
    await create.getByRole('button', { name: 'Create account' }).click();
    await visible(table.getByText('carol', { exact: true }));
    const carol = table.getByRole('row').filter({ hasText: 'carol' });
    await carol.getByRole('button', { name: 'Reset password' }).click();
    const reset = page.getByRole('dialog', { name: 'Reset the password of “carol”' });
    await reset.getByLabel('New password').fill('carol-password-2');
    await reset.getByRole('button', { name: 'Set this password' }).click();
    await visible(page.getByRole('status').filter({ hasText: 'New password set for “carol”.' }));
    const asCarol = await fetch(`${apiUrl}/`, {
      headers: { Authorization: `Basic ${Buffer.from('carol:carol-password-2').toString('base64')}` },
    });
    expect((await asCarol.json()).user?.id).toBe('account:carol');
    await screenshot(page, '23-accounts');
    await carol.getByRole('button', { name: 'Delete' }).click();
    await page
      .getByRole('dialog', { name: 'Delete the account “carol”?' })
      .getByRole('button', { name: 'Delete account' })
      .click();
    await hidden(table.getByText('carol', { exact: true }));
    expect((await api('GET', '/accounts/carol', 'admin')).status).toBe(404);
  });

  it('raised no error in any page', () => {
    expect(errors).toEqual([]);
  });
});
