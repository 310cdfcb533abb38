import { defineConfig } from 'tsup';

// The app bundles the @mco/* workspace packages from their TypeScript sources
// (the "source" export condition), so `npm ci` only has to build this one
// entry for `npx mco` to work; third-party packages stay external.
export default defineConfig({
  entry: { main: 'src/main.ts' },
  format: ['esm'],
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
