import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings, redactSettings, SETTINGS } from './config.js';
import { renderSettingsTable, tableIn } from './settings/readme-table.js';
import { composeSettings } from './settings/schema.js';
import { createSettingsValidator } from './settings/validate.js';

describe('settings', () => {
  it('uses the defaults of a developer machine', () => {
    const settings = loadSettings({ env: {}, configFile: null });
    expect(settings.port).toBe(8888);
    expect(settings.host).toBe('127.0.0.1');
    expect(settings.batch_max_requests).toBe(25);
    expect(settings.multiauth_policies).toEqual(['basicauth']);
    expect(settings.bucket_create_principals).toEqual(['system.Authenticated']);
    expect(settings.storage_url).toBeNull();
  });

  it('reads QUIRE_<NAME> variables, HOST and PORT, with types', () => {
    const settings = loadSettings({
      env: {
        QUIRE_BATCH_MAX_REQUESTS: '10',
        QUIRE_READONLY: 'true',
        PORT: '9999',
        QUIRE_BUCKET_CREATE_PRINCIPALS: 'system.Everyone account:admin',
      },
      configFile: null,
    });
    expect(settings.batch_max_requests).toBe(10);
    expect(settings.readonly).toBe(true);
    expect(settings.port).toBe(9999);
    expect(settings.bucket_create_principals).toEqual(['system.Everyone', 'account:admin']);
  });

  it.each([
    [{ QUIRE_PORT: 'eighty' }, /port/],
    [{ QUIRE_READONLY: 'maybe' }, /readonly/],
    [{ QUIRE_STORAGE_URL: 'mysql://x' }, /storage_url/],
    [{ QUIRE_MULTIAUTH_POLICIES: 'magic' }, /unknown policy/],
    [{ QUIRE_BATCH_MAX_REQUESTS: '-1' }, /at least 0/],
    [{ QUIRE_EOS: 'soon' }, /eos/],
  ])('refuses bad values with a clear message: %o', (env, message) => {
    expect(() => loadSettings({ env, configFile: null })).toThrow(ConfigError);
    expect(() => loadSettings({ env, configFile: null })).toThrow(message);
  });

  it('reads workers as a positive integer or auto (one per core); above 1 on PostgreSQL only', async () => {
    const { availableParallelism } = await import('node:os');
    const postgres = { QUIRE_STORAGE_URL: 'postgresql://h/db' };
    expect(loadSettings({ env: {}, configFile: null }).workers).toBe(1);
    expect(loadSettings({ env: { ...postgres, QUIRE_WORKERS: '3' }, configFile: null }).workers).toBe(3);
    expect(loadSettings({ env: { ...postgres, QUIRE_WORKERS: 'auto' }, configFile: null }).workers).toBe(
      availableParallelism(),
    );
    expect(() => loadSettings({ env: { ...postgres, QUIRE_WORKERS: '0' }, configFile: null })).toThrow(
      /workers .*at least 1/,
    );
    expect(() => loadSettings({ env: { ...postgres, QUIRE_WORKERS: '1.5' }, configFile: null })).toThrow(
      /expected an integer or auto/,
    );
    expect(() => loadSettings({ env: { QUIRE_WORKERS: '2' }, configFile: null })).toThrow(ConfigError);
    expect(() => loadSettings({ env: { QUIRE_WORKERS: '2' }, configFile: null })).toThrow(
      /workers = 2 needs PostgreSQL/,
    );
  });

  it('reads a JSON config file below the environment, and refuses unknown keys', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'quire-config-'));
    const file = join(dir, 'settings.json');
    writeFileSync(file, JSON.stringify({ paginate_by: 50, batch_max_requests: 5 }));
    const settings = loadSettings({ env: { QUIRE_BATCH_MAX_REQUESTS: '7' }, configFile: file });
    expect(settings.paginate_by).toBe(50);
    expect(settings.batch_max_requests).toBe(7);
    writeFileSync(file, JSON.stringify({ pagniate_by: 50 }));
    expect(() => loadSettings({ env: {}, configFile: file })).toThrow(/Unknown setting/);
  });

  it('refuses unknown QUIRE_* variables, naming the closest setting', () => {
    expect(() => loadSettings({ env: { QUIRE_STORAGE_URI: 'postgresql://db/quire' } })).toThrow(
      /Unknown environment variable QUIRE_STORAGE_URI \(did you mean QUIRE_STORAGE_URL\?\)/,
    );
    expect(() => loadSettings({ env: { QUIRE_BATCH_MAX_REQUEST: '10', QUIRE_PORT: '1' } })).toThrow(
      /QUIRE_BATCH_MAX_REQUEST \(did you mean QUIRE_BATCH_MAX_REQUESTS\?\)/,
    );
    expect(() => loadSettings({ env: { QUIRE_WHATEVER_ELSE_ENTIRELY: 'x' } })).toThrow(
      /QUIRE_WHATEVER_ELSE_ENTIRELY: not a setting/,
    );
    // Variables of the tests, the conformance suite, the benches and the CLI are not settings.
    const others = {
      QUIRE_CONFIG: '',
      QUIRE_COMMIT: 'abc',
      QUIRE_TEST_PG_URL: 'x',
      QUIRE_CONFORMANCE_URL: 'x',
      QUIRE_BENCH_CHILD: '1',
      HOME: '/root',
    };
    expect(loadSettings({ env: others }).port).toBe(8888);
  });

  it('names the closest setting for an unknown key of the config file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quire-config-'));
    const file = join(dir, 'settings.json');
    await writeFile(file, JSON.stringify({ storage_uri: 'postgresql://db/quire' }));
    expect(() => loadSettings({ env: {}, configFile: file })).toThrow(/storage_uri \(did you mean storage_url\?\)/);
  });

  it('never shows secrets', async () => {
    const settings = loadSettings({
      env: { QUIRE_USERID_HMAC_SECRET: 'hunter2', QUIRE_STORAGE_URL: 'postgresql://u:pw@h/db' },
      configFile: null,
    });
    const shown = JSON.stringify(redactSettings(settings));
    expect(shown).not.toContain('hunter2');
    expect(shown).not.toContain('pw@h');
    // Nor in the message refusing a secret of the wrong type.
    const dir = await mkdtemp(join(tmpdir(), 'quire-config-'));
    const file = join(dir, 'settings.json');
    await writeFile(file, JSON.stringify({ userid_hmac_secret: 31337 }));
    expect(() => loadSettings({ env: {}, configFile: file })).toThrow(/userid_hmac_secret .*expected a string$/);
  });

  it('declares for every setting a description and a default that passes its own schema', () => {
    for (const [name, schema] of Object.entries(SETTINGS)) {
      expect(typeof schema.description, name).toBe('string');
      expect(Object.hasOwn(schema, 'default'), name).toBe(true);
    }
    // loadSettings checks only the values given to it: the defaults are checked here.
    const defaults = Object.fromEntries(
      Object.entries(SETTINGS).map(([name, schema]) => [name, schema.default as unknown]),
    );
    const origins = new Map(Object.keys(SETTINGS).map((name) => [name, { source: 'default', raw: defaults[name] }]));
    expect(() => createSettingsValidator(SETTINGS, { checkSchemas: true })(defaults, origins)).not.toThrow();
    expect(() => composeSettings({ port: SETTINGS.port }, { port: SETTINGS.port })).toThrow(/port is declared twice/);
  });

  it('has the README settings table the schemas give (settings:docs rewrites it)', async () => {
    const { readFileSync } = await import('node:fs');
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    expect(tableIn(readme), 'README settings table out of date: run pnpm --filter @quire/server settings:docs').toBe(
      renderSettingsTable(SETTINGS),
    );
  });
});
