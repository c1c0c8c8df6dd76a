/**
 * A setting, or a combination of settings, the server cannot run with: thrown at boot, before
 * anything listens, and turned by the CLI into one line and exit code 78.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
