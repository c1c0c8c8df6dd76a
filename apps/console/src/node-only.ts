/**
 * Stands in for `undici` in the browser bundle (see vite.config.ts). @quire/client imports undici
 * lazily and only when it runs in Node; in a browser it uses the global `fetch`.
 */
throw new Error('undici is only used by @quire/client in Node; the browser uses fetch');
