/**
 * What `quire` says it did: `quire` alone prints its help (it starts nothing); `quire migrate`
 * lists the migrations it applied, then says the store is up to date.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';

const run = useCli();

it('quire without a command prints its help and starts nothing', async () => {
  const quire = run([], {});
  expect(await quire.exited).toBe(0);
  expect(quire.output()).toContain('Usage: quire <start|migrate|export|import>');
  expect(quire.output()).not.toContain('listening');
}, 60_000);

it('quire migrate lists the migrations it applied, then "already up to date"', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'quire-migrate-'));
  try {
    const first = run(['migrate'], { QUIRE_DATA_DIR: dir });
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(/^Applied \d+ migrations? \(embedded store in .+\):\n {2}001-initial\n/m);
    const second = run(['migrate'], { QUIRE_DATA_DIR: dir });
    expect(await second.exited).toBe(0);
    expect(second.output()).toContain('Already up to date (embedded store in');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);
