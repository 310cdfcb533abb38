import type { AddressInfo } from 'node:net';
import type { ClusterProfile, Placement } from '@mco/core';
import {
  CLUSTER_PROFILES,
  PLACEMENTS,
  createInformer,
  readPlacementStatus,
  type InformerTuning,
} from '@mco/kube-runtime';
import { hubClient, type HubSource } from '@mco/kube-runtime/client-node';
import { silentLogger, type Logger, type ReconcileRecorder } from '@mco/runtime';
import { createCachedPlacementView, isFresh } from './cache.js';
import { DEFAULT_MANAGER } from './cluster-secret.js';
import { createApplicationLister, createApplicationSetClient, createSecretClient } from './kube.js';
import { holdManagerName, type ManagerLease, type ManagerLeaseOptions } from './manager-lease.js';
import { createApplicationSetRefresher, type Refresher } from './refresher.js';
import { createSecretSyncer, type AccessResolver, type SecretSyncer } from './secret-syncer.js';
import { createPluginServer, type PluginServerLimits, type PluginServerOptions } from './server.js';
import { createFileTokenVerifier } from './token.js';
import { createTrustedServerOf, type NamedServerPolicy } from './trusted-server.js';
import type { PlacementView } from './view.js';

/** The hub: `hub`, a connection (`loadKubeConfig` of @mco/kube-runtime), or a client-node `kubeConfig`. */
export interface ArgoCdDeliveryOptions extends HubSource {
  readonly logger?: Logger;
  /** Records the refresher's passes and the syncer's keys (`reconcileMetrics` of @mco/runtime). */
  readonly reconciles?: ReconcileRecorder;
  /** Access provider names in order of preference, for the plugin's `server` output. */
  readonly accessProviderNames?: readonly string[];
  /**
   * The access providers' bounds (the provider file's entries): the plugin's
   * `server` is null for a profile the Secret syncer would refuse. Without
   * them only the defaults hold (https, nothing reserved, no insecure TLS or
   * proxy, no server an older profile names).
   */
  readonly serverPolicies?: readonly NamedServerPolicy[];
  /** The plugin generator HTTP server; omit to run without it. */
  readonly plugin?: {
    readonly host: string;
    readonly port: number;
    /** File holding the bearer token (a mounted Secret key); re-read when it changes. */
    readonly tokenFile: string;
    readonly limits?: PluginServerLimits;
    /** Answer 503 when a cache heard nothing from the API server for this long (default 10 min). */
    readonly maxSilenceMs?: number;
    /** Served at GET /metrics (see `PluginServerOptions.metrics`). */
    readonly metrics?: PluginServerOptions['metrics'];
  };
  /** Refresh ApplicationSets when a placement's answer changes; omit to disable. */
  readonly refresh?: {
    readonly namespace?: string;
    readonly debounceMs?: number;
    /**
     * The plugin's base URL (`http://host:port`): its /readyz is probed, and the
     * ApplicationSets that use it are refreshed when it becomes ready again.
     */
    readonly pluginUrl?: string;
    readonly probeIntervalMs?: number;
  };
  /** Sync ClusterProfiles to Argo CD cluster Secrets; omit to disable. */
  readonly secretSync?: {
    /** Namespace Argo CD reads cluster Secrets from. */
    readonly namespace: string;
    readonly manager?: string;
    readonly resolveAccess: AccessResolver;
    readonly forgetAccess?: (key: string) => void;
    readonly refreshBeforeMs?: number;
    readonly resyncMs?: number;
    readonly releaseGraceMs?: number;
    /** See `SecretSyncerOptions.applicationHoldTimeoutMs` (default 1 h). */
    readonly applicationHoldTimeoutMs?: number;
    /** Profiles reconciled (credential plugins run) at once (default 16). */
    readonly concurrency?: number;
    /** Timing of the Lease that keeps the manager name unique among live syncers (tests shorten it). */
    readonly lease?: Pick<ManagerLeaseOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'identity'>;
  };
  /** Only ClusterProfiles in these namespaces are read (`--cluster-profile-namespaces`); empty or absent: all. */
  readonly clusterProfileNamespaces?: readonly string[];
  /** Informer tuning (tests shorten these). */
  readonly informers?: InformerTuning;
}

