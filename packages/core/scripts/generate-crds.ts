// Writes crds/<group>_<plural>.yaml from the zod schemas; `--check` only reports
// whether the committed file is up to date (exit 1 when stale).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PLACEMENT_CRD_FILE, renderPlacementCrd } from './placement-crd.js';

const file = fileURLToPath(new URL(`../crds/${PLACEMENT_CRD_FILE}`, import.meta.url));
const text = renderPlacementCrd();
const current = (() => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
})();

if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error(`${file} is stale: run \`npm run crds -w @mco/core\``);
    process.exit(1);
  }
  console.log(`${file} is up to date`);
} else if (current === text) {
  console.log(`${file} unchanged`);
} else {
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
