// Every configuration snippet in docs/ that configures a provider or is a
// placement validates against the schema that configures it: a user who copies
// one gets a working file, not `Unrecognized key`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compilePlacementSpec, PLACEMENT_KIND, PlacementSchema } from '@mco/core';
import type { InventoryProviderModule } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import * as template from '../../../templates/provider-template/src/index.js';
import { capacitySources } from '../src/capacity-sources.js';
import { inventoryProviders } from '../src/inventory-providers.js';

const DOCS = new URL('../../../docs/', import.meta.url).pathname;

interface Snippet {
  readonly where: string;
  readonly value: unknown;
}

const snippets: Snippet[] = readdirSync(DOCS)
  .filter((f) => f.endsWith('.md'))
  .sort()
  .flatMap((file) => {
    const text = readFileSync(join(DOCS, file), 'utf8');
    // A fenced block may sit in a list item: its lines are indented like its fence.
    return [...text.matchAll(/^( *)```yaml\n([\s\S]*?)^\1```/gm)].flatMap((m) => {
      const where = `docs/${file}:${text.slice(0, m.index).split('\n').length}`;
      const body = m[2]!.replace(new RegExp(`^ {0,${m[1]!.length}}`, 'gm'), '');
      return parseAllDocuments(body).map((doc) => {
        if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0]!.message}`);
        return { where, value: doc.toJSON() as unknown };
      });
    });
  });

interface ProviderEntry {
  readonly name: string;
  readonly plugin?: string;
  readonly module?: string;
  readonly config?: unknown;
}

/** Inventory provider entries: a providers file's `providers:`, or the chart values' `inventory.providers`. */
function providerEntries(value: unknown): ProviderEntry[] {
  const doc = value as { providers?: unknown; inventory?: { providers?: unknown } } | null;
  const list = doc?.providers ?? doc?.inventory?.providers;
  if (!Array.isArray(list)) return [];
  return (list as ProviderEntry[]).filter((e) => typeof e === 'object' && ('plugin' in e || 'module' in e));
}

/** The module a docs entry names: a built-in plugin, or (module:) a provider made from the template. */
function moduleOf(entry: ProviderEntry): InventoryProviderModule<unknown> | undefined {
  if (entry.module !== undefined) return template as unknown as InventoryProviderModule<unknown>;
  return inventoryProviders.find((p) => p.name === entry.plugin);
}

/** A provider's bare config (docs/providers.md's Configuration sections), known by its required key. */
function bareConfig(value: unknown): ProviderEntry[] {
  const doc = value as Record<string, unknown> | null;
  if (typeof doc !== 'object' || doc === null || 'kind' in doc || 'providers' in doc) return [];
  if ('project' in doc) return [{ name: 'config', plugin: 'gke-fleet', config: doc }];
  if ('file' in doc) return [{ name: 'config', plugin: 'manual', config: doc }];
  return [];
}

const providers = snippets.flatMap((s) =>
  [...providerEntries(s.value), ...bareConfig(s.value)].map((entry) => ({ where: s.where, entry })),
);
/** Built-in capacity sources named in a signal sources file's `capacitySources:`. */
const capacityEntries = snippets.flatMap((s) => {
  const list = (s.value as { capacitySources?: unknown } | null)?.capacitySources;
  if (!Array.isArray(list)) return [];
  return (list as ProviderEntry[]).filter((e) => e.plugin !== undefined).map((entry) => ({ where: s.where, entry }));
});
const placements = snippets.filter((s) => (s.value as { kind?: unknown } | null)?.kind === PLACEMENT_KIND);

describe('configuration snippets in docs/', () => {
  it('finds the provider entries and placements to check', () => {
    expect(providers.length).toBeGreaterThanOrEqual(4);
    expect(placements.length).toBeGreaterThanOrEqual(2);
  });

  it.each(providers.map((p) => [`${p.where} ${p.entry.name}`, p] as const))(
    'provider %s: its config validates against its configSchema',
    (_label, { entry }) => {
      const module = moduleOf(entry);
      expect(module, `no provider "${entry.plugin}"`).toBeDefined();
      const result = module!.configSchema.safeParse(entry.config ?? {});
      expect(result.error?.issues ?? []).toEqual([]);
    },
  );

  it.each(capacityEntries.map((p) => [`${p.where} ${p.entry.name}`, p] as const))(
    'capacity source %s: its config validates against its configSchema',
    (_label, { entry }) => {
      const module = capacitySources.find((m) => m.name === entry.plugin);
      expect(module, `no capacity source "${entry.plugin}"`).toBeDefined();
      const result = module!.configSchema.safeParse(entry.config ?? {});
      expect(result.error?.issues ?? []).toEqual([]);
    },
  );

  it.each(placements.map((s) => [s.where, s] as const))('placement %s is valid', (_where, { value }) => {
    const result = PlacementSchema.safeParse(value);
    expect(result.error?.issues ?? []).toEqual([]);
    const compiled = compilePlacementSpec((value as { spec?: unknown }).spec);
    expect(compiled.ok ? undefined : compiled.error).toBeUndefined();
  });
});
