/**
 * The exit codes of `quire` (after sysexits.h), so that a supervisor or an operator can tell
 * what went wrong and whether trying again may help. Listed in `quire --help` and the README.
 */
export const EXIT = {
  /** An unexpected error (its stack trace is printed). */
  FAILURE: 1,
  /** Unknown command or option. */
  USAGE: 2,
  /** EX_UNAVAILABLE: PostgreSQL stayed unreachable for `storage_connect_timeout_seconds`. */
  DATABASE_UNAVAILABLE: 69,
  /** EX_OSERR: the server cannot listen on `host`:`port` (in use, not an address of this host, privileged). */
  CANNOT_LISTEN: 71,
  /**
   * EX_CONFIG: a setting is wrong — a bad value, a database that storage_url names but that does
   * not exist or refuses its credentials, a schema that needs `quire migrate`.
   */
  CONFIG: 78,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0   stopped cleanly
  1   unexpected error (with its stack trace)
  2   unknown command or option
  69  PostgreSQL unavailable: still unreachable after storage_connect_timeout_seconds
  71  cannot listen on host:port (address in use, not an address of this host, or privileged)
  78  configuration: a bad setting, storage_url's database missing or refusing its credentials,
      or pending migrations (run \`quire migrate\`)`;
