import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PluginKind, PluginModule } from '@mco/runtime';
import { formatPath, UsageError } from './cli.js';

// Creating plugins and importing third-party ones. The built-in plugins are
// listed in signal-sources.ts and inventory-providers.ts, apart, so that the
// controller does not load the inventory providers (and their Kubernetes
// client, @kubernetes/client-node).

const KIND_LABELS: Record<PluginKind, string> = {
  signals: 'signal-source',
  inventory: 'inventory',
  capacity: 'capacity-source',
};
const KIND_NOUNS: Record<PluginKind, string> = {
  signals: 'signal source',
  inventory: 'inventory provider',
  capacity: 'capacity source',
};

/** One entry of a plugins file: an instance name, the plugin it uses, and that plugin's configuration. */
export interface PluginEntry {
  readonly name: string;
  readonly plugin: string;
  readonly config?: unknown;
}

/**
 * Creates one instance per entry with the registered modules, once every entry
 * is valid. Every error is named by the entry's path in `where` (e.g.
 * `sources.yaml: sources[1].config.url`); all of them are reported at once, in
 * one UsageError (`; `-separated), so a file is fixed in one pass.
 */
export function createPlugins<K extends PluginKind, I, D>(
  modules: readonly PluginModule<K, unknown, I, D>[],
  entries: readonly PluginEntry[],
  where: (index: number) => string,
  deps: (entry: PluginEntry) => D,
): Map<string, I> {
  const errors: string[] = [];
  const valid: { entry: PluginEntry; module: PluginModule<K, unknown, I, D>; config: unknown }[] = [];
  const names = new Set<string>();
  for (const [index, entry] of entries.entries()) {
    const at = where(index);
    if (names.has(entry.name)) errors.push(`${at}.name: "${entry.name}" is used twice`);
    names.add(entry.name);
    const module = modules.find((m) => m.name === entry.plugin);
    if (!module) {
      const known = modules.map((m) => m.name).join(', ');
      const kind = modules[0] ? `${KIND_LABELS[modules[0].kind]} ` : '';
      errors.push(`${at}.plugin: unknown ${kind}plugin "${entry.plugin}" (known: ${known})`);
      continue;
    }
    const config = module.configSchema.safeParse(entry.config ?? {});
    if (!config.success) {
      for (const issue of config.error.issues) {
        const path = formatPath(issue.path);
        errors.push(`${at}.config${path ? `.${path}` : ''}: ${issue.message}`);
      }
      continue;
    }
    valid.push({ entry, module, config: config.data });
  }
  if (errors.length > 0) throw new UsageError(errors.join('; '));
  return new Map(valid.map(({ entry, module, config }) => [entry.name, module.create(config, deps(entry))]));
}

/** A plugins-file entry that names a built-in plugin or (module) a package or file to import. */
export interface ModuleEntry {
  readonly name: string;
  readonly plugin?: string | undefined;
  readonly module?: string | undefined;
  readonly config?: unknown;
}

/**
 * The modules and entries for `createPlugins`: the built-in `modules`, plus
 * every module an entry imports (`importPluginModule`, relative to `file`'s
 * folder). A module named like another plugin of its kind is a UsageError
 * naming the entry (`where(index)`).
 */
export async function withImportedModules<K extends PluginKind, I, D>(
  kind: K,
  modules: readonly PluginModule<K, unknown, I, D>[],
  entries: readonly ModuleEntry[],
  file: string,
  where: (index: number) => string,
): Promise<{ modules: PluginModule<K, unknown, I, D>[]; entries: PluginEntry[] }> {
  const all = [...modules];
  const resolved: PluginEntry[] = [];
  for (const [index, entry] of entries.entries()) {
    if (entry.module === undefined) {
      resolved.push({ name: entry.name, plugin: entry.plugin!, config: entry.config });
      continue;
    }
    const at = `${where(index)}.module`;
    const module = await importPluginModule(kind, entry.module, dirname(resolve(file)), at);
    const same = all.find((m) => m.name === module.name);
    if (same && same !== module) {
      throw new UsageError(
        `${at}: "${entry.module}" is named "${module.name}", the name of another ${KIND_NOUNS[kind]}; rename one (its name export)`,
      );
    }
    if (!same) all.push(module as PluginModule<K, unknown, I, D>);
    resolved.push({ name: entry.name, plugin: module.name, config: entry.config });
  }
  return { modules: all, entries: resolved };
}

const PLUGIN_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * Imports the plugin module `specifier` names: a package name, resolved from
 * `baseDir` upwards (node_modules folders, then NODE_PATH) and then from mco's
 * own installation, or a path to the module's file (relative to `baseDir`).
 * Resolution follows the package's `exports` with the "default" condition, as
 * `require.resolve` does; the module itself is imported as ESM. Every failure
 * is a UsageError starting with `at`.
 */
export async function importPluginModule<K extends PluginKind>(
  kind: K,
  specifier: string,
  baseDir: string,
  at: string,
): Promise<PluginModule<K, unknown, unknown>> {
  const isPath = specifier.startsWith('.') || isAbsolute(specifier);
  const bases = isPath ? [baseDir] : [baseDir, new URL('.', import.meta.url).pathname];
  let file: string | undefined;
  for (const base of bases) {
    try {
      file = createRequire(join(base, 'providers.js')).resolve(isPath ? resolve(baseDir, specifier) : specifier);
      break;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') {
        throw new UsageError(
          `${at}: package "${specifier}" exports no entry for the "default" condition (its package.json "exports" needs "default")`,
        );
      }
      if (code !== 'MODULE_NOT_FOUND') throw new UsageError(`${at}: cannot resolve "${specifier}": ${String(error)}`);
    }
  }
  if (!file) {
    const where = isPath ? resolve(baseDir, specifier) : `node_modules of ${baseDir}, NODE_PATH or mco's installation`;
    throw new UsageError(`${at}: cannot find module "${specifier}" (looked in ${where})`);
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(
      `${at}: importing "${specifier}" failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const problem =
    module.kind !== kind
      ? `its kind export is ${JSON.stringify(module.kind)}, not "${kind}"`
      : typeof module.name !== 'string' || !PLUGIN_NAME.test(module.name)
        ? 'its name export is not lower-case words and dashes'
        : typeof (module.configSchema as { safeParse?: unknown } | undefined)?.safeParse !== 'function'
          ? 'its configSchema export is not a zod schema'
          : typeof module.create !== 'function'
            ? 'its create export is not a function'
            : undefined;
  if (problem) {
    throw new UsageError(
      `${at}: "${specifier}" is not a plugin of kind "${kind}": ${problem} (a plugin exports kind, name, configSchema and create; docs/writing-a-provider.md)`,
    );
  }
  return module as unknown as PluginModule<K, unknown, unknown>;
}
