/**
 * Work a client address may have in progress at once (an IPv6 one: its /64), for costly work
 * done for callers nobody has identified yet — e.g. asking an OpenID provider about a token —
 * so that one client cannot hold all of it, nor flood a service every other user depends on.
 */
import { addressKey } from './client-address.js';

export class AddressSlots {
  readonly #max: number;
  readonly #inUse = new Map<string, number>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Runs `work` in one of the address's slots; throws `refusal()` when they are all taken. */
  async run<T>(address: string, work: () => Promise<T>, refusal: () => Error): Promise<T> {
    const key = addressKey(address);
    const used = this.#inUse.get(key) ?? 0;
    if (used >= this.#max) throw refusal();
    this.#inUse.set(key, used + 1);
    try {
      return await work();
    } finally {
      const left = (this.#inUse.get(key) ?? 1) - 1;
      if (left > 0) this.#inUse.set(key, left);
      else this.#inUse.delete(key);
    }
  }
}
