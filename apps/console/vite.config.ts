import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const pkg = JSON.parse(readFileSync(here('./package.json'), 'utf8')) as { name: string; version: string };

/**
 * Where the production build goes: inside the server package, which serves it at /v1/admin/
 * with the `admin` setting (packages/server/src/views/admin.ts). Paths are relative (`base`), so
 * the same build also works from any other static host.
 */
export const OUT_DIR = here('../../packages/server/admin-dist');

/** `version.json` beside index.html: the server shows it in its `admin` capability. */
function versionFile(): Plugin {
  return {
    name: 'quire-console-version',
    apply: 'build',
    generateBundle() {
      this.emitFile({
        type: 'asset',
        fileName: 'version.json',
        source: `${JSON.stringify({ name: pkg.name, version: pkg.version })}\n`,
      });
    },
  };
}

export default defineConfig({
  root: here('.'),
  base: './',
  resolve: {
    // Compile @quire/client from its TypeScript source (its `@quire/source` export condition).
    conditions: ['@quire/source', ...defaultClientConditions],
    // The client imports undici lazily, only when running in Node; keep it out of the bundle.
    alias: { undici: here('./src/node-only.ts') },
  },
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    target: 'es2022',
    // No source maps in the production build: the server would hand them to anyone (it refuses
    // `.map` files anyway, views/admin.ts), and the console's source is public: debug a deployed
    // console with a local build (`vite build --sourcemap`).
    sourcemap: false,
  },
  plugins: [versionFile()],
});
