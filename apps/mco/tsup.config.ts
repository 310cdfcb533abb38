import { defineConfig } from 'tsup';

// The app bundles the @mco/* workspace packages from their TypeScript sources
// (the "source" export condition), so `npm ci` only has to build this one
// entry for `npx mco` to work; third-party packages stay external. Each command
// is a chunk of its own (code splitting; commands/index.ts imports them on
// demand), so `mco controller` loads no @kubernetes/client-node.
export default defineConfig({
  entry: { main: 'src/main.ts' },
  format: ['esm'],
  splitting: true,
  platform: 'node',
  dts: false,
  clean: true,
  sourcemap: true,
  target: 'node20',
  noExternal: [/^@mco\//],
  esbuildOptions(options) {
    options.conditions = ['source'];
  },
});
