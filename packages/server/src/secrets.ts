/**
 * The HMAC secret of Basic Auth user ids (and, by derivation, of personal bucket ids) must be
 * stable across restarts (ids would change) and shared by every process. On the embedded store we
 * keep a random one in the data directory; on PostgreSQL, where several processes serve one
 * database, the operator must set it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from './settings/config-error.js';
import type { AuthSettings } from './auth/settings.js';
import type { StorageSettings } from './storage/settings.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = AuthSettings & StorageSettings;

export function resolveSecrets<T extends ModuleSettings>(settings: T): T {
  if (settings.userid_hmac_secret !== null) return settings;
  // On PostgreSQL it is needed by Basic Auth ids (and, unless set apart, personal bucket ids).
  if (settings.storage_url && !settings.multiauth_policies.includes('basicauth')) return settings;
  if (settings.storage_url) {
    throw new ConfigError(
      'Setting userid_hmac_secret (QUIRE_USERID_HMAC_SECRET) is required on PostgreSQL: every server process ' +
        'must share it.',
    );
  }
  const dir = resolve(settings.data_dir);
  const file = join(dir, 'userid_hmac_secret');
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  }
  return { ...settings, userid_hmac_secret: readFileSync(file, 'utf8').trim() };
}
