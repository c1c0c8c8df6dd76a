/** Pure path builders (ids are URL-encoded; the server root already carries `/v1`). */
const e = encodeURIComponent;

export const endpoints = {
  root: () => '/',
  batch: () => '/batch',
  buckets: () => '/buckets',
  bucket: (bid: string) => `/buckets/${e(bid)}`,
  collections: (bid: string) => `/buckets/${e(bid)}/collections`,
  collection: (bid: string, cid: string) => `/buckets/${e(bid)}/collections/${e(cid)}`,
  groups: (bid: string) => `/buckets/${e(bid)}/groups`,
  group: (bid: string, gid: string) => `/buckets/${e(bid)}/groups/${e(gid)}`,
  records: (bid: string, cid: string) => `/buckets/${e(bid)}/collections/${e(cid)}/records`,
  record: (bid: string, cid: string, id: string) => `/buckets/${e(bid)}/collections/${e(cid)}/records/${e(id)}`,
  attachment: (bid: string, cid: string, id: string) =>
    `/buckets/${e(bid)}/collections/${e(cid)}/records/${e(id)}/attachment`,
};

export const quoteETag = (timestamp: number): string => `"${timestamp}"`;

/** The change monitor's records (capability `changes`): one entry per collection, with its timestamp. */
export const MONITOR_PATH = '/buckets/monitor/collections/changes/records';
