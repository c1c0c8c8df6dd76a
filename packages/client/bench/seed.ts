/** What both benchmarks (sync.ts in Node, browser.ts in Chromium) share: raw API calls and seeding. */
import type { Storage } from '@quire/server';

/** A request as the benchmark user; throws on an error status. */
export async function api(url: string, auth: string, method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

/** Creates the collection and inserts `count` records `r0000000…` through the storage API (5,000 per transaction). */
export async function seedCollection(
  storage: Storage,
  url: string,
  auth: string,
  where: { bucket: string; collection: string; count: number },
  make: (i: number) => Record<string, unknown>,
): Promise<void> {
  const { bucket, collection, count } = where;
  await api(url, auth, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} });
  const scope = { resourceName: 'record', parentId: `/buckets/${bucket}/collections/${collection}` };
  for (let start = 0; start < count; start += 5000) {
    const objects: Array<{ id: string; data: Record<string, unknown> }> = [];
    for (let i = start; i < Math.min(count, start + 5000); i++)
      objects.push({ id: `r${String(i).padStart(7, '0')}`, data: make(i) });
    await storage.transaction((session) => session.objects.insertMany(scope, objects));
  }
}
