/**
 * The demo's service worker: the app shell must load while offline, so that a reload without a
 * network still shows the lists kept in IndexedDB.
 *
 * - Precaches this build's files at install (the list is injected by vite.config.ts).
 * - Same-origin GETs: network first (a new build or a new /config.json wins whenever the server
 *   answers), the cache when the network fails. Successful answers refresh the cache.
 * - Everything else — above all the Quire API, which lives on another origin — is left alone:
 *   API data must never come from a cache, the client's replica is the offline copy.
 */
const PRECACHE = self.__PRECACHE__;
const CACHE = `quire-demo-${self.__CACHE_VERSION__}`;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll([...PRECACHE, '/config.json']))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names.filter((name) => name.startsWith('quire-demo-') && name !== CACHE).map((name) => caches.delete(name)),
        ),
      )
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  event.respondWith(networkFirst(request));
});

async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    if (response.ok) await cache.put(request, response.clone());
    return response;
  } catch (error) {
    // Client-side routes all get the app: fall back to the cached shell for navigations.
    const cached =
      (await cache.match(request, { ignoreSearch: true })) ??
      (request.mode === 'navigate' ? await cache.match('/') : undefined);
    if (cached) return cached;
    throw error;
  }
}
