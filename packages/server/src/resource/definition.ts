import type { Settings } from '../config.js';
import type { StorageSession } from '../storage/types.js';

export type ResourceName = 'bucket' | 'collection' | 'group' | 'record';

/** What a concrete resource (bucket, collection, group, record) adds to the generic engine. */
export interface ResourceDefinition {
  name: ResourceName;
  /** URI segment of its list: `buckets`, `collections`, `groups`, `records`. */
  plural: string;
  parent: ResourceDefinition | null;
  /** Permission names accepted in request bodies (protocol-reference §4.6). */
  permissions: readonly string[];
  /** Server-assigned id for POST without `data.id`. */
  generateId(): string;
  /**
   * Checks and normalises `data` before it is stored (e.g. group `members`). Throws ApiError.
   * `existing` is the object being replaced or patched, if any.
   */
  processData?(data: Record<string, unknown>, context: ProcessContext): Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Runs in the write's transaction once the object is stored (e.g. group memberships). */
  afterWrite?(session: StorageSession, uri: string, stored: Record<string, unknown>): Promise<void>;
  /** Deleting it removes every child object (buckets, collections). */
  cascades: boolean;
}

export interface ProcessContext {
  settings: Settings;
  session: StorageSession;
  existing: Record<string, unknown> | null;
  /** The object being written (its id, URI and ancestors). */
  ref: ObjectRef;
}

/** One object (existing or not) addressed by a URL: its definition, id and ancestors' ids. */
export interface ObjectRef {
  def: ResourceDefinition;
  id: string;
  /** Storage parent id, e.g. `/buckets/b` for a collection; `''` for a bucket. */
  parentUri: string;
  /** `/buckets/b/collections/c`. */
  uri: string;
  /** The ancestors, root first (bucket, then collection for a record). */
  ancestors: ObjectRef[];
}

export function objectRef(def: ResourceDefinition, id: string, parent: ObjectRef | null): ObjectRef {
  const parentUri = parent ? parent.uri : '';
  return {
    def,
    id,
    parentUri,
    uri: `${parentUri}/${def.plural}/${id}`,
    ancestors: parent ? [...parent.ancestors, parent] : [],
  };
}

/** The id rule of protocol-reference §4.2 (buckets, collections, groups, records). */
export const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;
