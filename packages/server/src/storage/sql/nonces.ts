/** The nonces facet of a SQL session: single-use tokens, expiring on the database's clock. */
import type { NonceStore } from '../types.js';
import type { SqlSessionState } from './session-state.js';

export class SqlNonces implements NonceStore {
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
  }

  async store(nonce: string, ttlSeconds: number): Promise<void> {
    this.#s.assertWritable();
    await this.#s.query(
      `INSERT INTO pagination_nonces (nonce, expires_at)
       VALUES ($1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + $2::bigint * 1000)
       ON CONFLICT (nonce) DO NOTHING`,
      [nonce, ttlSeconds],
    );
  }

  async consume(nonce: string): Promise<boolean> {
    this.#s.assertWritable();
    await this.#s.query(
      'DELETE FROM pagination_nonces WHERE expires_at < floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint',
      [],
    );
    const rows = await this.#s.query<{ nonce: string }>(
      'DELETE FROM pagination_nonces WHERE nonce = $1 RETURNING nonce',
      [nonce],
    );
    return rows.length === 1;
  }
}
