import { cpSync, rmSync } from 'node:fs';
import { defineConfig } from 'tsup';

// The CRD files are the Helm chart's crds/, the one source of them: copied
// here on every build (crds/ is not committed in this package).
const CHART_CRDS = new URL('../../apps/mco/chart/crds/', import.meta.url);

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  target: 'node22',
  onSuccess: async () => {
    rmSync(new URL('./crds/', import.meta.url), { recursive: true, force: true });
    cpSync(CHART_CRDS, new URL('./crds/', import.meta.url), { recursive: true });
  },
});
