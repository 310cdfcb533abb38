import { gkeFleetProvider } from '@mco/provider-gke';
import { manualProvider } from '@mco/provider-manual';
import type { InventoryProviderModule, SignalSourceModule } from '@mco/runtime';
import { kubernetesSignalsModule } from '@mco/signals-kubernetes';
import { prometheusSignalsModule } from '@mco/signals-prometheus';
// A third-party provider, registered exactly as a published package would be
// (its source lives in examples/ so that it is built and type-checked with the app).
import * as cmdbHttpProvider from '../../../examples/providers/cmdb-http/src/index.js';

// The one place where the mco app registers plugins: capacity-signal sources
// and inventory providers. A third-party provider package is added here the
// same way (docs/writing-a-provider.md).

// `unknown`: each module parses its own config with its configSchema before create().
export const signalSources: readonly SignalSourceModule<unknown>[] = [kubernetesSignalsModule, prometheusSignalsModule];

// `unknown`: each module parses its own config with its configSchema before create().
export const inventoryProviders: readonly InventoryProviderModule<unknown>[] = [
  manualProvider,
  gkeFleetProvider,
  cmdbHttpProvider,
];
