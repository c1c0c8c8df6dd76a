/**
 * The key a client address is counted under by the limits fair per address (logins, sign-ups,
 * change streams): an IPv4 address itself (IPv4-mapped IPv6 included), the /64 network of an
 * IPv6 address — one subscriber is routinely given a whole /64. Other strings as they are.
 */
import { isIPv6 } from 'node:net';

export function addressKey(address: string): string {
  if (!address.includes(':')) return address; // IPv4 (or no address): as it is, without the patterns below
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  const plain = address.split('%')[0] ?? address; // zone index of a link-local address
  if (!isIPv6(plain)) return address;
  const [head = '', tail] = plain.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  // Only the first four groups matter; an embedded IPv4 tail (two groups) sits after them.
  const missing = 8 - before.length - after.length - (after.at(-1)?.includes('.') ? 1 : 0);
  const full = [...before, ...Array<string>(Math.max(missing, 0)).fill('0'), ...after];
  return `${full
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
