/**
 * The nonces facet: single-use tokens.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Storage } from '../types.js';
import type { Suite } from './context.js';

export function describeNonces(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  suite.beforeEach((current) => ({ storage } = current));

  section('nonces', () => {
    test('a stored nonce can be consumed once', async () => {
      const nonce = `pagination-token-${randomUUID()}`;
      expect(await storage.transaction((session) => session.nonces.consume(nonce))).toBe(false);
      await storage.transaction((session) => session.nonces.store(nonce, 600));
      expect(await storage.transaction((session) => session.nonces.consume(nonce))).toBe(true);
      expect(await storage.transaction((session) => session.nonces.consume(nonce))).toBe(false);
    });
  });
}
