import { watch, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { basename, dirname } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  McoError,
  silentLogger,
  toMcoError,
  type InventoryProvider,
  type InventoryProviderModule,
  type Logger,
  type PluginDeps,
} from '@mco/runtime';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseClustersFile, resolveClusterDeclarations } from './declarations.js';
import { createSyncMetrics, runSyncLoop } from './loop.js';
import { syncClusterProfiles, type SyncReport } from './sync.js';

/** Default `spec.clusterManager.name` of profiles declared by hand. */
export const MANUAL_MANAGER = 'mco-manual';
const MAX_FILE_BYTES = 10 * 1024 * 1024;
const ManagerName = z
  .string()
  .min(1)
  .max(63)
  .regex(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/, 'must be a valid label value');
const Namespace = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lower-case DNS label');

export const manualProviderConfigSchema = z.strictObject({
  /** The clusters file (YAML or JSON); re-read when it changes and every `resyncSeconds`. */
  file: z.string().min(1),
  /** Namespace of clusters that name none. */
  namespace: Namespace.default('fleet'),
  managerName: ManagerName.default(MANUAL_MANAGER),
  /** Delete owned profiles that are no longer declared. */
  prune: z.boolean().default(true),
  /** Let one sync prune more than half of the owned profiles (a real decommission; set it back afterwards). */
  allowMassPrune: z.boolean().default(false),
  /** Restrict listing and pruning to these namespaces (a namespaced Role then suffices). */
  namespaces: z.array(Namespace).min(1).optional(),
  resyncSeconds: z.number().positive().default(300),
  backoff: z
    .strictObject({
      initialSeconds: z.number().positive().default(1),
      maxSeconds: z.number().positive().default(300),
    })
    .default({ initialSeconds: 1, maxSeconds: 300 }),
});
export type ManualProviderConfig = z.output<typeof manualProviderConfigSchema>;

export interface ApplyClustersFileOptions {
  readonly kubeConfig: KubeConfig;
  readonly file: string;
  readonly namespace: string;
  readonly manager: string;
  readonly prune: boolean;
  /** See SyncOptions.allowMassPrune. */
  readonly allowMassPrune?: boolean;
  readonly namespaces?: readonly string[];
  readonly dryRun?: boolean;
  readonly now: () => Date;
  readonly logger?: Logger;
  readonly abort?: AbortSignal;
}

/**
 * Reads a clusters file and syncs the hub with it once (`mco clusters apply`).
 * An unreadable or invalid file throws McoError(Invalid) before anything is written.
 */
export async function applyClustersFile(options: ApplyClustersFileOptions): Promise<SyncReport> {
  const declarations = parseClustersFile(await readClustersFile(options.file), options.file);
  const desired = await resolveClusterDeclarations(declarations.clusters, {
    namespace: options.namespace,
    baseDir: dirname(options.file),
  });
  return syncClusterProfiles({
    kubeConfig: options.kubeConfig,
    manager: options.manager,
    desired,
    prune: options.prune,
    allowMassPrune: options.allowMassPrune,
    namespaces: options.namespaces,
    dryRun: options.dryRun,
    now: options.now,
    logger: options.logger,
    abort: options.abort,
  });
}

/**
 * Reads a YAML or JSON file of at most 10 MiB, only once it is stable: a file
 * caught mid-write (size or mtime changing across the read, or fewer bytes
 * read than it has) is read again, so a truncated file never becomes the
 * desired set. `settle` is the pause between the read and the second look
 * (100 ms). Still changing after `attempts` reads: a retryable
 * McoError(Unavailable) naming the file.
 */