export interface ArgoCdDelivery {
  readonly view: PlacementView;
  /** Where the plugin listens, when it runs. */
  readonly pluginAddress: AddressInfo | undefined;
  readonly refresher: Refresher | undefined;
  readonly syncer: SecretSyncer | undefined;
  /** The Lease of the syncer's manager name: it syncs only while it holds it. */
  readonly managerLease: ManagerLease | undefined;
  /** True once the placement and ClusterProfile caches are synced. */
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * Runs what `mco argocd-plugin` runs: informers on placements and
 * ClusterProfiles (@mco/kube-runtime's reflector), the plugin generator server
 * answering from them, and optionally the ApplicationSet refresher and the
 * cluster Secret syncer. Resolves once the plugin listens; the caches sync in
 * the background (the plugin answers 503 until they have).
 */
export async function startArgoCdDelivery(options: ArgoCdDeliveryOptions): Promise<ArgoCdDelivery> {
  const logger = options.logger ?? silentLogger;
  const informer = { logger, tuning: options.informers };
  const hub = hubClient(options);
  const placements = createInformer<Placement>(hub, PLACEMENTS, informer);
  // Profiles elsewhere are never seen: no plugin answer, no Secret, no credential for them.
  const clusterProfiles = createInformer<ClusterProfile>(hub, CLUSTER_PROFILES, {
    ...informer,
    scope: { namespaces: options.clusterProfileNamespaces },
  });
  const maxSilenceMs = options.plugin?.maxSilenceMs ?? 10 * 60_000;
  const view = createCachedPlacementView({ placements, clusterProfiles, maxSilenceMs });
  const serverOf = createTrustedServerOf({
    clusterProfiles,
    accessProviderNames: options.accessProviderNames,
    policies: options.serverPolicies,
    hubServer: hub.connection.server,
  });

  const refresher = options.refresh
    ? createApplicationSetRefresher({
        placements,
        clusterProfiles,
        applicationSets: createApplicationSetClient(hub, {
          ...(options.refresh.namespace ? { namespace: options.refresh.namespace } : {}),
        }),
        serverOf,
        ...(options.refresh.debounceMs !== undefined ? { debounceMs: options.refresh.debounceMs } : {}),
        ...(options.refresh.pluginUrl ? { pluginReady: probeReadyz(options.refresh.pluginUrl) } : {}),
        ...(options.refresh.probeIntervalMs !== undefined ? { probeIntervalMs: options.refresh.probeIntervalMs } : {}),
        ...(options.reconciles ? { reconciles: options.reconciles } : {}),
        logger,
      })
    : undefined;

  const sync = options.secretSync;
  const syncer = sync
    ? createSecretSyncer({
        clusterProfiles,
        secrets: createSecretClient(hub, {
          namespace: sync.namespace,
          ...(sync.manager ? { manager: sync.manager } : {}),
        }),
        namespace: sync.namespace,
        resolveAccess: sync.resolveAccess,
        ...(sync.forgetAccess ? { forgetAccess: sync.forgetAccess } : {}),
        ...(sync.manager ? { manager: sync.manager } : {}),
        ...(sync.refreshBeforeMs !== undefined ? { refreshBeforeMs: sync.refreshBeforeMs } : {}),
        ...(sync.resyncMs !== undefined ? { resyncMs: sync.resyncMs } : {}),
        ...(sync.releaseGraceMs !== undefined ? { releaseGraceMs: sync.releaseGraceMs } : {}),
        // A released Secret goes only once no Application in the Argo CD namespace targets its cluster (a live read).
        applicationsUsing: createApplicationLister(hub, sync.namespace),
        ...(sync.applicationHoldTimeoutMs !== undefined
          ? { applicationHoldTimeoutMs: sync.applicationHoldTimeoutMs }
          : {}),
        ...(sync.concurrency !== undefined ? { concurrency: sync.concurrency } : {}),
        // Unknown (never "not in use") while the placement cache is unsynced or silent:
        // an empty or stale cache must not delete a Secret Argo CD still needs.
        isClusterInUse: (namespace, name) =>
          isFresh(placements, maxSilenceMs) ? isListed(placements.list(), namespace, name) : undefined,
        ...(options.reconciles ? { reconciles: options.reconciles } : {}),
        logger,
      })
    : undefined;
  if (syncer) {
    // A cluster a placement released may have a Secret kept only for it.
    placements.addHandler((event, placement, previous) => {
      const now = new Set(clustersOf(placement).map((c) => `${c.namespace}/${c.name}`));
      for (const c of clustersOf(previous)) {
        const key = `${c.namespace}/${c.name}`;
        if (!now.has(key) || event === 'delete') syncer.enqueue(key);
      }
    });
  }

  const token = options.plugin
    ? createFileTokenVerifier(options.plugin.tokenFile, {
        onError: (error) => logger.warn('cannot re-read the plugin token file; keeping the last token', { error }),
      })
    : undefined;
  const server =
    options.plugin && token
      ? createPluginServer({
          view,
          token,
          logger,
          serverOf,
          ...(options.plugin.limits ? { limits: options.plugin.limits } : {}),
          ...(options.plugin.metrics ? { metrics: options.plugin.metrics } : {}),
          ...(options.reconciles ? { reconciles: options.reconciles } : {}),
        })
      : undefined;

  refresher?.start();
  placements.start();
  clusterProfiles.start();
  let syncing: Promise<void> | undefined;
  // The syncer runs only while this process holds its manager name (unique among live syncers).
  const managerLease =
    sync && syncer
      ? holdManagerName({
          client: hub,
          namespace: sync.namespace,
          manager: sync.manager ?? DEFAULT_MANAGER,
          ...sync.lease,
          logger,
          onAcquired: () => (syncing = syncer.start()),
          onLost: () => syncer.stop(),
        })
      : undefined;
  let pluginAddress: AddressInfo | undefined;
  try {
    pluginAddress =
      server && options.plugin ? await server.listen(options.plugin.port, options.plugin.host) : undefined;
  } catch (error) {
    token?.close();
    syncer?.stop();
    await managerLease?.stop();
    refresher?.stop();
    await Promise.all([placements.stop(), clusterProfiles.stop()]);
    throw error;
  }

  return {
    view,
    pluginAddress,
    refresher,
    syncer,
    managerLease,
    ready: () => placements.hasSynced() && clusterProfiles.hasSynced(),
    async stop() {
      await server?.close();
      token?.close();
      refresher?.stop();
      syncer?.stop();
      await syncing;
      await managerLease?.stop();
      await Promise.all([placements.stop(), clusterProfiles.stop()]);
    },
  };
}

/** A readiness probe of the plugin: its /readyz answers 2xx within 2 s. */
function probeReadyz(baseUrl: string): () => Promise<boolean> {
  const url = new URL('/readyz', baseUrl);
  return async () => {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.body?.cancel();
    return response.ok;
  };
}

/** The listed clusters of a cached (unvalidated) placement; [] when its status is not a list. */
function clustersOf(placement: Placement | undefined): readonly { namespace?: string; name: string }[] {
  const clusters = placement?.status?.clusters;
  return Array.isArray(clusters) ? clusters : [];
}

/**
 * Whether a placement lists the cluster; undefined (unknown) while some
 * placement gives no information (`readPlacementStatus`): it may list it.
 */
export function isListed(placements: readonly Placement[], namespace: string, name: string): boolean | undefined {
  let unknown = false;
  for (const placement of placements) {
    const reading = readPlacementStatus(placement);
    if (!reading.ok) unknown = true;
    else if (reading.clusters.some((c) => c.namespace === namespace && c.name === name)) return true;
  }
  return unknown ? undefined : false;
}
