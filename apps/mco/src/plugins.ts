import type { InventoryProviderModule, SignalSourceModule } from '@mco/runtime';

// The one place where the mco app registers plugins: capacity-signal sources
// and inventory providers. A third-party provider package is added here the
// same way (docs/writing-a-provider.md).

export const signalSources: readonly SignalSourceModule<never>[] = [];

export const inventoryProviders: readonly InventoryProviderModule<never>[] = [];
