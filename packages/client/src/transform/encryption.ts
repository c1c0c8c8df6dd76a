/**
 * End-to-end encrypted records, as a remote transformer: the server stores, for each record, only
 * its id, its timestamps and `{ quire_e2e: 1, iv, ciphertext }` — AES-GCM (256-bit key, a fresh
 * 96-bit IV per write) of the record's fields as JSON, with the record id as additional
 * authenticated data (a ciphertext moved to another id does not decrypt). The replica holds the
 * decrypted records, so local queries and indexes work as usual.
 *
 * The key is the app's (`key`: a non-extractable AES-GCM CryptoKey it keeps) or derived from a
 * passphrase with PBKDF2-SHA-256 (`iterations`, default 600,000, OWASP's advice) and a salt that
 * is not secret but should be unique: by default `quire-e2e:<bucket>/<collection>`.
 * A record that does not decrypt — a wrong key, a tampered or plain record — is a
 * `DecryptionError` (QUIRE_ERR_CRYPTO_DECRYPT): the sync fails before anything is overwritten.
 *
 * What it does not hide: ids, timestamps, how many records and about how big, who writes when.
 * An empty collection cannot tell a wrong key: the first records written with it are readable
 * only with it. WebCrypto: browsers in secure contexts (https, localhost) and Node ≥ 20.
 */
import { DecryptionError } from '../errors.js';
import type { RemoteTransformer, TransformContext } from './transformers.js';

export interface EncryptionOptions {
  /** The app's key (AES-GCM, 256 bits, usages encrypt + decrypt). */
  key?: CryptoKey;
  /** Or a passphrase the key is derived from. */
  passphrase?: string;
  /** PBKDF2 salt (default `quire-e2e:<bucket>/<collection>`). */
  salt?: string;
  /** PBKDF2 iterations (default 600,000). */
  iterations?: number;
}

export const DEFAULT_PBKDF2_ITERATIONS = 600_000;

function subtle(): SubtleCrypto {
  const crypto = (globalThis as { crypto?: Crypto }).crypto;
  if (!crypto?.subtle) throw new DecryptionError('WebCrypto is not available here (an insecure context?)');
  return crypto.subtle;
}

/** Native base64 where the platform has it (Chromium 140+, Firefox 133+, Safari 18.2+): no per-byte loop. */
const native = Uint8Array as unknown as {
  fromBase64?: (text: string) => Uint8Array<ArrayBuffer>;
  prototype: { toBase64?: () => string };
};

function toBase64(bytes: Uint8Array): string {
  if (native.prototype.toBase64) return (bytes as unknown as { toBase64(): string }).toBase64();
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  if (native.fromBase64) return native.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Derives an AES-GCM key from a passphrase (PBKDF2-SHA-256); the key cannot be exported. */
export async function deriveKey(
  passphrase: string,
  salt: string,
  iterations = DEFAULT_PBKDF2_ITERATIONS,
): Promise<CryptoKey> {
  const encoder = new TextEncoder();
  const material = await subtle().importKey('raw', encoder.encode(passphrase), 'PBKDF2', false, ['deriveKey']);
  return subtle().deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt: encoder.encode(salt), iterations },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

/** The transformer that encrypts a collection's records (see the module comment). */
export function encryptionTransformer(options: EncryptionOptions): RemoteTransformer {
  if (!options.key && typeof options.passphrase !== 'string')
    throw new TypeError('encryptionTransformer needs a key or a passphrase');
  // One derivation per salt (i.e. per collection) for the transformer's life, and once it is
  // known, no promise to wait for per record.
  const keys = new Map<string, Promise<CryptoKey>>();
  const ready = new Map<string, CryptoKey>();
  const keyFor = (context: TransformContext): CryptoKey | Promise<CryptoKey> => {
    if (options.key) return options.key;
    const salt = options.salt ?? `quire-e2e:${context.bucket}/${context.collection}`;
    const known = ready.get(salt);
    if (known) return known;
    let key = keys.get(salt);
    if (!key) {
      key = deriveKey(options.passphrase!, salt, options.iterations);
      keys.set(salt, key);
      key.then((value) => ready.set(salt, value)).catch(() => keys.delete(salt));
    }
    return key;
  };
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const open = async (record: Record<string, unknown> & { id: string }, key: CryptoKey) => {
    const { id } = record;
    if (record.quire_e2e !== 1 || typeof record.iv !== 'string' || typeof record.ciphertext !== 'string') {
      throw new DecryptionError(`Record ${id} is not encrypted (or not by this version)`, id);
    }
    let plain: ArrayBuffer;
    try {
      plain = await subtle().decrypt(
        { name: 'AES-GCM', iv: fromBase64(record.iv), additionalData: encoder.encode(id) },
        key,
        fromBase64(record.ciphertext),
      );
    } catch (error) {
      throw new DecryptionError(`Record ${id} does not decrypt: wrong key, or altered`, id, { cause: error });
    }
    // The parsed object is the record (no copy): its id, and the server's timestamp.
    const fields = JSON.parse(decoder.decode(plain)) as Record<string, unknown>;
    fields.id = id;
    if (record.last_modified !== undefined) fields.last_modified = record.last_modified;
    return fields;
  };
  return {
    async encode(record, context) {
      const { id, last_modified: _lm, ...fields } = record;
      const iv = globalThis.crypto.getRandomValues(new Uint8Array(12));
      const sealed = await subtle().encrypt(
        { name: 'AES-GCM', iv, additionalData: encoder.encode(id) },
        await keyFor(context),
        encoder.encode(JSON.stringify(fields)),
      );
      return { id, quire_e2e: 1, iv: toBase64(iv), ciphertext: toBase64(new Uint8Array(sealed)) };
    },
    async decode(record, context) {
      return open(record, await keyFor(context));
    },
    // A page: the key once, then every decryption handed to WebCrypto at once.
    async decodeAll(records, context) {
      const key = await keyFor(context);
      return Promise.all(records.map((record) => open(record, key)));
    },
  };
}
