/**
 * The change streams of a process, shared fairly between client addresses and, within an
 * address, between identities, so that no client can fill a cap everybody depends on
 * (`changes_stream_max_per_process`, `changes_stream_max_per_address`, `changes_stream_max_per_user`).
 *
 * Every stream counts against its client's address (an IPv6 one by its /64), whoever the caller
 * is: accounts are minted in milliseconds by an open sign-up, so identities alone do not bound
 * an address. Within an address, streams are held by identities: a user whose identity the
 * server verified (an account's password, an OpenID token) by that identity; every other caller
 * (anonymous, Basic Auth, whose every made-up name is a new identity) by one shared holder.
 *
 * A full cap is not first come, first served:
 * - the process is full: a caller whose address holds at least two fewer streams than the
 *   address holding the most gets the place of that address's heaviest holder's oldest stream;
 * - the address is full: an identity holding at least two fewer streams there than another
 *   gets the place of that one's oldest stream.
 * So a well-behaved user always gets a stream while someone holds more than their share; the
 * one that goes is the heaviest holder's, whose client is told by the end of its stream (and
 * finds its place taken when it reconnects). A verified user over `changes_stream_max_per_user`
 * is refused (its own streams, its own choice).
 */
import { addressKey } from '../auth/client-address.js';

/** Policies whose user ids anyone can mint without a secret the server checks. */
const UNVERIFIED_POLICIES = ['basicauth'];
/** The holder, within an address, of the streams of every caller whose identity nobody verified. */
const UNVERIFIED = '';

/** Whom a stream counts against. */
export interface StreamHolder {
  /** The client's address key (client-address.ts). */
  readonly address: string;
  /** A verified user id; null for anonymous and Basic Auth callers. */
  readonly user: string | null;
}

export function streamHolder(identity: { userId: string | null }, ip: string): StreamHolder {
  const { userId } = identity;
  const verified = userId !== null && !UNVERIFIED_POLICIES.some((policy) => userId.startsWith(`${policy}:`));
  return { address: addressKey(ip), user: verified ? userId : null };
}

export interface StreamLimits {
  changes_stream_max_per_process: number;
  changes_stream_max_per_address: number;
  changes_stream_max_per_user: number;
}

/** Why a stream is refused: its user's cap (429), its address's (429), the process's (503). */
export type StreamRefusal = 'user' | 'address' | 'process';

/** What the caps need of a stream. */
export interface HeldStream {
  readonly holder: StreamHolder;
}

/** The streams of one address, by identity (in the order they were opened: the oldest first). */
interface AddressStreams<S> {
  count: number;
  byIdentity: Map<string, Set<S>>;
}

export class StreamSlots<S extends HeldStream> {
  readonly #limits: StreamLimits;
  #total = 0;
  readonly #addresses = new Map<string, AddressStreams<S>>();
  /** Addresses by how many streams they hold, and the largest such count: the heaviest in O(1). */
  readonly #addressesByCount = new Map<number, Set<string>>();
  #mostByAddress = 0;
  readonly #perUser = new Map<string, number>();

  constructor(limits: StreamLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#total;
  }

  /** Whether a stream of `holder` may open (once `victim`, if any, is closed to make room), or why not. */
  admit(holder: StreamHolder): { refused: StreamRefusal } | { victim: S | null } {
    const limits = this.#limits;
    if (holder.user !== null && (this.#perUser.get(holder.user) ?? 0) >= limits.changes_stream_max_per_user)
      return { refused: 'user' };
    const own = this.#addresses.get(holder.address);
    const ownCount = own?.count ?? 0;
    if (own && ownCount >= limits.changes_stream_max_per_address) {
      const mine = own.byIdentity.get(identityOf(holder))?.size ?? 0;
      const heaviest = heaviestIdentity(own);
      if (heaviest.size > mine + 1) return { victim: oldest(heaviest) };
      return { refused: 'address' };
    }
    if (this.#total >= limits.changes_stream_max_per_process) {
      if (this.#mostByAddress <= ownCount + 1) return { refused: 'process' };
      const [address] = this.#addressesByCount.get(this.#mostByAddress) ?? [];
      const streams = address === undefined ? undefined : this.#addresses.get(address);
      return streams ? { victim: oldest(heaviestIdentity(streams)) } : { refused: 'process' };
    }
    return { victim: null };
  }

  add(stream: S): void {
    const { address, user } = stream.holder;
    let streams = this.#addresses.get(address);
    if (!streams) {
      streams = { count: 0, byIdentity: new Map() };
      this.#addresses.set(address, streams);
    }
    const identity = identityOf(stream.holder);
    let held = streams.byIdentity.get(identity);
    if (!held) {
      held = new Set();
      streams.byIdentity.set(identity, held);
    }
    if (held.has(stream)) return;
    held.add(stream);
    this.#moveAddress(address, streams.count, streams.count + 1);
    streams.count++;
    this.#total++;
    if (user !== null) this.#perUser.set(user, (this.#perUser.get(user) ?? 0) + 1);
  }

  remove(stream: S): void {
    const { address, user } = stream.holder;
    const streams = this.#addresses.get(address);
    const identity = identityOf(stream.holder);
    const held = streams?.byIdentity.get(identity);
    if (!streams || !held?.delete(stream)) return;
    if (held.size === 0) streams.byIdentity.delete(identity);
    this.#moveAddress(address, streams.count, streams.count - 1);
    streams.count--;
    if (streams.count === 0) this.#addresses.delete(address);
    this.#total--;
    if (user !== null) {
      const count = (this.#perUser.get(user) ?? 1) - 1;
      if (count > 0) this.#perUser.set(user, count);
      else this.#perUser.delete(user);
    }
  }

  #moveAddress(address: string, from: number, to: number): void {
    const before = this.#addressesByCount.get(from);
    before?.delete(address);
    if (before?.size === 0) this.#addressesByCount.delete(from);
    if (to > 0) {
      let after = this.#addressesByCount.get(to);
      if (!after) {
        after = new Set();
        this.#addressesByCount.set(to, after);
      }
      after.add(address);
    }
    // Counts move by one: the largest drops by one at most, to the count just left behind.
    if (to > this.#mostByAddress) this.#mostByAddress = to;
    else if (from === this.#mostByAddress && !this.#addressesByCount.has(from)) this.#mostByAddress = to;
  }
}

function identityOf(holder: StreamHolder): string {
  return holder.user ?? UNVERIFIED;
}

/** The identity holding the most streams of an address (bounded by the per-address cap). */
function heaviestIdentity<S>(streams: AddressStreams<S>): Set<S> {
  let heaviest = new Set<S>();
  for (const held of streams.byIdentity.values()) if (held.size > heaviest.size) heaviest = held;
  return heaviest;
}

function oldest<S>(streams: Set<S>): S | null {
  const [first] = streams;
  return first ?? null;
}
