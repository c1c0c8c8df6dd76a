/**
 * Quota settings (protocol-reference §13.6). Kinto names each limit in a setting of its own
 * (`quotas.bucket_<bid>_max_items`, `quotas.collection_<bid>_<cid>_max_bytes`…); names built from
 * ids cannot be declared in our settings table, so the same limits are grouped in four JSON
 * settings, each a `{max_bytes, max_items, max_bytes_per_item}` object (or a map of them):
 *
 * - `quotas_bucket`       every bucket                      (Kinto `quotas.bucket_<limit>`)
 * - `quotas_buckets`      `{"<bid>": {…}}`                  (Kinto `quotas.bucket_<bid>_<limit>`)
 * - `quotas_collection`   every collection                  (Kinto `quotas.collection_<limit>`)
 * - `quotas_collections`  `{"<bid>": {…}, "<bid>/<cid>": {…}}` (Kinto `quotas.collection_<bid>[_<cid>]_<limit>`)
 *
 * As in Kinto, each limit is resolved on its own: the most specific setting that names it wins.
 */
/** Thrown by validateQuotaSettings; config.ts turns it into a ConfigError (no import cycle). */
export class QuotaSettingError extends Error {}

export const LIMIT_NAMES = ['max_bytes', 'max_items', 'max_bytes_per_item'] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
export type Limits = Partial<Record<LimitName, number>>;

export interface QuotaSettings {
  quotas_bucket: unknown;
  quotas_buckets: unknown;
  quotas_collection: unknown;
  quotas_collections: unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkLimits(setting: string, where: string, value: unknown): void {
  const example = '{"max_bytes": 1048576, "max_items": 1000, "max_bytes_per_item": 4096}';
  if (!isPlainObject(value)) throw new QuotaSettingError(`Invalid setting ${setting}${where}: expected a JSON object of limits, e.g. ${example}`);
  for (const [name, limit] of Object.entries(value)) {
    if (!(LIMIT_NAMES as readonly string[]).includes(name)) {
      throw new QuotaSettingError(`Invalid setting ${setting}${where}: unknown limit "${name}" (known: ${LIMIT_NAMES.join(', ')})`);
    }
    if (limit !== null && !(typeof limit === 'number' && Number.isInteger(limit) && limit >= 0)) {
      throw new QuotaSettingError(`Invalid setting ${setting}${where}: ${name} must be a whole number ≥ 0 (or null), got ${JSON.stringify(limit)}`);
    }
  }
}

function checkMap(setting: string, value: unknown, keyPattern: RegExp, keyHelp: string): void {
  if (!isPlainObject(value)) throw new QuotaSettingError(`Invalid setting ${setting}: expected a JSON object of ${keyHelp} to limits`);
  for (const [key, limits] of Object.entries(value)) {
    if (!keyPattern.test(key)) throw new QuotaSettingError(`Invalid setting ${setting}: key "${key}" is not ${keyHelp}`);
    checkLimits(setting, ` ("${key}")`, limits);
  }
}

const ID = '[a-zA-Z0-9_-]+';

/** Boot-time validation (config.ts validateSettings): a clear error for each mistake. */
export function validateQuotaSettings(settings: QuotaSettings): void {
  checkLimits('quotas_bucket', '', settings.quotas_bucket);
  checkLimits('quotas_collection', '', settings.quotas_collection);
  checkMap('quotas_buckets', settings.quotas_buckets, new RegExp(`^${ID}$`), 'a bucket id');
  checkMap('quotas_collections', settings.quotas_collections, new RegExp(`^${ID}(/${ID})?$`), 'a bucket id or "<bucket id>/<collection id>"');
}

/** The limits that apply to a bucket and to a collection (null: none). */
export class QuotaLimits {
  readonly #bucket: Limits;
  readonly #buckets: Record<string, Limits>;
  readonly #collection: Limits;
  readonly #collections: Record<string, Limits>;

  constructor(settings: QuotaSettings) {
    this.#bucket = settings.quotas_bucket as Limits;
    this.#buckets = settings.quotas_buckets as Record<string, Limits>;
    this.#collection = settings.quotas_collection as Limits;
    this.#collections = settings.quotas_collections as Record<string, Limits>;
  }

  bucket(bid: string, name: LimitName): number | null {
    return own(this.#buckets, bid)?.[name] ?? this.#bucket[name] ?? null;
  }

  /** `cid` null: the events of buckets and groups, which Kinto checks against the bucket-wide collection limits. */
  collection(bid: string, cid: string | null, name: LimitName): number | null {
    const specific = cid === null ? undefined : own(this.#collections, `${bid}/${cid}`)?.[name];
    return specific ?? own(this.#collections, bid)?.[name] ?? this.#collection[name] ?? null;
  }
}

/** A map entry, never an inherited property (`constructor`, `__proto__` as ids). */
function own(map: Record<string, Limits>, key: string): Limits | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}
