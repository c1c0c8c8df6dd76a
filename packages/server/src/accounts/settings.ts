/**
 * Accounts settings (accounts/): who may create and manage accounts, password cache, login
 * failure limits, e-mail validation and reset-password mails.
 */
import { Type } from '@sinclair/typebox';
import { List, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const ACCOUNT_SETTINGS = {
  account_create_principals: List({
    default: [],
    description:
      'Who may create accounts (`system.Everyone`: open sign-up). Every principal but `system.Everyone` must ' +
      'also be in `account_write_principals`.',
  }),
  account_read_principals: List({
    default: [],
    description: 'Principals granted read on every account (they list all accounts).',
  }),
  account_write_principals: List({
    default: [],
    description: 'Account administrators: write on every account, create accounts for others.',
  }),
  account_cache_ttl_seconds: Type.Integer({
    default: 30,
    minimum: 0,
    description:
      'How long a verified account password is remembered by a process (0: check the hash on every request).',
  }),
  account_cache_max_entries: Type.Integer({
    default: 10000,
    minimum: 1,
    description: 'Verified account passwords remembered per process (least recently used dropped first).',
  }),
  account_password_checks_max_in_progress: Type.Integer({
    default: 2,
    minimum: 1,
    description:
      'Password hashes and verifications (argon2id, ~19 MiB each) running at once per process; the others wait ' +
      'their turn, client addresses served in rotation. They hold libuv threads (4 by default, ' +
      '`UV_THREADPOOL_SIZE`) that file reads share: keep it below that.',
  }),
  account_password_checks_max_queued_per_address: Type.Integer({
    default: 16,
    minimum: 1,
    description: 'Password checks waiting per client address (IPv6: per /64); one more is answered 429.',
  }),
  account_password_checks_queue_timeout_seconds: Type.Number({
    default: 10,
    minimum: 0.1,
    description: 'How long a password check waits for its turn before the request gets 503 with `Retry-After`.',
  }),
  account_login_max_failures: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Failed logins allowed per account and client address within `account_login_window_seconds` before that ' +
      'address’s logins to that account get 429 (the owner, elsewhere, is not blocked).',
  }),
  account_login_max_failures_per_ip: Type.Integer({
    default: 50,
    minimum: 1,
    description:
      'Failed account logins allowed per client address (IPv6: per /64), whatever the account, within the ' +
      'window before its logins get 429.',
  }),
  account_login_window_seconds: Type.Integer({
    default: 900,
    minimum: 1,
    description: 'Window of the login failure limits (also the longest `Retry-After`).',
  }),
  account_login_limiter_redis_url: Nullable(Type.String(), {
    default: null,
    secret: true,
    description:
      'A `redis://` URL to share the login failure counters and the sign-ups per address between processes ' +
      '(unset: each process counts in memory).',
  }),
  account_create_max_per_address: Type.Integer({
    default: 50,
    minimum: 1,
    description:
      'Accounts created per client address (IPv6: per /64) within `account_create_window_seconds`, by ' +
      'anyone but `account_write_principals`; one more is answered 429 with `Retry-After`.',
  }),
  account_create_window_seconds: Type.Integer({
    default: 3600,
    minimum: 1,
    description: 'Window of `account_create_max_per_address` (also the longest `Retry-After`).',
  }),
  account_validation: Type.Boolean({
    default: false,
    description: 'Accounts must be validated by e-mail before they can log in (ids must then be e-mail addresses).',
  }),
  account_validation_email_regexp: Type.String({
    default: '^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9-.]+$',
    description: 'Pattern account ids must match when `account_validation` is on.',
  }),
  account_validation_key_ttl_seconds: Type.Integer({
    default: 7 * 24 * 3600,
    minimum: 1,
    description: 'How long an account validation key stays usable.',
  }),
  account_validation_link_template: Nullable(Type.String(), {
    default: null,
    description:
      'URL of the page that validates an account, with `{id}` and `{activation-key}` placeholders; mail ' +
      'templates can use it as `{validation-link}`.',
  }),
  account_validation_email_subject_template: Type.String({
    default: 'activate your account',
    description:
      'Subject of the validation mail (placeholders: account fields, `{activation-key}`, `{validation-link}`, ' +
      '`email-context` keys).',
  }),
  account_validation_email_body_template: Type.String({
    default: '{activation-key}',
    description: 'Body of the validation mail (same placeholders as its subject).',
  }),
  account_validation_confirmation_subject_template: Type.String({
    default: 'Account active',
    description: 'Subject of the mail sent once an account is validated.',
  }),
  account_validation_confirmation_body_template: Type.String({
    default: 'The account {id} is now active',
    description: 'Body of the mail sent once an account is validated.',
  }),
  account_reset_password_ttl_seconds: Type.Integer({
    default: 3600,
    minimum: 1,
    description: 'How long a temporary password sent by `reset-password` stays usable.',
  }),
  account_reset_password_subject_template: Type.String({
    default: 'Reset password',
    description:
      'Subject of the temporary password mail (placeholders: account fields, `{reset-password}`, ' +
      '`email-context` keys).',
  }),
  account_reset_password_body_template: Type.String({
    default: '{reset-password}',
    description: 'Body of the temporary password mail.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type AccountSettings = SettingValues<typeof ACCOUNT_SETTINGS>;
