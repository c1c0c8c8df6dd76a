/**
 * Routes live in the URL's hash (`#/buckets/b/collections/c?_sort=title`), so the console works
 * from any static host and a reload keeps the page, its filters and its sort.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';

export type BucketTab = 'collections' | 'groups' | 'history' | 'permissions' | 'attributes';
type CollectionTab = 'records' | 'history' | 'permissions' | 'attributes';
export type GroupTab = 'members' | 'history' | 'permissions' | 'attributes';
export type RecordTab = 'edit' | 'file' | 'history' | 'permissions';

export type Route =
  | { name: 'home' }
  | { name: 'buckets' }
  | { name: 'bucket'; bid: string; tab: BucketTab }
  | {
      name: 'collection';
      bid: string;
      cid: string;
      tab: CollectionTab;
      query: URLSearchParams;
      rid?: string;
      recordTab?: RecordTab;
      isNew?: boolean;
    }
  | { name: 'group'; bid: string; gid: string; tab: GroupTab }
  | { name: 'access' }
  | { name: 'accounts' }
  | { name: 'openid-callback'; provider: string; token: string }
  | { name: 'not-found'; path: string };

const BUCKET_TABS: BucketTab[] = ['collections', 'groups', 'history', 'permissions', 'attributes'];
const COLLECTION_TABS: CollectionTab[] = ['history', 'permissions', 'attributes'];
const GROUP_TABS: GroupTab[] = ['members', 'history', 'permissions', 'attributes'];
const RECORD_TABS: RecordTab[] = ['file', 'history', 'permissions'];

const decode = (part: string) => {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
};

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const queryIndex = raw.indexOf('?');
  const path = queryIndex === -1 ? raw : raw.slice(0, queryIndex);
  const query = new URLSearchParams(queryIndex === -1 ? '' : raw.slice(queryIndex + 1));
  // The OpenID token (base64, possibly with '/') is everything after the provider.
  const auth = /^\/auth\/([^/]+)\/(.*)$/.exec(path);
  if (auth) return { name: 'openid-callback', provider: decode(auth[1]!), token: auth[2]! };
  const parts = path.split('/').filter(Boolean).map(decode);
  const [first, bid, kind, id, sub, rid, recordTab] = parts;
  if (parts.length === 0) return { name: 'home' };
  if (first === 'permissions' && parts.length === 1) return { name: 'access' };
  if (first === 'accounts' && parts.length === 1) return { name: 'accounts' };
  if (first !== 'buckets') return { name: 'not-found', path };
  if (!bid) return { name: 'buckets' };
  if (!kind) return { name: 'bucket', bid, tab: 'collections' };
  if (!id && BUCKET_TABS.includes(kind as BucketTab)) return { name: 'bucket', bid, tab: kind as BucketTab };
  if (kind === 'collections' && id) {
    const base = { name: 'collection' as const, bid, cid: id, query };
    if (!sub || sub === 'records') {
      if (!rid) return { ...base, tab: 'records' };
      const tab = RECORD_TABS.includes(recordTab as RecordTab) ? (recordTab as RecordTab) : 'edit';
      return { ...base, tab: 'records', rid, recordTab: tab };
    }
    if (sub === 'new') return { ...base, tab: 'records', isNew: true };
    if (COLLECTION_TABS.includes(sub as CollectionTab)) return { ...base, tab: sub as CollectionTab };
  }
  if (kind === 'groups' && id) {
    const tab = sub && GROUP_TABS.includes(sub as GroupTab) ? (sub as GroupTab) : 'members';
    return { name: 'group', bid, gid: id, tab };
  }
  return { name: 'not-found', path };
}

const enc = encodeURIComponent;

/** `?<query>`, or nothing without one. */
function searchPart(query: URLSearchParams | string | undefined): string {
  const search = query ? String(query) : '';
  return search ? `?${search}` : '';
}

/** Links, built from ids (always encoded). */
export const href = {
  home: () => '#/',
  buckets: () => '#/buckets',
  access: () => '#/permissions',
  accounts: () => '#/accounts',
  bucket: (bid: string, tab: BucketTab = 'collections') =>
    `#/buckets/${enc(bid)}${tab === 'collections' ? '' : `/${tab}`}`,
  collection: (bid: string, cid: string, tab: CollectionTab = 'records', query?: URLSearchParams | string) => {
    return `#/buckets/${enc(bid)}/collections/${enc(cid)}${tab === 'records' ? '' : `/${tab}`}${searchPart(query)}`;
  },
  record: (bid: string, cid: string, rid: string, tab: RecordTab = 'edit', query?: URLSearchParams | string) => {
    const path = `#/buckets/${enc(bid)}/collections/${enc(cid)}/records/${enc(rid)}`;
    return `${path}${tab === 'edit' ? '' : `/${tab}`}${searchPart(query)}`;
  },
  newRecord: (bid: string, cid: string, query?: URLSearchParams | string) =>
    `#/buckets/${enc(bid)}/collections/${enc(cid)}/new${searchPart(query)}`,
  group: (bid: string, gid: string, tab: GroupTab = 'members') =>
    `#/buckets/${enc(bid)}/groups/${enc(gid)}${tab === 'members' ? '' : `/${tab}`}`,
};

/** The link of an object URI of the protocol (`/buckets/b/collections/c/records/r`), if it has a page. */
export function hrefOfUri(uri: string): string | null {
  const parts = uri.split('/').filter(Boolean);
  if (parts[0] !== 'buckets' || !parts[1]) return null;
  const bid = parts[1];
  if (parts.length === 2) return href.bucket(bid);
  if (parts[2] === 'collections' && parts[3]) {
    if (parts.length === 4) return href.collection(bid, parts[3]);
    if (parts[4] === 'records' && parts[5] && parts.length === 6) return href.record(bid, parts[3], parts[5]);
  }
  if (parts[2] === 'groups' && parts[3] && parts.length === 4) return href.group(bid, parts[3]);
  return null;
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else location.hash = to.replace(/^#/, '');
  if (options.replace) window.dispatchEvent(new HashChangeEvent('hashchange'));
}

export function useRoute(): Route {
  const [hash, setHash] = useState(() => location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return useMemo(() => parseRoute(hash), [hash]);
}
