import type { ClusterProfile, Placement } from '@mco/core';
import type { Informer } from '@mco/kube-runtime';
import {
  CLUSTER_PROFILES,
  PLACEMENTS,
  SECRETS,
  createInformer,
  createObjectWriter,
  type InformerTuning,
  type KubeObject,
  type ListWatchScope,
  type Resource,
} from '@mco/kube-runtime';
import { hubClient, type HubSource } from '@mco/kube-runtime/client-node';
import { McoError, silentLogger, type Logger, type ReconcileRecorder } from '@mco/runtime';
import { HELM_RELEASES, INPUT_PROVIDERS, KUSTOMIZATIONS } from './desired.js';
import { createOptionalCache } from './optional-kind.js';
import { startOrphanCheck, type Orphan, type OrphanCheckOptions } from './orphans.js';
import { DEFAULT_MANAGER, MANAGED_BY_LABEL } from './names.js';
import { createFluxSync, type FluxSync, type FluxSyncOptions, type OwnedKind } from './sync.js';
import type { FluxTemplate } from './templates.js';

/** The hub: `hub`, a connection (`loadKubeConfig` of @mco/kube-runtime), or a client-node `kubeConfig`. */
export interface FluxDeliveryOptions extends HubSource {
  /** The Flux namespace (flux-system): input providers, rendered objects and kubeconfig Secrets live there. */
  readonly namespace: string;
  /** Write a ResourceSetInputProvider per (placement, placed cluster) (Flux Operator mode). */
  readonly inputProviders: boolean;
  /** Kustomization/HelmRelease templates per placement (rendering mode, without the operator). */
  readonly templates?: readonly FluxTemplate[];
  /**
   * Watch HelmReleases too (default true): needed when a template or a
   * ResourceSet makes HelmReleases that use mco's kubeconfig Secrets. While
   * their CRD is not installed they are skipped, with one warning, and watched
   * once it is (discovery is asked every `optionalKindPollMs`).
   */
  readonly helmReleases?: boolean;
  /** How often discovery is asked whether the HelmRelease CRD is installed, while it is not (default 30 s). */
  readonly optionalKindPollMs?: number;
  readonly resolveAccess: FluxSyncOptions['resolveAccess'];
  /** managed-by label value and field manager (default `mco-flux`). */
  readonly manager?: string;
  readonly refreshBeforeMs?: number;
  readonly resyncMs?: number;
  /** See `FluxSyncOptions.secretHoldTimeoutMs` (default 1 h). */
  readonly secretHoldTimeoutMs?: number;
  readonly logger?: Logger;
  /** Records each pass (`reconcileMetrics` of @mco/runtime). */
  readonly reconciles?: ReconcileRecorder;
  /** Only ClusterProfiles in these namespaces are read (`--cluster-profile-namespaces`); empty or absent: all. */
  readonly clusterProfileNamespaces?: readonly string[];
  /** Informer tuning (tests shorten these). */
  readonly informers?: InformerTuning;
  /**
   * The orphan check of Operator mode (orphans.ts): how long an orphan must
   * last before it is reported (and deleted), how often to look, and whether
   * to delete it (default true) or only report it.
   */
  readonly orphans?: Pick<OrphanCheckOptions, 'graceMs' | 'intervalMs' | 'remedy'>;
}

