import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * Emits `service-worker.js` (hand-written, `sw/service-worker.js`) with the list of files of this
 * build to precache, and a cache name that changes with them, so that the app shell loads
 * offline from the very first visit. Only in `vite build`: the dev server runs without it.
 */
function serviceWorker(): Plugin {
  const source = here('./sw/service-worker.js');
  return {
    name: 'quire-demo-service-worker',
    apply: 'build',
    generateBundle(_options, bundle) {
      // Source maps are for developers: not worth storing for offline use.
      const files = [
        '/',
        ...Object.keys(bundle)
          .filter((file) => !file.endsWith('.map'))
          .map((file) => `/${file}`),
      ].sort();
      const version = files.join('|');
      let hash = 0;
      for (const char of version) hash = (Math.imul(hash, 31) + char.charCodeAt(0)) | 0;
      const code = readFileSync(source, 'utf8')
        .replace('self.__PRECACHE__', JSON.stringify(files))
        .replace('self.__CACHE_VERSION__', JSON.stringify((hash >>> 0).toString(36)));
      this.emitFile({ type: 'asset', fileName: 'service-worker.js', source: code });
    },
  };
}

export default defineConfig({
  root: here('.'),
  resolve: {
    // Compile @quire/client from its TypeScript source (its `@quire/source` export condition).
    conditions: ['@quire/source', ...defaultClientConditions],
    alias: {
      // The client imports undici lazily, only when running in Node; keep it out of the bundle.
      undici: here('./src/node-only.ts'),
      // @quire/react's hooks on Preact: this app's preact/compat, whoever imports react.
      react: here('./node_modules/preact/compat/dist/compat.mjs'),
      'react-dom': here('./node_modules/preact/compat/dist/compat.mjs'),
    },
  },
  build: {
    target: 'es2022',
    sourcemap: true,
  },
  plugins: [serviceWorker()],
});
