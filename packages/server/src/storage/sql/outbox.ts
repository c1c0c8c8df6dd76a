/**
 * The outbox facet of a SQL session: work stored by a transaction, done after it commits (the
 * history). Items are inserted with COMMIT, in its round trip; a drainer moves them into a
 * scope without their data ever leaving the database.
 */
import { StorageError } from '../errors.js';
import { tableOf } from '../tables.js';
import type { OutboxInput, OutboxStore, OutboxTarget } from '../types.js';
import { likePrefix } from './queries.js';
import type { SqlSessionState } from './session-state.js';

export class SqlOutbox implements OutboxStore {
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
  }

  async enqueue(topic: string, items: OutboxInput[]): Promise<void> {
    this.#s.assertWritable();
    // A plain INSERT per item (requests touch one bucket, so one item), run at commit in
    // COMMIT's own round trip.
    const transaction = this.#s.transaction;
    if (!transaction) throw new StorageError('enqueue needs a write transaction');
    for (const { key, payload } of items) {
      transaction.beforeCommit('INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)', [
        topic,
        key,
        JSON.stringify(payload),
      ]);
    }
  }

  async moveToScope(topic: string, key: string, limit: number, { scope, whileExists }: OutboxTarget): Promise<number> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    // The lock comes first: two movers of one scope take their items one after the other,
    // so the timestamps follow the order of the items.
    const { current, now } = await s.lockScope(scope);
    // One statement, the data never leaves the database: take the items, store each element
    // of their payloads at first, first + 1..., and move the scope timestamp to the last one.
    const [row] = await s.query<{ taken: number }>(
      // The oldest `limit` items are those this statement sees up to the last one chosen (rows
      // of transactions still open are invisible to both). A range, not `seq IN (chosen)`:
      // planned as a semi-join, that subquery is rescanned per row and each rescan skips the
      // rows already deleted, taking more than `limit`.
      `WITH chosen AS MATERIALIZED (
         SELECT seq FROM outbox WHERE topic = $1 AND key = $2 ORDER BY seq LIMIT $3 FOR UPDATE
       ),
       taken AS (
         DELETE FROM outbox WHERE topic = $1 AND key = $2 AND seq <= (SELECT max(seq) FROM chosen)
         RETURNING seq, payload
       ),
       stored AS (
         INSERT INTO ${tableOf(scope)} (parent_id, resource_name, id, last_modified, data, deleted)
         SELECT $4, $5, gen_random_uuid()::text,
           $6::bigint + row_number() OVER (ORDER BY taken.seq, element.position) - 1, element.value, FALSE
         FROM taken
           CROSS JOIN LATERAL jsonb_array_elements(taken.payload::jsonb) WITH ORDINALITY AS element(value, position)
         WHERE EXISTS (SELECT 1 FROM objects WHERE parent_id = $7 AND resource_name = $8 AND id = $9 AND NOT deleted)
         RETURNING last_modified
       ),
       stamped AS (
         UPDATE timestamps SET last_modified = (SELECT max(last_modified) FROM stored)
         WHERE parent_id = $4 AND resource_name = $5 AND EXISTS (SELECT 1 FROM stored)
       )
       SELECT count(*)::int AS taken FROM taken`,
      [
        topic,
        key,
        limit,
        scope.parentId,
        scope.resourceName,
        Math.max(now, current + 1),
        whileExists.scope.parentId,
        whileExists.scope.resourceName,
        whileExists.id,
      ],
    );
    s.writes += row?.taken ?? 0;
    return row?.taken ?? 0;
  }

  async keys(topic: string, key?: string): Promise<string[]> {
    const rows = await this.#s.query<{ key: string }>(
      key === undefined
        ? 'SELECT DISTINCT key FROM outbox WHERE topic = $1 ORDER BY key'
        : 'SELECT key FROM outbox WHERE topic = $1 AND key = $2 LIMIT 1',
      key === undefined ? [topic] : [topic, key],
    );
    return rows.map((row) => row.key);
  }

  async deleteTree(uri: string): Promise<void> {
    this.#s.assertWritable();
    await this.#s.query(`DELETE FROM outbox WHERE key = $1 OR key LIKE $2 ESCAPE '\\'`, [uri, likePrefix(`${uri}/`)]);
  }
}
