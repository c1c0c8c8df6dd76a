import { describe, expect, it } from 'vitest';
import { nextOutboxEntry } from './outbox.js';

describe('nextOutboxEntry', () => {
  it('creates a record the server never had with If-None-Match semantics (op create, base null)', () => {
    expect(nextOutboxEntry('a', undefined, 'create', null, 1, 'r1')).toEqual({ id: 'a', op: 'create', base: null, rev: 'r1', seq: 1 });
  });

  it('keeps a never-pushed record a creation when it is updated', () => {
    const created = nextOutboxEntry('a', undefined, 'create', null, 1, 'r1')!;
    expect(nextOutboxEntry('a', created, 'update', null, 2, 'r2')).toEqual({ id: 'a', op: 'create', base: null, rev: 'r2', seq: 1 });
  });

  it('drops the entry when a never-pushed record is deleted', () => {
    const created = nextOutboxEntry('a', undefined, 'create', null, 1, 'r1')!;
    expect(nextOutboxEntry('a', created, 'delete', null, 2, 'r2')).toBeNull();
  });

  it('updates and deletes a synced record on the version it was made on', () => {
    const updated = nextOutboxEntry('a', undefined, 'update', 100, 1, 'r1')!;
    expect(updated).toMatchObject({ op: 'update', base: 100 });
    // A later local write keeps the original base: that is what the server must still hold.
    expect(nextOutboxEntry('a', updated, 'delete', 100, 2, 'r2')).toMatchObject({ op: 'delete', base: 100, rev: 'r2' });
  });

  it('re-creating a record deleted locally but not yet pushed becomes an update of the server version', () => {
    const deleted = nextOutboxEntry('a', undefined, 'delete', 100, 1, 'r1')!;
    expect(nextOutboxEntry('a', deleted, 'create', null, 2, 'r2')).toMatchObject({ op: 'update', base: 100 });
  });

  it('keeps a blocked (manual conflict) entry blocked', () => {
    const blocked = { id: 'a', op: 'update' as const, base: 5, rev: 'r1', seq: 1, blocked: true };
    expect(nextOutboxEntry('a', blocked, 'update', 5, 2, 'r2')).toMatchObject({ blocked: true });
  });
});
