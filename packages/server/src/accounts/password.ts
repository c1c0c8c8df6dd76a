/** Account passwords are stored as argon2id hashes (PHC strings); never in clear. */
import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

export function hashPassword(password: string): Promise<string> {
  // @node-rs/argon2 defaults: argon2id, 19 MiB, 2 passes (OWASP's recommended minimum).
  return hash(password);
}

/**
 * A hash of a random password nobody knows, made exactly as `hashPassword` makes them: checking
 * a password against it costs what checking against an account's hash costs, so a name that is
 * no account takes as long to refuse as a wrong password (the time must not tell which exist).
 */
export function dummyHash(): Promise<string> {
  return hashPassword(randomBytes(32).toString('base64'));
}

/**
 * False for a wrong password and for a stored value that is not an argon2 hash. The comparison
 * of the derived key with the stored one is constant-time (RustCrypto's `password-hash` Output, `subtle`).
 */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
