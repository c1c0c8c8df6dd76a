/**
 * A resource of the database shared fairly among the callers the work is for (issue 36 item 4):
 * the pool's connections, and the costly statements running at once (pg-statements.ts holds one
 * of each). One owner (an identity, or an address for anonymous callers) holds at most
 * `perOwner` slots at once, and the owners of one client address together (its /64 for IPv6) at
 * most `perAddress`: open sign-up makes identities cheap, an address is not. When slots are short
 * the waiting callers are served in turn, not in arrival order: the waiting addresses one slot
 * each, and within an address its waiting owners one each. So twelve slow requests of one user
 * (or of twelve users behind one address) take their cap, and another caller finds a slot free
 * or is next in line instead of queueing behind them.
 *
 * Work for nobody in particular (the server's own: history drain, streams' re-reads, index
 * upkeep) has no cap of its own but takes its turn like an address.
 */
import { BackendError } from '../../errors.js';

/** Who a slot is for (storage/types.ts `SessionOptions`). */
export interface ShareClaim {
  owner?: string | undefined;
  address?: string | undefined;
}

export interface ShareLimits {
  /** Slots handed out at once (e.g. the pool's size). */
  slots: number;
  /** At most this many to one owner. */
  perOwner: number;
  /** At most this many to the owners of one address together. */
  perAddress: number;
  /** How long a caller waits for a slot before failing (503). */
  waitMs: number;
  /** What a slot is, for the error of a wait that lasted too long. */
  what: string;
}

interface Waiter {
  grant(): void;
}

interface Owner {
  held: number;
  waiting: Waiter[];
}

interface Address {
  held: number;
  /** Its owners holding or waiting, in the order they are served in (an owner served moves last). */
  owners: Map<string, Owner>;
}

/** Gives a slot back (once). */
export type Release = () => void;

const NOBODY = '\u0000server';

export class FairShare {
  readonly #limits: ShareLimits;
  #held = 0;
  /** Addresses holding or waiting; iteration order is the round's order (an address served moves last). */
  readonly #addresses = new Map<string, Address>();

  constructor(limits: ShareLimits) {
    const slots = Math.max(1, limits.slots);
    const perOwner = Math.max(1, Math.min(limits.perOwner, slots));
    this.#limits = { ...limits, slots, perOwner, perAddress: Math.max(perOwner, Math.min(limits.perAddress, slots)) };
  }

  /** Slots held now, by anyone, and callers waiting (metrics, tests). */
  get stats(): { held: number; waiting: number } {
    let waiting = 0;
    for (const address of this.#addresses.values())
      for (const owner of address.owners.values()) waiting += owner.waiting.length;
    return { held: this.#held, waiting };
  }

  /** A slot for `claim`, now or in its turn; rejects when `signal` aborts or after `waitMs`. */
  acquire(claim: ShareClaim = {}, signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(aborted(signal));
    // An owner whose address is not known is an address of its own.
    const addressKey = claim.address ?? (claim.owner === undefined ? NOBODY : `\u0000owner:${claim.owner}`);
    const ownerKey = claim.owner ?? addressKey;
    const address = this.#addresses.get(addressKey) ?? { held: 0, owners: new Map<string, Owner>() };
    this.#addresses.set(addressKey, address);
    const owner = address.owners.get(ownerKey) ?? { held: 0, waiting: [] };
    address.owners.set(ownerKey, owner);
    if (owner.waiting.length === 0 && this.#mayTake(addressKey, address, owner))
      return Promise.resolve(this.#take(addressKey, address, ownerKey, owner));
    return new Promise<Release>((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const leave = (error: Error) => {
        stop();
        owner.waiting.splice(owner.waiting.indexOf(waiter), 1);
        this.#forget(addressKey, address, ownerKey, owner);
        // Its place at the head may have kept an owner of its address from a slot it may take.
        this.#next();
        reject(error);
      };
      const waiter: Waiter = {
        grant: () => {
          stop();
          resolve(this.#take(addressKey, address, ownerKey, owner));
        },
      };
      const onAbort = () => leave(aborted(signal!));
      const { waitMs, what } = this.#limits;
      const timer = setTimeout(
        () => leave(new BackendError(`no ${what} free within ${waitMs} ms (fair share)`)),
        waitMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      owner.waiting.push(waiter);
    });
  }

  #mayTake(addressKey: string, address: Address, owner: Owner): boolean {
    const { slots, perOwner, perAddress } = this.#limits;
    if (this.#held >= slots) return false;
    return addressKey === NOBODY || (owner.held < perOwner && address.held < perAddress);
  }

  #take(addressKey: string, address: Address, ownerKey: string, owner: Owner): Release {
    this.#held++;
    address.held++;
    owner.held++;
    // Served: to the end of the round, the address among addresses and the owner within it.
    this.#addresses.delete(addressKey);
    this.#addresses.set(addressKey, address);
    address.owners.delete(ownerKey);
    address.owners.set(ownerKey, owner);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held--;
      address.held--;
      owner.held--;
      this.#forget(addressKey, address, ownerKey, owner);
      this.#next();
    };
  }

  /** The first caller of the round that waits and may take a slot gets one. */
  #next(): void {
    if (this.#held >= this.#limits.slots) return;
    for (const [addressKey, address] of this.#addresses) {
      for (const owner of address.owners.values()) {
        if (owner.waiting.length > 0 && this.#mayTake(addressKey, address, owner)) {
          owner.waiting.shift()!.grant();
          return;
        }
      }
    }
  }

  #forget(addressKey: string, address: Address, ownerKey: string, owner: Owner): void {
    if (owner.held > 0 || owner.waiting.length > 0 || address.owners.get(ownerKey) !== owner) return;
    address.owners.delete(ownerKey);
    if (address.owners.size === 0 && this.#addresses.get(addressKey) === address) this.#addresses.delete(addressKey);
  }
}

/** The error for work stopped by its signal (its client went away, its budget ran out). */
export function aborted(signal: AbortSignal): BackendError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'the request was stopped';
  return new BackendError(`stopped before it ran: ${reason}`, { cause: signal.reason });
}
