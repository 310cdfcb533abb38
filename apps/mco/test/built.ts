import { existsSync } from 'node:fs';
import { join } from 'node:path';

const APP = new URL('..', import.meta.url).pathname;

/**
 * `apps/mco/bin/mco.js`, the built bundle as users run it. `npm test` builds it
 * from the current sources before any test starts (scripts/prepare-tools.mjs);
 * tests never build it.
 */
export function builtMco(): string {
  if (!existsSync(join(APP, 'dist', 'main.js'))) {
    throw new Error('apps/mco/dist is missing: run `node scripts/prepare-tools.mjs` first (npm test does)');
  }
  return join(APP, 'bin', 'mco.js');
}
