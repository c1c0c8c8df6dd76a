/**
 * `GET /` capabilities (protocol-reference §11.1, §13): exactly the features the settings
 * enable, each with a description and a url.
 */
import { describe, expect, it } from 'vitest';
import { useEmbeddedStore } from '../../test/helpers/embedded-server.js';

const { serverWith } = useEmbeddedStore();

async function capabilities(
  overrides: Parameters<typeof serverWith>[0],
): Promise<Record<string, Record<string, unknown>>> {
  const app = await serverWith(overrides);
  try {
    return (await app.inject({ url: '/v1/' })).json().capabilities;
  } finally {
    await app.close();
  }
}

describe('GET / capabilities', () => {
  it('by default: Basic Auth, the monitor, the personal bucket, permissions endpoint, partial replicas', async () => {
    expect(Object.keys(await capabilities({})).sort()).toEqual([
      'basicauth',
      'changes',
      'default_bucket',
      'partial_replicas',
      'permissions_endpoint',
    ]);
  });

  it('with every optional feature off: none', async () => {
    const off = {
      multiauth_policies: ['account'],
      default_bucket_enabled: false,
      experimental_permissions_endpoint: false,
      changes_enabled: false,
      partial_replicas_enabled: false,
    };
    // Accounts is a policy here: its capability is the only one.
    expect(Object.keys(await capabilities(off))).toEqual(['accounts']);
  });

  it('with every optional feature on: each, with a description and a url', async () => {
    const all = await capabilities({
      multiauth_policies: ['account', 'basicauth'],
      history_enabled: true,
      flush_endpoint_enabled: true,
      experimental_collection_schema_validation: true,
    });
    expect(Object.keys(all).sort()).toEqual([
      'accounts',
      'basicauth',
      'changes',
      'default_bucket',
      'flush_endpoint',
      'history',
      'partial_replicas',
      'permissions_endpoint',
      'schema',
    ]);
    for (const [name, entry] of Object.entries(all)) {
      expect(entry, name).toMatchObject({
        description: expect.any(String),
        url: expect.stringMatching(/^https?:\/\//),
      });
    }
  });
});

describe('GET / settings', () => {
  it('show every request budget of the README table, with the values in force', async () => {
    const app = await serverWith({ storage_statement_timeout_ms: 4_000, max_query_filters: 7 });
    try {
      const { settings } = (await app.inject({ url: '/v1/' })).json() as { settings: Record<string, unknown> };
      expect(settings).toMatchObject({
        max_query_filters: 7,
        storage_statement_timeout_ms: 4_000,
        storage_pool_max_share: 0.25,
        storage_pool_max_share_per_address: 0.5,
        storage_costly_statements_per_identity: 1,
        storage_costly_statements_per_address: 2,
        batch_timeout_seconds: 30,
        batch_max_response_bytes: 32 * 1024 * 1024,
        max_page_bytes: 8 * 1024 * 1024,
        max_requests_in_progress_per_identity: 4,
        max_requests_queued_per_identity: 64,
        requests_queue_timeout_seconds: 10,
      });
      for (const name of ['max_header_bytes', 'max_body_bytes', 'max_json_depth', 'max_json_keys', 'max_path_bytes'])
        expect(typeof settings[name], name).toBe('number');
    } finally {
      await app.close();
    }
  });
});
