/**
 * Debian's Chromium as every browser test and bench of the repository launches it (the client's,
 * the demo's and the console's): its path, its flags (headless, no sandbox, no network of its
 * own) and the printed skip where it is missing (a failure with QUIRE_TEST_REQUIRE_BROWSER=1, CI).
 */
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.QUIRE_CHROMIUM_PATH ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Whether the browser tests can run here; prints why not (or throws when CI requires them). */
export function chromiumAvailable(suite: string): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `${suite}: Chromium not found at ${CHROMIUM_PATH}`;
  if (process.env.QUIRE_TEST_REQUIRE_BROWSER === '1') throw new Error(`${message} and QUIRE_TEST_REQUIRE_BROWSER=1`);
  console.warn(`${message}; skipping (set QUIRE_TEST_REQUIRE_BROWSER=1 to fail instead)`);
  return false;
}

/** Chromium with the flags above, and `extraFlags` after them. */
export async function launchChromium(extraFlags: readonly string[] = []): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...FLAGS, ...extraFlags] });
}
