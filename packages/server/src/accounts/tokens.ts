/**
 * Validation keys and temporary passwords (account validation, 1.22). Both are random UUID4s
 * sent by mail; the store keeps only a SHA-256 digest of them, as a single-use, expiring nonce
 * (the storage's nonce table, shared by every process): no new table, nothing usable leaks
 * from a database dump. A digest suffices, no slow hash: a UUID4 carries 122 random bits.
 *
 * A temporary password is also bound to the account's `last_modified` when it was issued, so
 * that any later change to the account (a new password, another reset...) voids it.
 */
import { createHash, randomUUID } from 'node:crypto';
import { parseBasicAuthorization } from '../auth/basicauth.js';
import type { AccountSettings } from './settings.js';
import { isPlainObject } from '../engine/body.js';
import type { NonceStore, StorageSession } from '../storage/types.js';
import { ACCOUNT_SCOPE } from './ids.js';

function digest(...parts: Array<string | number>): string {
  return createHash('sha256').update(parts.join('\0'), 'utf8').digest('hex');
}

const activationNonce = (id: string, key: string) => `account-activation:${digest(id, key)}`;
const resetNonce = (id: string, version: number, password: string) => `account-reset:${digest(id, version, password)}`;

export async function createActivationKey(nonces: NonceStore, settings: AccountSettings, id: string): Promise<string> {
  const key = randomUUID();
  await nonces.store(activationNonce(id, key), settings.account_validation_key_ttl_seconds);
  return key;
}

/** True once for a key issued for this account and not expired. */
export function consumeActivationKey(nonces: NonceStore, id: string, key: string): Promise<boolean> {
  return nonces.consume(activationNonce(id, key));
}

export async function createTemporaryPassword(
  nonces: NonceStore,
  settings: AccountSettings,
  id: string,
  version: number,
): Promise<string> {
  const password = randomUUID();
  await nonces.store(resetNonce(id, version, password), settings.account_reset_password_ttl_seconds);
  return password;
}

/**
 * Kinto's rule: a temporary password authenticates once, only to set a new password — a
 * request on this account whose `data` holds `password` and nothing else. Consumed in the
 * caller's transaction: if the change fails, it stays usable.
 */
export async function useTemporaryPassword(
  session: StorageSession,
  settings: AccountSettings,
  authorization: string | undefined,
  id: string,
  sentData: unknown,
): Promise<boolean> {
  if (!settings.account_validation) return false;
  if (!isPlainObject(sentData) || Object.keys(sentData).length !== 1 || typeof sentData.password !== 'string')
    return false;
  const given = parseBasicAuthorization(authorization);
  if (!given || given.username !== id) return false;
  const account = await session.objects.get(ACCOUNT_SCOPE, id);
  if (!account) return false;
  return session.nonces.consume(resetNonce(id, account.last_modified, given.password));
}
