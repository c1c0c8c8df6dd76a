/**
 * Who a change stream counts against (`changes_stream_max_per_user`,
 * `changes_stream_max_per_address`): a user whose identity the server verified — an account's
 * password, an OpenID provider's token — by that identity; anyone else by the client's address:
 * anonymous callers, and Basic Auth users, whose every made-up name is a new identity
 * (`basicauth:` ids are HMACs of whatever user:password the client sends). An IPv6 client counts
 * by its /64 network, the block one subscriber is routinely given.
 */
import { isIPv6 } from 'node:net';

/** Policies whose user ids anyone can mint without a secret the server checks. */
const UNVERIFIED_POLICIES = ['basicauth'];

export function streamCapKey(identity: { userId: string | null }, ip: string): string {
  const { userId } = identity;
  if (userId !== null && !UNVERIFIED_POLICIES.some((policy) => userId.startsWith(`${policy}:`)))
    return `user:${userId}`;
  return `address:${addressKey(ip)}`;
}

export function isAddressKey(key: string): boolean {
  return key.startsWith('address:');
}

/** IPv4 as it is (also when mapped into IPv6); IPv6 by its first 64 bits. */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group || '0', 16).toString(16))
    .join(':')}::/64`;
}
