import { gkeFleetProvider } from '@mco/provider-gke';
import { manualProvider } from '@mco/provider-manual';
import type { InventoryProviderModule, PluginDeps, PluginKind, PluginModule, SignalSourceModule } from '@mco/runtime';
import { formatPath, UsageError } from './cli.js';
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

const KIND_LABELS: Record<PluginKind, string> = { signals: 'signal-source', inventory: 'inventory' };

/** One entry of a plugins file: an instance name, the plugin it uses, and that plugin's configuration. */
export interface PluginEntry {
  readonly name: string;
  readonly plugin: string;
  readonly config?: unknown;
}

/**
 * Creates one instance per entry with the registered modules. Every error is a
 * UsageError naming the entry's path in `where` (e.g. `sources.yaml: sources[1].config.url`).
 */
export function createPlugins<K extends PluginKind, I>(
  modules: readonly PluginModule<K, unknown, I>[],
  entries: readonly PluginEntry[],
  where: (index: number) => string,
  deps: (entry: PluginEntry) => PluginDeps,
): Map<string, I> {
  const created = new Map<string, I>();
  for (const [index, entry] of entries.entries()) {
    const at = where(index);
    if (created.has(entry.name)) throw new UsageError(`${at}.name: "${entry.name}" is used twice`);
    const module = modules.find((m) => m.name === entry.plugin);
    if (!module) {
      const known = modules.map((m) => m.name).join(', ');
      const kind = modules[0] ? `${KIND_LABELS[modules[0].kind]} ` : '';
      throw new UsageError(`${at}.plugin: unknown ${kind}plugin "${entry.plugin}" (known: ${known})`);
    }
    const config = module.configSchema.safeParse(entry.config ?? {});
    if (!config.success) {
      const issue = config.error.issues[0]!;
      const path = formatPath(issue.path);
      throw new UsageError(`${at}.config${path ? `.${path}` : ''}: ${issue.message}`);
    }
    created.set(entry.name, module.create(config.data, deps(entry)));
  }
  return created;
}
