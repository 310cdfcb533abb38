import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'client-node': 'src/client-node.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
