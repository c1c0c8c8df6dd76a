/**
 * The outbox facet of a SQLite session: work stored by a transaction, done after it commits
 * (the history). Items are inserted just before COMMIT.
 */
import { randomUUID } from 'node:crypto';
import { StorageError } from '../errors.js';
import { tableOf } from '../tables.js';
import type { OutboxInput, OutboxStore, OutboxTarget } from '../types.js';
import { belowRange } from './queries.js';
import type { SqliteSessionState } from './session-state.js';

export class SqliteOutbox implements OutboxStore {
  readonly #s: SqliteSessionState;

  constructor(state: SqliteSessionState) {
    this.#s = state;
  }

  async enqueue(topic: string, items: OutboxInput[]): Promise<void> {
    this.#s.assertWritable();
    for (const { key, payload } of items) this.#s.outbox.push([topic, key, JSON.stringify(payload)]);
  }

  async moveToScope(topic: string, key: string, limit: number, { scope, whileExists }: OutboxTarget): Promise<number> {
    const s = this.#s;
    s.assertWritable();
    const { current, now } = s.current(scope);
    const items = s.db.all<{ seq: number; payload: string }>(
      'SELECT seq, payload FROM outbox WHERE topic = ? AND key = ? ORDER BY seq LIMIT ?',
      [topic, key, limit],
    );
    if (items.length === 0) return 0;
    s.db.run('DELETE FROM outbox WHERE topic = ? AND key = ? AND seq <= ?', [topic, key, items.at(-1)!.seq]);
    const exists = s.db.get(
      'SELECT 1 AS found FROM objects WHERE parent_id = ? AND resource_name = ? AND id = ? AND NOT deleted',
      [whileExists.scope.parentId, whileExists.scope.resourceName, whileExists.id],
    );
    if (!exists) return items.length;
    // Each element of the payloads, in order, at first, first + 1…: above every timestamp of the scope.
    const first = Math.max(now, current + 1);
    let stored = 0;
    for (const { payload } of items) {
      const elements: unknown = JSON.parse(payload);
      if (!Array.isArray(elements)) throw new StorageError(`outbox item of ${topic} ${key} does not hold an array`);
      for (const element of elements) {
        s.db.run(
          `INSERT INTO ${tableOf(scope)} (parent_id, resource_name, id, last_modified, data, deleted)
           VALUES (?, ?, ?, ?, jsonb(?), 0)`,
          [scope.parentId, scope.resourceName, randomUUID(), first + stored++, JSON.stringify(element)],
        );
      }
    }
    if (stored > 0) s.setScopeTimestamp(scope, first + stored - 1);
    return items.length;
  }

  async keys(topic: string, key?: string): Promise<string[]> {
    const rows =
      key === undefined
        ? this.#s.db.all<{ key: string }>('SELECT DISTINCT key FROM outbox WHERE topic = ? ORDER BY key', [topic])
        : this.#s.db.all<{ key: string }>('SELECT key FROM outbox WHERE topic = ? AND key = ? LIMIT 1', [topic, key]);
    return rows.map((row) => row.key);
  }

  async deleteTree(uri: string): Promise<void> {
    this.#s.assertWritable();
    const [low, high] = belowRange(uri);
    this.#s.db.run('DELETE FROM outbox WHERE key = ? OR (key >= ? AND key < ?)', [uri, low, high]);
  }
}
