import { defineConfig } from 'tsup';

// The published build (`npm run build`, `prepack`, turbo) keeps every
// dependency external, the @mco/* packages included: `mco` depends on them, so
// a provider module that imports @mco/runtime or @mco/provider-manual gets the
// same copies mco runs. MCO_BUNDLE_WORKSPACE=1 (the repository's own `npx mco`,
// built by `npm ci` and scripts/prepare-tools.mjs) inlines them from their
// TypeScript sources (the "@mco/source" export condition) instead, so that one
// entry is all a checkout builds. Each command is a chunk of its own (code
// splitting; commands/index.ts imports them on demand), so `mco controller`
// loads no @kubernetes/client-node.
const workspace = process.env.MCO_BUNDLE_WORKSPACE === '1';

export default defineConfig({
  entry: { main: 'src/main.ts' },
  format: ['esm'],
  splitting: true,
  platform: 'node',
  dts: false,
  clean: true,
  sourcemap: true,
  target: 'node22',
  noExternal: workspace ? [/^@mco\//] : [],
  esbuildOptions(options) {
    if (workspace) options.conditions = ['@mco/source'];
  },
});
