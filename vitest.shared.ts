import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against TypeScript sources of sibling packages through the
// "@mco/source" export condition, so no build is needed before `npm test`.
// The name is scoped: a consumer's own `--conditions=source` never reaches
// mco's .ts files, which Node.js refuses to run from node_modules.
export default defineConfig({
  resolve: { conditions: ['@mco/source'] },
  ssr: { resolve: { conditions: ['@mco/source'], externalConditions: ['@mco/source'] } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: [fileURLToPath(new URL('./vitest.tmpdir.ts', import.meta.url))],
    // scripts/test.mjs sums these reports; each Node.js pass writes its own.
    reporters: [
      'default',
      ['json', { outputFile: process.env.MCO_VITEST_REPORT ?? 'reports/vitest.json' }],
      fileURLToPath(new URL('./vitest.hook-errors.ts', import.meta.url)),
    ],
    testTimeout: 120_000, // CPU-bound property tests on a 2-core machine with both cores busy; a timeout is not a benchmark
    hookTimeout: 180_000, // starting real processes under load; nothing is built inside a test
  },
});
