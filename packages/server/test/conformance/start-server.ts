/**
 * Boots the server on a real port for the conformance suite (which speaks plain HTTP and never
 * imports the server). Used by the vitest global setups of the root config.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildServer } from '../../src/app.js';
import { loadSettings } from '../../src/config.js';
import type { Storage } from '../../src/storage/types.js';

declare module 'vitest' {
  export interface ProvidedContext {
    conformanceUrl: string;
  }
}

const MAX_BODY_BYTES = 256 * 1024;
/** The quota limits of the one bucket the quotas suite uses (the same for both backends' setups). */
const QUOTAS = {
  bucket: 'conformance-quotas',
  bucket_max_items: 4,
  bucket_max_bytes: 2500,
  max_bytes_per_item: 1024,
  collection_max_items: 2,
};

const HMAC_SECRET = 'conformance-secret';
const ACCOUNTS_ADMIN = 'conformance-admin';

export async function startForConformance(project: TestProject, storage: Storage): Promise<() => Promise<void>> {
  // A Basic Auth identity granted read on every bucket by settings: the permission matrix's
  // "globally granted principal" (its user id is the HMAC of its credentials, §9.1).
  // Fixed, not random: both backends' setups run in one process and share its environment.
  const bucketReader = 'conformance-auditor:conformance-auditor-password';
  const bucketReaderId = `basicauth:${createHmac('sha256', HMAC_SECRET).update(bucketReader).digest('hex')}`;
  process.env.QUIRE_CONFORMANCE_BUCKET_READER = bucketReader;
  const files = mkdtempSync(join(tmpdir(), 'quire-conformance-files-'));
  const settings = loadSettings({
    env: {},
    overrides: {
      userid_hmac_secret: HMAC_SECRET,
      log_level: 'silent',
      host: '127.0.0.1',
      port: 0,
      max_body_bytes: MAX_BODY_BYTES,
      // The history plugin (capability `history`, suites/history.test.ts).
      history_enabled: true,
      // The quotas plugin (capability `quotas`, suites/quotas.test.ts): limits on one bucket of
      // its own only, so no other suite meets them.
      quotas_enabled: true,
      quotas_buckets: {
        [QUOTAS.bucket]: {
          max_items: QUOTAS.bucket_max_items,
          max_bytes: QUOTAS.bucket_max_bytes,
          max_bytes_per_item: QUOTAS.max_bytes_per_item,
        },
      },
      quotas_collections: { [QUOTAS.bucket]: { max_items: QUOTAS.collection_max_items } },
      bucket_read_principals: [bucketReaderId],
      experimental_collection_schema_validation: true,
      // Capability shown; the suite flushes only with QUIRE_CONFORMANCE_ALLOW_FLUSH=1, never set
      // here: a flush would wipe the data of the test files running in parallel.
      flush_endpoint_enabled: true,
      // Accounts with open sign-up and one administrator, created below (the suite reads its
      // credentials from QUIRE_CONFORMANCE_ACCOUNTS_ADMIN).
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
      account_write_principals: [`account:${ACCOUNTS_ADMIN}`],
      // Attachments (suites/attachments.test.ts), files in a directory of this run, served by the server.
      attachment_enabled: true,
      attachment_base_path: files,
    },
  });
  // The body limit is not public in `GET /`; tell the suite so its 413 test runs.
  process.env.QUIRE_CONFORMANCE_MAX_BODY_BYTES = String(MAX_BODY_BYTES);
  // Nor are the quota limits.
  process.env.QUIRE_CONFORMANCE_QUOTAS = JSON.stringify(QUOTAS);
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a TCP port');
  // Fixed, not random: both conformance projects' setups run in one process and share its env.
  const adminPassword = 'conformance-admin-password';
  const signUp = await fetch(`http://127.0.0.1:${address.port}/v1/accounts/${ACCOUNTS_ADMIN}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: { password: adminPassword } }),
  });
  if (signUp.status !== 201)
    throw new Error(`conformance: cannot create the accounts administrator (${signUp.status})`);
  process.env.QUIRE_CONFORMANCE_ACCOUNTS_ADMIN = `${ACCOUNTS_ADMIN}:${adminPassword}`;
  project.provide('conformanceUrl', `http://127.0.0.1:${address.port}/v1`);
  return async () => {
    await app.close();
    await storage.close();
    rmSync(files, { recursive: true, force: true });
  };
}
