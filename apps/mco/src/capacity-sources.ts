import type { CapacitySourceModule } from '@mco/runtime';
import { clusterPropertyCapacityModule, karpenterCapacityModule } from '@mco/signals-kubernetes';
import { prometheusCapacityModule } from '@mco/signals-prometheus';

// The capacity sources built into the mco app; others load out of tree (a
// capacitySources entry's `module:`, docs/writing-a-provider.md).
// `unknown`: each module parses its own config with its configSchema before create().
export const capacitySources: readonly CapacitySourceModule<unknown>[] = [
  karpenterCapacityModule,
  prometheusCapacityModule,
  clusterPropertyCapacityModule,
];
