/**
 * Every bucket the suite creates, remembered twice: in memory (deleted by the test file's
 * afterAll) and, when the CLI gives a journal file (`QUIRE_CONFORMANCE_JOURNAL`), appended to it
 * synchronously *before* the bucket exists, so that the CLI can delete the leftovers even when
 * a worker is killed mid-test (Ctrl-C, timeout). Kept free of other harness imports so that
 * http.ts and fixtures.ts can both use it.
 */
import { appendFileSync } from 'node:fs';

export interface TrackedBucket {
  id: string;
  /** The `Authorization` value of the user who created it (may be null for anonymous). */
  authorization: string | null;
}

const tracked = new Map<string, TrackedBucket>();

/** Records a bucket for deletion at the end of the file and of the run. Idempotent. */
export function track(id: string, authorization: string | null): void {
  const key = `${id}\n${authorization ?? ''}`;
  if (tracked.has(key)) return;
  tracked.set(key, { id, authorization });
  const journal = process.env['QUIRE_CONFORMANCE_JOURNAL'];
  if (journal) appendFileSync(journal, `${JSON.stringify({ id, authorization })}\n`, { mode: 0o600 });
}

/** Returns and forgets everything tracked so far. */
export function drainTracked(): TrackedBucket[] {
  const all = [...tracked.values()];
  tracked.clear();
  return all;
}
