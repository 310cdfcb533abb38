import { gkeFleetProvider } from '@mco/provider-gke';
import { manualProvider } from '@mco/provider-manual';
import type { InventoryProviderModule } from '@mco/runtime';
// A third-party provider, registered exactly as a published package would be
// (its source lives in examples/ so that it is built and type-checked with the app).
import * as cmdbHttpProvider from '../../../examples/providers/cmdb-http/src/index.js';

// The inventory providers built into the mco app. Inventory providers written
// outside this repository are loaded at run time by `importPluginModule` (the
// providers file's `module:` key), so a released mco runs them without being
// rebuilt (docs/writing-a-provider.md).
// `unknown`: each module parses its own config with its configSchema before create().
export const inventoryProviders: readonly InventoryProviderModule<unknown>[] = [
  manualProvider,
  gkeFleetProvider,
  cmdbHttpProvider,
];
