/** A SQLite session as callers see it: one facet per concern over the state they share (session-state.ts). */
import type { StorageSession } from '../types.js';
import { SqliteNonces } from './nonces.js';
import { SqliteObjects } from './objects.js';
import { SqliteOutbox } from './outbox.js';
import { SqlitePermissions } from './permissions.js';
import type { SqliteSessionState } from './session-state.js';

/** No `preload`: a lookup by id costs microseconds in process, there is no round trip to save. */
export class SqliteSession implements StorageSession {
  readonly objects: SqliteObjects;
  readonly permissions: SqlitePermissions;
  readonly outbox: SqliteOutbox;
  readonly nonces: SqliteNonces;

  constructor(state: SqliteSessionState) {
    this.objects = new SqliteObjects(state);
    this.permissions = new SqlitePermissions(state);
    this.outbox = new SqliteOutbox(state);
    this.nonces = new SqliteNonces(state);
  }
}
