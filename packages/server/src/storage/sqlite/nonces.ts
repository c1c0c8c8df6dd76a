/** The nonces facet of a SQLite session: single-use tokens, expiring on the process's clock. */
import type { NonceStore } from '../types.js';
import type { SqliteSessionState } from './session-state.js';

export class SqliteNonces implements NonceStore {
  readonly #s: SqliteSessionState;

  constructor(state: SqliteSessionState) {
    this.#s = state;
  }

  async store(nonce: string, ttlSeconds: number): Promise<void> {
    this.#s.assertWritable();
    this.#s.db.run('INSERT OR IGNORE INTO pagination_nonces (nonce, expires_at) VALUES (?, ?)', [
      nonce,
      Date.now() + ttlSeconds * 1000,
    ]);
  }

  async consume(nonce: string): Promise<boolean> {
    this.#s.assertWritable();
    this.#s.db.run('DELETE FROM pagination_nonces WHERE expires_at < ?', [Date.now()]);
    return this.#s.db.run('DELETE FROM pagination_nonces WHERE nonce = ?', [nonce]) === 1;
  }
}
