// A minimal mco inventory provider. Copy this folder, rename the package, and
// replace `readSource` with a call to your source of truth (docs/writing-a-provider.md).
//
// The contract: export `kind`, `name`, `configSchema` and `create`; importing
// the package does nothing else. mco validates the user's configuration with
// `configSchema`, calls `create(config, deps)` and runs the provider until shutdown.
import {
  createSyncMetrics,
  ownedCount,
  runSyncLoop,
  syncClusterProfiles,
  type DesiredClusterProfile,
  type SyncOutcome,
} from '@mco/provider-manual';
import { toMcoError, type InventoryProvider, type PluginDeps } from '@mco/runtime';
import { z } from 'zod';

export const kind = 'inventory';
/** Unique among inventory providers: lower-case words and dashes. */
export const name = 'my-inventory';

/** Everything the user configures. Unknown keys are errors, so typos name themselves. */
export const configSchema = z.strictObject({
  /** Namespace of the ClusterProfiles this provider writes. */
  namespace: z.string().min(1).default('fleet'),
  /**
   * `spec.clusterManager.name` and `x-k8s.io/cluster-manager` label of its
   * profiles: it owns only those. Required, with no default: two instances (or
   * two providers made from this template) with one manager name would prune
   * each other's profiles.
   */
  managerName: z
    .string()
    .max(63)
    .regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, 'must be a valid label value'),
  pollSeconds: z.number().positive().default(60),
  /**
   * Let one pass prune more than half of this provider's profiles. Off, an empty
   * or near-empty listing is refused as a broken source; turn it on for a real
   * decommission, then off again.
   */
  allowMassPrune: z.boolean().default(false),
  /** Replace with your source's settings (URL, credentials file, ...). */
  clusters: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        server: z.url(),
        labels: z.record(z.string(), z.string()).default({}),
      }),
    )
    .default([]),
});
export type Config = z.output<typeof configSchema>;

/** One cluster as your source of truth describes it. */
export interface SourceCluster {
  readonly name: string;
  readonly server: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The listing of one pass. `complete: false` means: update what you have, delete nothing. */
export interface SourceListing {
  readonly complete: boolean;
  readonly clusters: readonly SourceCluster[];
}

/** Replace with a call to your source. Throw (or return complete: false) when the view is partial. */
export async function readSource(config: Config, _abort: AbortSignal): Promise<SourceListing> {
  return { complete: true, clusters: config.clusters };
}

/** Pure mapping from your source to ClusterProfiles: the part worth most tests. */
export function toClusterProfiles(listing: SourceListing, config: Config): DesiredClusterProfile[] {
  return listing.clusters.map((c) => ({
    namespace: config.namespace,
    name: c.name,
    labels: { ...c.labels },
    status: { accessProviders: [{ name: 'kubeconfig', cluster: { server: c.server } }] },
  }));
}

export function create(config: Config, deps: PluginDeps): InventoryProvider {
  const logger = deps.logger.child({ provider: name, manager: config.managerName });
  // Metric names follow the provider's name; the manager label tells instances apart.
  const metrics = createSyncMetrics(deps.metrics, name.replaceAll('-', '_'), config.managerName);
  const sync = async (abort: AbortSignal): Promise<SyncOutcome> => {
    try {
      const listing = await readSource(config, abort);
      const report = await syncClusterProfiles({
        kubeConfig: deps.kubeConfig,
        manager: config.managerName,
        desired: toClusterProfiles(listing, config),
        prune: listing.complete, // never prune from a partial view
        allowMassPrune: config.allowMassPrune,
        namespaces: [config.namespace],
        now: deps.now,
        logger,
        abort,
      });
      if (report.failed.length > 0) {
        metrics.recordError('WriteFailed');
        return { ok: false, reason: 'WriteFailed', error: report.failed[0]!.error };
      }
      metrics.recordSuccess(deps.now(), ownedCount(report));
      return { ok: true };
    } catch (error) {
      const failure = toMcoError(error);
      metrics.recordError(failure.code);
      return { ok: false, reason: failure.code, error: failure };
    }
  };
  return {
    run: (abort) =>
      runSyncLoop({
        abort,
        logger,
        sync,
        intervalMs: config.pollSeconds * 1000,
        backoff: { initialMs: 1000, maxMs: 300_000 },
      }),
  };
}
