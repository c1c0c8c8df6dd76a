/**
 * What a run hands to the suites: vitest runs them in workers that know nothing of the CLI, so
 * the target, identities and limits go through `QUIRE_CONFORMANCE_*` variables (the same ones
 * Quire's own test setup sets). Set for one run, and put back as they were after it.
 */

const ENV_KEYS = [
  'QUIRE_CONFORMANCE_URL',
  'QUIRE_CONFORMANCE_USERS',
  'QUIRE_CONFORMANCE_USERS_DISPOSABLE',
  'QUIRE_CONFORMANCE_CREATE_ACCOUNTS',
  'QUIRE_CONFORMANCE_ACCOUNTS_ADMIN',
  'QUIRE_CONFORMANCE_BUCKET_READER',
  'QUIRE_CONFORMANCE_READ_ONLY',
  'QUIRE_CONFORMANCE_JOURNAL',
  'QUIRE_CONFORMANCE_MAX_BODY_BYTES',
  'QUIRE_CONFORMANCE_BACKOFF',
  'QUIRE_CONFORMANCE_ALLOW_FLUSH',
  'QUIRE_CONFORMANCE_QUOTAS',
  'QUIRE_CONFORMANCE_WRITER_URL',
  'QUIRE_CONFORMANCE_REPLICA_WAIT',
  'QUIRE_CONFORMANCE_REPLICA_SETTLE_MS',
] as const;

interface Identity {
  name: string;
  password: string;
}

export interface SuiteEnv {
  base: string;
  /** Where the suites note the buckets they create, for the final cleanup. */
  journal: string;
  users: Identity[];
  createAccounts: boolean;
  accountsAdmin?: Identity | undefined;
  bucketReader?: Identity | undefined;
  readOnly?: boolean | undefined;
  maxBodyBytes?: number | undefined;
  backoffSeconds?: number | undefined;
  quotas?: string | undefined;
  allowFlush?: boolean | undefined;
  writerUrl?: string | undefined;
  replicaWaitSeconds?: number | undefined;
  replicaSettleMs?: number | undefined;
}

/** Sets or clears a variable (a run must not inherit the previous one's). */
function put(key: (typeof ENV_KEYS)[number], value: string | undefined): void {
  if (value === undefined) delete process.env[key];
  else process.env[key] = value;
}

const numberText = (value: number | undefined) => (value === undefined ? undefined : String(value));

/** Sets the suites' variables; answers the function that restores them. */
export function setSuiteEnv(env: SuiteEnv): () => void {
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  const credentials = (identity: Identity) => `${identity.name}:${identity.password}`;
  put('QUIRE_CONFORMANCE_URL', env.base);
  put('QUIRE_CONFORMANCE_JOURNAL', env.journal);
  put('QUIRE_CONFORMANCE_USERS', env.users.length ? JSON.stringify(env.users) : undefined);
  put('QUIRE_CONFORMANCE_USERS_DISPOSABLE', undefined);
  put('QUIRE_CONFORMANCE_CREATE_ACCOUNTS', env.createAccounts ? '1' : undefined);
  if (env.accountsAdmin) put('QUIRE_CONFORMANCE_ACCOUNTS_ADMIN', credentials(env.accountsAdmin));
  if (env.bucketReader) put('QUIRE_CONFORMANCE_BUCKET_READER', credentials(env.bucketReader));
  put('QUIRE_CONFORMANCE_READ_ONLY', env.readOnly ? '1' : undefined);
  if (env.maxBodyBytes) put('QUIRE_CONFORMANCE_MAX_BODY_BYTES', String(env.maxBodyBytes));
  put('QUIRE_CONFORMANCE_BACKOFF', numberText(env.backoffSeconds));
  put('QUIRE_CONFORMANCE_QUOTAS', env.quotas);
  put('QUIRE_CONFORMANCE_WRITER_URL', env.writerUrl);
  put('QUIRE_CONFORMANCE_REPLICA_WAIT', numberText(env.replicaWaitSeconds));
  put('QUIRE_CONFORMANCE_REPLICA_SETTLE_MS', numberText(env.replicaSettleMs));
  // Only ever on request: a flush wipes the deployment.
  put('QUIRE_CONFORMANCE_ALLOW_FLUSH', env.allowFlush ? '1' : undefined);
  return () => {
    for (const [k, v] of Object.entries(saved)) put(k as (typeof ENV_KEYS)[number], v);
  };
}
