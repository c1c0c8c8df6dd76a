/**
 * Quota settings (protocol-reference §13.6). Kinto names each limit in a setting of its own
 * (`quotas.bucket_<bid>_max_items`, `quotas.collection_<bid>_<cid>_max_bytes`…); names built from
 * ids cannot be declared as settings of their own, so the same limits are grouped in four JSON
 * settings, each a `{max_bytes, max_items, max_bytes_per_item}` object (or a map of them):
 *
 * - `quotas_bucket`       every bucket                      (Kinto `quotas.bucket_<limit>`)
 * - `quotas_buckets`      `{"<bid>": {…}}`                  (Kinto `quotas.bucket_<bid>_<limit>`)
 * - `quotas_collection`   every collection                  (Kinto `quotas.collection_<limit>`)
 * - `quotas_collections`  `{"<bid>": {…}, "<bid>/<cid>": {…}}` (Kinto `quotas.collection_<bid>[_<cid>]_<limit>`)
 *
 * As in Kinto, each limit is resolved on its own: the most specific setting that names it wins.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, type SettingProblem, type SettingSchemas, type SettingValues } from '../settings/schema.js';

const LIMIT_NAMES = ['max_bytes', 'max_items', 'max_bytes_per_item'] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

const LIMIT = Type.Optional(Nullable(Type.Integer({ minimum: 0 })));
const LIMIT_PROPERTIES = { max_bytes: LIMIT, max_items: LIMIT, max_bytes_per_item: LIMIT };
/** Each limit left out or null: none at this level. */
const LIMITS = Type.Object(LIMIT_PROPERTIES, { additionalProperties: false });
export type Limits = Static<typeof LIMITS>;

const ID = '[a-zA-Z0-9_-]+';
const EXAMPLE = '{"max_bytes": 1048576, "max_items": 1000, "max_bytes_per_item": 4096}';

/** What is wrong in an object of limits, said as the operator wrote it. */
function limitsProblem({ keyword, path, params, value }: SettingProblem): string {
  if (path.length > 0) return `${path[0]} must be a whole number ≥ 0 (or null), got ${JSON.stringify(value)}`;
  if (keyword === 'additionalProperties')
    return `unknown limit "${String(params.additionalProperty)}" (known: ${LIMIT_NAMES.join(', ')})`;
  return `expected a JSON object of limits, e.g. ${EXAMPLE}`;
}

/** The same for a map of ids (`keyHelp`) to objects of limits; the key in question is named. */
function limitsMapProblem(keyHelp: string): (problem: SettingProblem) => string | { where: string; why: string } {
  return (problem) => {
    const [key, ...below] = problem.path;
    if (key !== undefined) return { where: ` ("${key}")`, why: limitsProblem({ ...problem, path: below }) };
    if (problem.keyword === 'additionalProperties')
      return `key "${String(problem.params.additionalProperty)}" is not ${keyHelp}`;
    return `expected a JSON object of ${keyHelp} to limits`;
  };
}

export const QUOTA_SETTINGS = {
  quotas_enabled: Type.Boolean({
    default: false,
    description:
      'Limit the size and number of objects per bucket and collection (capability `quotas`; see ' +
      '[Quotas](#quotas)); over a limit, a write gets 507.',
  }),
  quotas_bucket: Type.Object(LIMIT_PROPERTIES, {
    default: {},
    additionalProperties: false,
    invalid: limitsProblem,
    description: 'Limits of every bucket: `{"max_bytes": …, "max_items": …, "max_bytes_per_item": …}`, each optional.',
  }),
  quotas_buckets: Type.Record(Type.String({ pattern: `^${ID}$` }), LIMITS, {
    default: {},
    additionalProperties: false,
    invalid: limitsMapProblem('a bucket id'),
    description: 'Limits of given buckets, overriding `quotas_bucket` limit by limit: `{"<bid>": {"max_items": 100}}`.',
  }),
  quotas_collection: Type.Object(LIMIT_PROPERTIES, {
    default: {},
    additionalProperties: false,
    invalid: limitsProblem,
    description: 'Limits of every collection (same keys).',
  }),
  quotas_collections: Type.Record(Type.String({ pattern: `^${ID}(/${ID})?$` }), LIMITS, {
    default: {},
    additionalProperties: false,
    invalid: limitsMapProblem('a bucket id or "<bucket id>/<collection id>"'),
    description:
      'Limits of the collections of a bucket, or of one collection, overriding `quotas_collection` limit by ' +
      'limit: `{"<bid>": {…}, "<bid>/<cid>": {…}}` (the most specific wins).',
  }),
} satisfies SettingSchemas;

export type QuotaSettings = SettingValues<typeof QUOTA_SETTINGS>;

/** The limits that apply to a bucket and to a collection (null: none). */
export class QuotaLimits {
  readonly #bucket: Limits;
  readonly #buckets: Record<string, Limits>;
  readonly #collection: Limits;
  readonly #collections: Record<string, Limits>;

  constructor(settings: QuotaSettings) {
    this.#bucket = settings.quotas_bucket;
    this.#buckets = settings.quotas_buckets;
    this.#collection = settings.quotas_collection;
    this.#collections = settings.quotas_collections;
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
