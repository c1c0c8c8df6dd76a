/**
 * The `state` of the OpenID login dance. Kinto keeps `state → callback` in its cache; we sign it
 * instead (`<random hex>.<expiry>.<callback>.<HMAC>`), so the token step may land on any server
 * process. The HMAC is compared in constant time; a state is accepted once per process (the
 * authorization code it comes with is single-use at the provider anyway) and until its expiry.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export class LoginStateCodec {
  /** nonce → expiry (ms) of the states already used. */
  private readonly used = new Map<string, number>();

  constructor(
    private readonly key: Buffer,
    private readonly ttlSeconds: number,
    private readonly nonceBytes: number,
    private readonly maxUsed: number,
  ) {}

  issue(callback: string, now = Date.now()): string {
    const nonce = randomBytes(this.nonceBytes).toString('hex');
    const expires = Math.ceil(now / 1000 + this.ttlSeconds).toString(36);
    const payload = `${nonce}.${expires}.${Buffer.from(callback, 'utf8').toString('base64url')}`;
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  /** The callback of a valid, unexpired, unused state (which is then used up); else null. */
  consume(state: string, now = Date.now()): string | null {
    const parts = state.split('.');
    if (parts.length !== 4) return null;
    const [nonce = '', expires = '', callback = '', mac = ''] = parts;
    const expected = this.mac(`${nonce}.${expires}.${callback}`);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const expiresAt = parseInt(expires, 36) * 1000;
    if (!(expiresAt > now)) return null;
    this.forgetExpired(now);
    if (this.used.has(nonce)) return null;
    this.used.set(nonce, expiresAt);
    while (this.used.size > this.maxUsed) this.used.delete(this.used.keys().next().value as string);
    return Buffer.from(callback, 'base64url').toString('utf8');
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload, 'utf8').digest();
  }

  private forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of this.used) if (expiresAt <= now) this.used.delete(nonce);
  }
}
