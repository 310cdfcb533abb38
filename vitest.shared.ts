import { defineConfig } from 'vitest/config';

// Tests run against TypeScript sources of sibling packages through the
// "source" export condition, so no build is needed before `npm test`.
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'], externalConditions: ['source'] } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // scripts/test.mjs sums these reports; each Node.js pass writes its own.
    reporters: ['default', ['json', { outputFile: process.env.MCO_VITEST_REPORT ?? 'reports/vitest.json' }]],
    testTimeout: 120_000, // CPU-bound property tests on a 2-core machine with both cores busy; a timeout is not a benchmark
    hookTimeout: 180_000, // starting real processes under load; nothing is built inside a test
  },
});
