/**
 * The folder of this package, found from the running module whether it runs from `src/` (tsx,
 * vitest) or from the `dist/` bundle: the nearest folder upwards whose package.json is ours.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@quire/conformance') {
          cached = dir;
          return dir;
        }
      } catch {
        // Not readable: keep looking upwards.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('conformance: cannot find the @quire/conformance package folder');
    dir = parent;
  }
}
