/** Account passwords are stored as argon2id hashes (PHC strings); never in clear. */
import { hash, verify } from '@node-rs/argon2';

export function hashPassword(password: string): Promise<string> {
  // @node-rs/argon2 defaults: argon2id, 19 MiB, 2 passes (OWASP's recommended minimum).
  return hash(password);
}

/** False for a wrong password and for a stored value that is not an argon2 hash. */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