export interface FluxDelivery {
  readonly sync: FluxSync;
  /** Operator mode only: the orphaned Flux objects reported now (docs/flux.md#orphaned-kustomizations). */
  orphans(): readonly Orphan[];
  /** Operator mode only: how many orphans this process has deleted. */
  orphansDeleted(): number;
  /** True once every cache has synced. */
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * Runs what `mco flux` runs: informers on placements and ClusterProfiles (all
 * namespaces) and on the Flux namespace's input providers, Kustomizations,
 * HelmReleases and mco's Secrets, and the sync that keeps mco's objects there
 * in step with the placements.
 */
export function startFluxDelivery(options: FluxDeliveryOptions): FluxDelivery {
  const logger = options.logger ?? silentLogger;
  const withHelmRelease = (options.templates ?? []).find((t) => t.helmRelease);
  if (options.helmReleases === false && withHelmRelease) {
    const { namespace, name } = withHelmRelease.placement;
    throw new McoError(
      'Invalid',
      `the template of placement ${namespace}/${name} has a helmRelease, but HelmReleases are not watched (helmReleases: false)`,
      false,
    );
  }
  const manager = options.manager ?? DEFAULT_MANAGER;
  const { namespace } = options;
  const hub = hubClient(options);
  const informers: Informer<KubeObject>[] = [];
  const informer = <T extends KubeObject>(resource: Resource, scope: ListWatchScope): Informer<T> => {
    const created = createInformer<T>(hub, resource, { logger, tuning: options.informers, scope });
    informers.push(created as unknown as Informer<KubeObject>);
    return created;
  };
  const ownedOnly = `${MANAGED_BY_LABEL}=${manager}`;
  const kind = (resource: Resource, labelSelector?: string): OwnedKind => ({
    resource,
    cache: informer(resource, { namespace, ...(labelSelector ? { labelSelector } : {}) }),
    writer: createObjectWriter(hub, resource, { fieldManager: manager }),
  });

  const helmReleases =
    options.helmReleases === false
      ? undefined
      : createOptionalCache({
          hub,
          resource: HELM_RELEASES,
          createInformer: () =>
            createInformer<KubeObject>(hub, HELM_RELEASES, { logger, tuning: options.informers, scope: { namespace } }),
          onAvailable: () => sync.trigger(),
          pollMs: options.optionalKindPollMs ?? 30_000,
          logger,
        });

  const placements = informer<Placement>(PLACEMENTS, {});
  const clusterProfiles = informer<ClusterProfile>(CLUSTER_PROFILES, { namespaces: options.clusterProfileNamespaces });
  const inputProviders = options.inputProviders ? kind(INPUT_PROVIDERS, ownedOnly) : undefined;
  // All of them, not only mco's: a Secret stays while any Flux object uses it.
  const kustomizations = kind(KUSTOMIZATIONS);
  const sync = createFluxSync({
    hub,
    placements,
    clusterProfiles,
    ...(inputProviders ? { inputProviders } : {}),
    kustomizations,
    ...(helmReleases
      ? {
          helmReleases: {
            resource: HELM_RELEASES,
            cache: helmReleases,
            writer: createObjectWriter(hub, HELM_RELEASES, { fieldManager: manager }),
          },
        }
      : {}),
    secrets: kind(SECRETS, ownedOnly),
    resolveAccess: options.resolveAccess,
    namespace,
    manager,
    templates: options.templates ?? [],
    ...(options.refreshBeforeMs !== undefined ? { refreshBeforeMs: options.refreshBeforeMs } : {}),
    ...(options.resyncMs !== undefined ? { resyncMs: options.resyncMs } : {}),
    ...(options.secretHoldTimeoutMs !== undefined ? { secretHoldTimeoutMs: options.secretHoldTimeoutMs } : {}),
    ...(options.reconciles ? { reconciles: options.reconciles } : {}),
    logger,
  });
  sync.start();
  for (const i of informers) i.start();
  helmReleases?.start();
  const orphans = inputProviders
    ? startOrphanCheck({
        hub,
        manager,
        objects: () => [
          ...kustomizations.cache.list().map((o) => ({ ...o, kind: 'Kustomization' })),
          ...(helmReleases?.list() ?? []).map((o) => ({ ...o, kind: 'HelmRelease' })),
        ],
        providers: () => inputProviders.cache.list(),
        placements: () => placements.list(),
        ...options.orphans,
        logger,
      })
    : undefined;
  return {
    sync,
    orphans: () => orphans?.orphans() ?? [],
    orphansDeleted: () => orphans?.deleted() ?? 0,
    ready: () => informers.every((i) => i.hasSynced()) && (helmReleases?.hasSynced() ?? true),
    async stop() {
      orphans?.stop();
      await sync.stop();
      await Promise.all([...informers.map((i) => i.stop()), helmReleases?.stop()]);
    },
  };
}
