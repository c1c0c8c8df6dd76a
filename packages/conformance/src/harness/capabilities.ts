/**
 * `GET /` read once per test file: capabilities and public settings, used to gate optional
 * sections (`describe.runIf(info.hasCapability('schema'))`) and to read `batch_max_requests`.
 */
import { TestRunner } from 'vitest';
import type { RootBody } from './bodies.js';
import { request } from './http.js';

export interface PublicSettings {
  /** `null` (or 0) means unlimited. */
  batch_max_requests: number | null;
  readonly?: boolean;
  explicit_permissions?: boolean;
  [key: string]: unknown;
}

export interface ServerInfo {
  root: RootBody;
  capabilities: Record<string, Record<string, unknown>>;
  settings: PublicSettings;
  hasCapability(name: string): boolean;
  /** `settings.batch_max_requests` when it is a positive number, else `null` (unlimited). */
  batchMaxRequests: number | null;
}

let cached: Promise<ServerInfo> | undefined;

export function serverInfo(): Promise<ServerInfo> {
  if (!cached) {
    cached = request<RootBody>('GET', '/').then((res) => {
      if (res.status !== 200 || typeof res.json !== 'object' || res.json === null) {
        throw new Error(`conformance: GET / answered ${res.status}: ${res.text.slice(0, 200)}`);
      }
      const root = res.json;
      const capabilities = (root.capabilities ?? {}) as Record<string, Record<string, unknown>>;
      const settings = (root.settings ?? { batch_max_requests: null }) as PublicSettings;
      const max = settings.batch_max_requests;
      return {
        root,
        capabilities,
        settings,
        hasCapability: (name: string) => Object.hasOwn(capabilities, name),
        batchMaxRequests: typeof max === 'number' && max > 0 ? max : null,
      };
    });
    cached.catch(() => {
      cached = undefined;
    });
  }
  return cached;
}

/**
 * Gate for optional sections: returns `applies`, and when a section does not apply, prints
 * why, so a skipped section is never silent.
 */
export function applicable(applies: boolean, section: string, reason: string): boolean {
  if (!applies) {
    console.info(`[conformance] skipped: ${section} (${reason})`);
    recordSkipReason(section, reason);
  }
  return applies;
}

export interface SkipReason {
  section: string;
  reason: string;
}

/**
 * Leaves the reason in the task meta of the suite being collected (and of the file), where the
 * reports find it: a test created right after inherits a copy of its suite's meta, so the last
 * reason in a skipped test's own meta is the one of its `it.runIf(applicable(…))`; a skipped
 * `describe` finds its reason in the file's list, matched by section name.
 */
function recordSkipReason(section: string, reason: string): void {
  try {
    const collector = TestRunner.getCurrentSuite();
    const entry: SkipReason = { section, reason };
    for (const task of [collector.suite, collector.file]) {
      if (!task) continue;
      const meta = task.meta as Record<string, unknown>;
      // A new array each time: tests keep the snapshot they inherited.
      meta.skipReasons = [...((meta.skipReasons as SkipReason[] | undefined) ?? []), entry];
    }
  } catch {
    // Not collecting tests (library use): the console line is all there is.
  }
}
