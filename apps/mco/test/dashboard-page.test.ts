import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { renderPageModule } from '../scripts/build-dashboard-page.js';

it('the served page bundle (src/dashboard/page.generated.ts) is built from the current page sources: run npm run build:dashboard -w mco', async () => {
  const generated = readFileSync(new URL('../src/dashboard/page.generated.ts', import.meta.url), 'utf8');
  expect(generated === (await renderPageModule())).toBe(true);
});
