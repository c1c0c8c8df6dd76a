/**
 * Every bucket and throwaway account the suite creates, remembered twice: in memory (deleted by
 * the test file's afterAll) and, when the CLI gives a journal file (`QUIRE_CONFORMANCE_JOURNAL`),
 * appended to it synchronously *before* it exists, so that the CLI can delete the leftovers even
 * when a worker is killed mid-test (Ctrl-C, timeout). Kept free of other harness imports so that
 * http.ts, identities.ts and fixtures.ts can all use it.
 *
 * Journal lines are JSON: `{"id": <bucket id>, "authorization"}` for a bucket,
 * `{"account": <account id>, "authorization"}` for an account (deleted after the buckets).
 */
import { appendFileSync } from 'node:fs';

interface TrackedBucket {
  id: string;
  /** The `Authorization` value of the user who created it (may be null for anonymous). */
  authorization: string | null;
}

interface TrackedAccount {
  account: string;
  /** The account's own `Authorization` value (it deletes itself). */
  authorization: string;
}

const tracked = new Map<string, TrackedBucket>();
const accounts = new Map<string, TrackedAccount>();

function journal(entry: TrackedBucket | TrackedAccount): void {
  const file = process.env.QUIRE_CONFORMANCE_JOURNAL;
  if (file) appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
}

/** Records a bucket for deletion at the end of the file and of the run. Idempotent. */
export function track(id: string, authorization: string | null): void {
  const key = `${id}\n${authorization ?? ''}`;
  if (tracked.has(key)) return;
  tracked.set(key, { id, authorization });
  journal({ id, authorization });
}

/** Records a throwaway account for deletion (after the buckets). Idempotent. */
export function trackAccount(account: string, authorization: string): void {
  if (accounts.has(account)) return;
  accounts.set(account, { account, authorization });
  journal({ account, authorization });
}

/** Returns and forgets every bucket tracked so far. */
export function drainTracked(): TrackedBucket[] {
  const all = [...tracked.values()];
  tracked.clear();
  return all;
}

/** Returns and forgets every account tracked so far. */
export function drainTrackedAccounts(): TrackedAccount[] {
  const all = [...accounts.values()];
  accounts.clear();
  return all;
}
