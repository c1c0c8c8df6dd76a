/** Where accounts live and how they are named (protocol-reference §2, §4.2, §9.1). */
import type { Scope } from '../storage/types.js';

/** Kinto's account id rule: `@`, `.` and `+` allowed, so that e-mail addresses fit. */
export const ACCOUNT_ID_PATTERN = /^[a-zA-Z0-9][+.@a-zA-Z0-9_-]*$/;

/** The policy name, prefix of every account user id (`account:<id>`). */
export const ACCOUNT_POLICY = 'account';

/**
 * Accounts are generic stored objects: resource `account` under parent `''` (one scope, so
 * administrators list them all), access-control entries under `/accounts/<id>`.
 */
export const ACCOUNT_SCOPE: Scope = { resourceName: 'account', parentId: '' };

export function accountUri(id: string): string {
  return `/accounts/${id}`;
}

export function accountUserId(id: string): string {
  return `${ACCOUNT_POLICY}:${id}`;
}

/** The account id of an `account:` user id, else null. */
export function accountIdOf(userId: string | null): string | null {
  return userId?.startsWith(`${ACCOUNT_POLICY}:`) ? userId.slice(ACCOUNT_POLICY.length + 1) : null;
}
