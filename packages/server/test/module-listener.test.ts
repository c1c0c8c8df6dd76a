/**
 * Listeners from modules (setting `event_listeners` with `use` naming a module, as Kinto's
 * `event_listeners.<name>.use`): they run in the request's transaction, so a listener that
 * throws fails the request and rolls it back (interface spec "Events" 1, protocol-reference
 * §10.4); `afterCommit` runs once committed; bad modules stop the boot.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { EventPayload } from '../src/events/types.js';
import type { ListenerEvent } from '../src/listeners/module.js';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = basicAuth('alice');
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), 'quire-listener-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/**
 * A line of the audit listener (fixtures/audit-listener.mjs): the event, in the transaction or
 * after commit; its close.
 */
type AuditLine =
  | ({ listener: string; phase: 'transaction' } & ListenerEvent)
  | { listener: string; phase: 'committed'; payload: EventPayload }
  | { listener: string; phase: 'closed' };

/** The lines the audit listener wrote, parsed. */
function auditLines(file: string): AuditLine[] {
  try {
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}

/** Waits for after-commit deliveries, which never hold the response back. */
async function eventually(check: () => void): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return check();
    } catch (error) {
      if (attempt > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

describeOnBackends('event listeners from modules', {}, ({ name, serverWith }) => {
  it('run in the transaction with payload and impacted objects, then after commit, then close', async () => {
    const file = join(workDir, `audit-1-${name}.jsonl`);
    const app = await serverWith({
      event_listeners: [{ name: 'audit', use: fixture('audit-listener.mjs'), resources: ['record'], file }],
    } as never);
    await app.inject({ method: 'PUT', url: '/v1/buckets/b1', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b1/collections/c', headers: alice });
    const created = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b1/collections/c/records/r1',
      headers: alice,
      payload: { data: { n: 1 } },
    });
    expect(created.statusCode).toBe(201);
    await app.inject({
      method: 'PATCH',
      url: '/v1/buckets/b1/collections/c/records/r1',
      headers: alice,
      payload: { data: { n: 2 } },
    });

    await eventually(() => expect(auditLines(file).filter((line) => line.phase === 'committed')).toHaveLength(2));
    const inTransaction = auditLines(file).filter((line) => line.phase === 'transaction');
    // `resources: ["record"]`: the bucket and collection creations are not delivered.
    expect(inTransaction.map((line) => [line.payload.action, line.payload.resource_name])).toEqual([
      ['create', 'record'],
      ['update', 'record'],
    ]);
    expect(inTransaction[0]).toMatchObject({
      listener: 'audit',
      payload: {
        uri: '/buckets/b1/collections/c/records/r1',
        bucket_id: 'b1',
        collection_id: 'c',
        record_id: 'r1',
        timestamp: created.json().data.last_modified,
      },
      impacted_objects: [{ new: { id: 'r1', n: 1 } }],
    });
    expect(inTransaction[1]?.impacted_objects).toEqual([
      { new: expect.objectContaining({ n: 2 }), old: expect.objectContaining({ n: 1 }) },
    ]);
    // The listener changed its copy, not the stored record.
    expect(
      (await app.inject({ url: '/v1/buckets/b1/collections/c/records/r1', headers: alice })).json().data.tampered,
    ).toBeUndefined();

    await app.close();
    expect(auditLines(file).at(-1)).toEqual({ listener: 'audit', phase: 'closed' });
  });

  it('a listener that throws fails the request with a 500 and rolls it back, batch included', async () => {
    const file = join(workDir, `audit-2-${name}.jsonl`);
    const app = await serverWith({
      event_listeners: [{ name: 'audit', use: fixture('audit-listener.mjs'), file, refuse_field: 'secret' }],
    } as never);
    await app.inject({ method: 'PUT', url: '/v1/buckets/b2', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b2/collections/c', headers: alice });

    const refused = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b2/collections/c/records/r1',
      headers: alice,
      payload: { data: { secret: 1 } },
    });
    expect(refused.statusCode).toBe(500);
    expect(refused.json()).toMatchObject({ code: 500, errno: 999, error: 'Internal Server Error' });
    expect(refused.body).not.toContain('secret is not allowed');
    expect((await app.inject({ url: '/v1/buckets/b2/collections/c/records/r1', headers: alice })).statusCode).toBe(404);

    const batch = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          { method: 'PUT', path: '/buckets/b2/collections/c/records/ok', body: { data: { fine: true } } },
          { method: 'PUT', path: '/buckets/b2/collections/c/records/ko', body: { data: { secret: 2 } } },
        ],
      },
    });
    // The batch's events reach the listener together, before its one commit: all or nothing.
    expect(batch.statusCode).toBe(500);
    const listing = await app.inject({ url: '/v1/buckets/b2/collections/c/records', headers: alice });
    expect(listing.json().data).toEqual([]);
    // Nothing that was rolled back is announced as committed.
    expect(
      auditLines(file).filter((line) => line.phase === 'committed' && line.payload.resource_name === 'record'),
    ).toEqual([]);
    await app.close();
  });

  it('a protocol error thrown by a listener is the answer the client gets', async () => {
    const app = await serverWith({
      event_listeners: [{ name: 'no-deletes', use: fixture('protocol-error-listener.mjs') }],
    } as never);
    await app.inject({ method: 'PUT', url: '/v1/buckets/b3', headers: alice });
    const refused = await app.inject({ method: 'DELETE', url: '/v1/buckets/b3', headers: alice });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({
      code: 403,
      errno: 121,
      error: 'Forbidden',
      message: 'Deletions are disabled here.',
    });
    expect((await app.inject({ url: '/v1/buckets/b3', headers: alice })).statusCode).toBe(200);
    await app.close();
  });

  it('a module that cannot serve as a listener stops the boot with a clear message', async () => {
    const boot = (listener: Record<string, unknown>) =>
      serverWith({ event_listeners: [{ name: 'x', ...listener }] } as never);
    await expect(boot({ use: './no/such/listener.mjs' })).rejects.toThrow(
      /listener "x"\): no module at .*no\/such\/listener\.mjs/,
    );
    await expect(boot({ use: 'quire-no-such-listener-package' })).rejects.toThrow(
      /unknown listener "quire-no-such-listener-package"/,
    );
    await expect(boot({ use: fixture('not-a-listener.mjs') })).rejects.toThrow(/exports no createListener/);
    // createListener() refusing its options (no `file`) is reported with the listener's name.
    await expect(boot({ use: fixture('audit-listener.mjs') })).rejects.toThrow(
      /listener "x"\): createListener\(\) of .* failed: file is required/,
    );
  });
});
