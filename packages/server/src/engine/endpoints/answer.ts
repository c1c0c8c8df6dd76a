/** What the endpoints share about their answers. */
import type { Identity } from '../../auth/policy.js';
import { type CacheTarget, cacheLifetime, setCacheHeaders } from '../../http/cache-headers.js';
import type { StoredObject } from '../../storage/types.js';
import type { ResourceModel } from '../model.js';
import type { ResponseHead } from '../object-responses.js';

/** A body already serialised (a page spliced from the stored text: `listObjects`). */
export class JsonText {
  constructor(readonly text: string) {}
}

/** An endpoint's body; null: none (a 304, a HEAD). */
export type Answer = Record<string, unknown> | JsonText | null;

/** Cache headers of a read: what the settings allow for this resource, or none. */
export function setReadCacheHeaders(
  model: ResourceModel,
  reply: ResponseHead,
  identity: Identity,
  parentUri: string,
  parent: StoredObject | null,
  busting?: CacheTarget['busting'],
): void {
  const target = { resourceName: model.def.name, parentUri, parent, ...(busting ? { busting } : {}) };
  const seconds = model.def.cacheable === false ? 0 : cacheLifetime(model.settings, identity, target);
  setCacheHeaders(reply, seconds);
}
