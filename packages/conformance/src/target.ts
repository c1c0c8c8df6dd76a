/**
 * What the runner asks of the target itself, outside the suites: its root (`GET /`), whether
 * anonymous sign-up works (for `--create-accounts`), and the final cleanup of what a run left.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { RootBody } from './harness/bodies.js';
import type { ServerSummary } from './report/model.js';

export interface Credentials {
  name: string;
  password: string;
}

function basic(c: Credentials): string {
  return `Basic ${Buffer.from(`${c.name}:${c.password}`, 'utf8').toString('base64')}`;
}

interface FetchedJson {
  status: number;
  /** Parsed body; undefined when empty or not JSON. */
  json: unknown;
}

async function fetchJson(url: string, init: RequestInit = {}): Promise<FetchedJson> {
  const res = await fetch(url, { redirect: 'manual', ...init });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

/** Reads `GET /`; throws a message an operator can act on when it is not a Kinto-protocol root. */
export async function readServer(base: string): Promise<ServerSummary & { root: Record<string, unknown> }> {
  let res: FetchedJson;
  try {
    res = await fetchJson(`${base}/`);
  } catch (error) {
    throw new Error(`cannot reach ${base}/: ${(error as Error).message}`);
  }
  if (res.status !== 200 || typeof res.json !== 'object' || res.json === null) {
    throw new Error(
      `GET ${base}/ answered ${res.status}, not the JSON root of a Kinto-protocol server (is the URL the API base, ` +
        `ending with /v1?)`,
    );
  }
  const root = res.json as Record<string, unknown>;
  const capabilities = Object.keys((root.capabilities as Record<string, unknown> | undefined) ?? {}).sort();
  return {
    root,
    url: base,
    ...(typeof root.project_name === 'string' ? { project_name: root.project_name } : {}),
    ...(typeof root.project_version === 'string' ? { project_version: root.project_version } : {}),
    ...(typeof root.http_api_version === 'string' ? { http_api_version: root.http_api_version } : {}),
    capabilities,
    ...(root.settings && typeof root.settings === 'object'
      ? { settings: root.settings as Record<string, unknown> }
      : {}),
  };
}

/**
 * `--create-accounts`: checks once, before the run, that an anonymous caller may sign up and
 * that the new account authenticates at once (the workers then create accounts as the checks
 * need them). The probe account is deleted right away.
 */
export async function probeAccountSignUp(base: string): Promise<void> {
  const c = { name: `conf-${randomBytes(8).toString('hex')}`, password: `pw-${randomBytes(12).toString('hex')}` };
  const res = await fetchJson(`${base}/accounts/${c.name}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: { password: c.password } }),
  });
  if (res.status !== 201) {
    throw new Error(
      `--create-accounts: PUT /accounts/${c.name} answered ${res.status} ${JSON.stringify(res.json)} ` +
        `(does the deployment allow anonymous sign-up?)`,
    );
  }
  try {
    const who = await fetchJson(`${base}/`, { headers: { Authorization: basic(c) } });
    if (who.status !== 200) {
      throw new Error(
        `--create-accounts: GET / with a new account answered ${who.status} ${JSON.stringify(who.json)} ` +
          `(a login limit on this client address?)`,
      );
    }
    const user = (who.json as Partial<RootBody> | undefined)?.user?.id;
    if (user !== `account:${c.name}`) {
      throw new Error(
        `--create-accounts: a new account does not authenticate (GET / says user ${JSON.stringify(user ?? null)}); ` +
          `do accounts need validation first?`,
      );
    }
  } finally {
    await deleteAccounts(base, [c]);
  }
}

async function deleteAccounts(base: string, accounts: Credentials[]): Promise<void> {
  await Promise.all(
    accounts.map((c) =>
      fetch(`${base}/accounts/${encodeURIComponent(c.name)}`, {
        method: 'DELETE',
        headers: { Authorization: basic(c) },
      })
        .then((r) => r.text())
        .catch(() => undefined),
    ),
  );
}

/**
 * Deletes every bucket listed in the journal (written by the workers before each creation),
 * then every throwaway account it lists. Returns how many buckets still existed, i.e. were left
 * behind by an interrupted file.
 */
export async function cleanupJournal(base: string, journal: string): Promise<number> {
  if (!existsSync(journal)) return 0;
  const seen = new Set<string>();
  const buckets: { id: string; authorization: string | null }[] = [];
  const accounts: { account: string; authorization: string }[] = [];
  for (const line of readFileSync(journal, 'utf8').split('\n')) {
    if (!line.trim() || seen.has(line)) continue;
    seen.add(line);
    try {
      const entry = JSON.parse(line) as { id?: string; account?: string; authorization: string | null };
      if (typeof entry.account === 'string' && entry.authorization)
        accounts.push({ account: entry.account, authorization: entry.authorization });
      else if (typeof entry.id === 'string') buckets.push({ id: entry.id, authorization: entry.authorization });
    } catch {
      // A line cut by a killed worker: nothing to delete from it.
    }
  }
  let leftovers = 0;
  const drain = async <T>(queue: T[], remove: (item: T) => Promise<void>) => {
    const worker = async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await remove(item);
    };
    await Promise.all(Array.from({ length: 4 }, worker));
  };
  await drain(buckets, async (e) => {
    const headers: Record<string, string> = e.authorization ? { Authorization: e.authorization } : {};
    try {
      const res = await fetch(`${base}/buckets/${encodeURIComponent(e.id)}`, { method: 'DELETE', headers });
      await res.text();
      if (res.status === 200) leftovers += 1;
    } catch {
      // Unreachable server: nothing more we can do.
    }
  });
  // After the buckets: deleting those needed the accounts. Already deleted by their file: 401/404.
  await drain(accounts, async (e) => {
    try {
      await (
        await fetch(`${base}/accounts/${encodeURIComponent(e.account)}`, {
          method: 'DELETE',
          headers: { Authorization: e.authorization },
        })
      ).text();
    } catch {
      // Unreachable server: nothing more we can do.
    }
  });
  return leftovers;
}
