import type { PluginModule } from '@mco/runtime';
import { UsageError } from './cli.js';

interface ProviderEntry {
  readonly name: string;
  readonly plugin: string;
  readonly config?: unknown;
}

/** The profiles a provider owns: its manager name, in some namespaces or (undefined) all. */
interface Scope {
  readonly manager: string;
  readonly namespaces: ReadonlySet<string> | undefined;
}

/**
 * Two providers with one cluster manager name over overlapping namespaces
 * would each prune the other's ClusterProfiles (every sync deletes what the
 * other one wrote): refused with the two entries named. A provider's scope is
 * read from its parsed configuration: `managerName`, and `namespaces` (a list)
 * or, except for `manual`, `namespace` (a provider that writes one namespace);
 * neither means all namespaces. Entries whose configuration does not parse are left to the
 * plugin loader, which names the field.
 */
export function assertUniqueOwnership(
  modules: readonly PluginModule<'inventory', unknown, unknown>[],
  entries: readonly ProviderEntry[],
  where: (index: number) => string,
): void {
  const scopes: { index: number; scope: Scope }[] = [];
  entries.forEach((entry, index) => {
    const parsed = modules.find((m) => m.name === entry.plugin)?.configSchema.safeParse(entry.config ?? {});
    const scope = parsed?.success ? scopeOf(entry.plugin, parsed.data) : undefined;
    if (!scope) return;
    const other = scopes.find((s) => s.scope.manager === scope.manager && overlap(s.scope, scope));
    if (other)
      throw new UsageError(
        `${where(index)}: cluster manager "${scope.manager}" is already used by ${where(other.index)} ` +
          `("${entries[other.index]!.name}") in the same namespaces; each would prune the other's ClusterProfiles ` +
          '(give each provider its own managerName)',
      );
    scopes.push({ index, scope });
  });
}

function scopeOf(plugin: string, config: unknown): Scope | undefined {
  const c = config as { managerName?: unknown; namespaces?: unknown; namespace?: unknown };
  if (typeof c.managerName !== 'string') return undefined;
  if (Array.isArray(c.namespaces)) return { manager: c.managerName, namespaces: new Set(c.namespaces.map(String)) };
  // The manual provider's `namespace` is only the default of its declarations: it prunes everywhere.
  if (plugin !== 'manual' && typeof c.namespace === 'string')
    return { manager: c.managerName, namespaces: new Set([c.namespace]) };
  return { manager: c.managerName, namespaces: undefined };
}

function overlap(a: Scope, b: Scope): boolean {
  if (!a.namespaces || !b.namespaces) return true;
  return [...a.namespaces].some((n) => b.namespaces!.has(n));
}
