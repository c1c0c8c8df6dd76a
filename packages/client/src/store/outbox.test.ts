import { describe, expect, it } from 'vitest';
import { afterPublish, afterSettlement, nextOutboxEntry } from './outbox.js';

describe('nextOutboxEntry', () => {
  it('creates a record the server never had with If-None-Match semantics (op create, base null)', () => {
    expect(nextOutboxEntry('a', undefined, 'create', null, 1, 'r1')).toEqual({
      id: 'a',
      op: 'create',
      base: null,
      rev: 'r1',
      seq: 1,
    });
  });

  it('keeps a never-pushed record a creation when it is updated', () => {
    const created = nextOutboxEntry('a', undefined, 'create', null, 1, 'r1')!;
    expect(nextOutboxEntry('a', created, 'update', null, 2, 'r2')).toEqual({
      id: 'a',
      op: 'create',
      base: null,
      rev: 'r2',
      seq: 1,
    });
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

describe('afterPublish', () => {
  const sent = { id: 'a', op: 'update' as const, base: 100, rev: 'r1', seq: 1 };
  const newRev = () => 'r9';

  it('leaves nothing pending when the published version is the latest local one', () => {
    expect(afterPublish(sent, sent, 200, newRev)).toBeNull();
    expect(afterPublish({ ...sent, op: 'delete' }, { ...sent, op: 'delete' }, null, newRev)).toBeNull();
  });

  it('rebases a change written during the push on the version just published', () => {
    const current = { ...sent, rev: 'r2' };
    expect(afterPublish(sent, current, 200, newRev)).toEqual({ ...current, op: 'update', base: 200 });
    expect(afterPublish(sent, { ...current, op: 'delete' }, 200, newRev)).toMatchObject({ op: 'delete', base: 200 });
  });

  it('creates again, over the tombstone, a record re-created while its deletion was in flight', () => {
    const deletion = { ...sent, op: 'delete' as const };
    expect(afterPublish(deletion, { ...sent, op: 'update', rev: 'r2' }, null, newRev)).toMatchObject({
      op: 'create',
      base: null,
      rev: 'r2',
    });
  });

  it('deletes on the server a record created and then deleted locally before the creation was acknowledged', () => {
    const creation = { ...sent, op: 'create' as const, base: null };
    expect(afterPublish(creation, undefined, 200, newRev)).toEqual({
      id: 'a',
      op: 'delete',
      base: 200,
      rev: 'r9',
      seq: 1,
    });
  });
});

describe('afterSettlement', () => {
  const remote = { id: 'a', last_modified: 200, title: 'server' };
  const newRev = () => 'r9';

  it('deleted on both sides leaves neither record nor change', () => {
    expect(afterSettlement('a', null, null, 5, newRev)).toEqual({ record: null, entry: null });
  });

  it('keeping what the server holds converges without a change to push', () => {
    expect(afterSettlement('a', { id: 'a', title: 'server' }, remote, 5, newRev)).toEqual({
      record: remote,
      entry: null,
    });
  });

  it('a kept local version is pushed on top of the server version, or created over its deletion', () => {
    expect(afterSettlement('a', { id: 'a', title: 'mine', last_modified: 1 }, remote, 5, newRev)).toEqual({
      record: { id: 'a', title: 'mine', last_modified: 200 },
      entry: { id: 'a', op: 'update', base: 200, rev: 'r9', seq: 5 },
    });
    expect(afterSettlement('a', { title: 'mine' }, null, 5, newRev)).toEqual({
      record: { id: 'a', title: 'mine' },
      entry: { id: 'a', op: 'create', base: null, rev: 'r9', seq: 5 },
    });
  });

  it('a kept deletion deletes the server version', () => {
    expect(afterSettlement('a', null, remote, 5, newRev)).toEqual({
      record: null,
      entry: { id: 'a', op: 'delete', base: 200, rev: 'r9', seq: 5 },
    });
  });
});