export async function readClustersFile(
  path: string,
  {
    settle = () => delay(100),
    attempts = 10,
  }: { readonly settle?: () => Promise<unknown>; readonly attempts?: number } = {},
): Promise<unknown> {
  let text: string | undefined;
  for (let attempt = 1; text === undefined; attempt++) {
    let before: Stats, after: Stats, read: string;
    try {
      before = await stat(path);
      if (before.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
      read = await readFile(path, 'utf8');
      await settle();
      after = await stat(path);
    } catch (error) {
      throw new McoError('Invalid', `cannot read ${path}: ${(error as Error).message}`, false, { cause: error });
    }
    if (before.size === after.size && before.mtimeMs === after.mtimeMs && Buffer.byteLength(read) === after.size)
      text = read;
    else if (attempt >= attempts)
      throw new McoError('Unavailable', `${path} kept changing while being read (${attempts} attempts)`, true);
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new McoError('Invalid', `${path} is not valid YAML or JSON: ${(error as Error).message}`, false);
  }
}

// The provider contract (docs/writing-a-provider.md): kind, name, configSchema, create.
export const kind = 'inventory';
export const name = 'manual';
export const configSchema = manualProviderConfigSchema;

/**
 * The manual inventory provider in controller mode: keeps the hub in step
 * with a clusters file, re-reading it when it changes (also through a
 * ConfigMap volume's symlink swap) and every `resyncSeconds`.
 */
export function create(config: ManualProviderConfig, deps: PluginDeps): InventoryProvider {
  const logger = (deps.logger ?? silentLogger).child({ provider: 'manual', manager: config.managerName });
  const metrics = createSyncMetrics(deps.metrics, 'mco_manual_provider', config.managerName);
  return {
    run: (abort) =>
      runSyncLoop({
        abort,
        logger,
        intervalMs: config.resyncSeconds * 1000,
        backoff: { initialMs: config.backoff.initialSeconds * 1000, maxMs: config.backoff.maxSeconds * 1000 },
        changed: watchFile(config.file, abort).next,
        sync: async (signal) => {
          try {
            const report = await applyClustersFile({
              kubeConfig: deps.kubeConfig,
              file: config.file,
              namespace: config.namespace,
              manager: config.managerName,
              prune: config.prune,
              allowMassPrune: config.allowMassPrune,
              namespaces: config.namespaces,
              now: deps.now,
              logger,
              abort: signal,
            });
            logSkipped(logger, report);
            if (report.failed.length > 0) {
              metrics.recordError('WriteFailed');
              return { ok: false, reason: 'WriteFailed', error: report.failed[0]!.error };
            }
            metrics.recordSuccess(deps.now(), ownedCount(report));
            logger.info('clusters file synced', summary(report));
            return { ok: true };
          } catch (error) {
            const failure = toMcoError(error);
            metrics.recordError(failure.code);
            return { ok: false, reason: failure.code, error: failure };
          }
        },
      }),
  };
}

/** The module the mco app registers: the three exports above, plus its kind. */
export const manualProvider: InventoryProviderModule<ManualProviderConfig> = { kind, name, configSchema, create };

/** Profiles owned after a successful sync. */
export function ownedCount(report: SyncReport): number {
  return new Set([...report.created, ...report.updated, ...report.statusUpdated, ...report.unchanged]).size;
}

export function summary(report: SyncReport) {
  return {
    created: report.created.length,
    updated: new Set([...report.updated, ...report.statusUpdated].filter((k) => !report.created.includes(k))).size,
    deleted: report.deleted.length,
    unchanged: report.unchanged.length,
    skipped: report.skipped.length,
    writes: report.writes,
  };
}

export function logSkipped(logger: Logger, report: SyncReport): void {
  for (const s of report.skipped)
    logger.warn('ClusterProfile skipped', { cluster: s.key, reason: s.reason, detail: s.message });
}

/**
 * Watches `path` through its directory (so replaced files and a ConfigMap
 * volume's `..data` symlink swap count) from the start of `run`, so a change
 * made while a sync is running is not missed: `next` then resolves at once.
 */
function watchFile(path: string, abort: AbortSignal): { next: (signal: AbortSignal) => Promise<void> } {
  let pending = false;
  let wake: (() => void) | undefined;
  const changed = () => {
    pending = true;
    wake?.();
  };
  try {
    const watcher = watch(dirname(path), { signal: abort }, (_event, name) => {
      if (name === null || name === basename(path) || name.startsWith('..data')) changed();
    });
    watcher.on('error', () => undefined);
  } catch {
    // Watching is an optimisation: the periodic resync still applies changes.
  }
  return {
    next: (signal) =>
      new Promise<void>((resolve) => {
        const done = () => {
          wake = undefined;
          pending = false;
          // Let a writer finish the file before it is read.
          setTimeout(resolve, 100);
        };
        if (pending) return done();
        wake = done;
        // A wait that ended otherwise (timer, shutdown) must not swallow a later change.
        signal.addEventListener(
          'abort',
          () => {
            if (wake === done) wake = undefined;
            resolve();
          },
          { once: true },
        );
      }),
  };
}
