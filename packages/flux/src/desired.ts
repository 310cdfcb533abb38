import type { ClusterProfile, Placement, PlacementCluster } from '@mco/core';
import { readPlacementStatus, type DesiredObject, type KubeObject } from '@mco/kube-runtime';
import {
  CLUSTER_LABEL,
  CLUSTER_PROFILE_ANNOTATION,
  KUBECONFIG_KEY,
  MANAGED_BY_LABEL,
  PLACEMENT_ANNOTATION,
  PLACEMENT_LABEL,
  PLACEMENT_NAMESPACE_LABEL,
  clusterSlug,
  inputProviderName,
  kubeconfigSecretName,
  placementLabelValue,
} from './names.js';
import type { FluxTemplate } from './templates.js';

/**
 * `spec.defaultValues.desiredMaxReplicas` (and `MCO_DESIRED_MAX_REPLICAS`)
 * when the cluster is not draining: the empty string, which Flux's
 * `${VAR:=default}` replaces with the default — so a manifest written
 * `maxReplicas: ${MCO_DESIRED_MAX_REPLICAS:=10}` keeps its own maximum.
 */
export const NOT_DRAINING = '';

/** The inputs of one (placement, cluster): every value a string, every key always present. */
export interface ClusterInputs {
  /** `<ns>.<name>` of the ClusterProfile (the name Argo CD and MCO use). */
  readonly clusterName: string;
  readonly clusterSlug: string;
  readonly clusterProfileName: string;
  readonly clusterProfileNamespace: string;
  /** API server URL from the ClusterProfile's access provider. */
  readonly server: string;
  readonly kubeconfigSecretName: string;
  readonly placementName: string;
  readonly placementNamespace: string;
  /** ACTIVE, SCALING_IN, UNHEALTHY or EVICTING. */
  readonly state: string;
  /** "true" or "false". */
  readonly draining: string;
  /** The HPA maxReplicas to apply while draining, as a string; `NOT_DRAINING` ("") otherwise. */
  readonly desiredMaxReplicas: string;
  /**
   * The HPA minReplicas a replacement starts at (rule O3), as a string; the empty string while it has no
   * replica floor, so `minReplicas: ${MCO_DESIRED_MIN_REPLICAS:=1}` keeps the manifest's own minimum.
   */
  readonly desiredMinReplicas: string;
}

export interface DesiredOptions {
  /** The Flux namespace: input providers, rendered objects and kubeconfig Secrets live there. */
  readonly namespace: string;
  readonly manager: string;
  /** Write a ResourceSetInputProvider per (placement, cluster) (Flux Operator mode). */
  readonly inputProviders: boolean;
  /** Kustomization/HelmRelease templates per placement (rendering mode). */
  readonly templates: readonly FluxTemplate[];
}

/** The fleet as the caches hold it. */
export interface FleetSnapshot {
  readonly placements: readonly Placement[];
  clusterProfile(namespace: string, name: string): ClusterProfile | undefined;
  /** The API server URL mco reaches the profile's cluster through; undefined when it has none. */
  serverOf(profile: ClusterProfile): string | undefined;
}

export interface DesiredState {
  readonly inputProviders: readonly DesiredObject[];
  readonly rendered: readonly DesiredObject[];
  /** ClusterProfile keys (`namespace/name`) some trusted placement lists: they need a kubeconfig Secret. */
  readonly clusters: ReadonlySet<string>;
  /** Placements (by `namespace/name`) whose status is trusted, with the cluster keys they list. */
  readonly trusted: ReadonlyMap<string, ReadonlySet<string>>;
  /** Why some objects could not be computed (an untrusted placement, a missing profile), for logs. */
  readonly problems: readonly string[];
}

export const INPUT_PROVIDERS = {
  group: 'fluxcd.controlplane.io',
  version: 'v1',
  plural: 'resourcesetinputproviders',
} as const;
export const KUSTOMIZATIONS = {
  group: 'kustomize.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'kustomizations',
} as const;
export const HELM_RELEASES = { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases' } as const;

/**
 * Everything mco should have written for the fleet right now. Pure. A listed
 * cluster whose ClusterProfile (or server) is unknown gets no object here —
 * an existing one is then kept as it is, never rewritten with a guess.
 */
export function desiredState(fleet: FleetSnapshot, options: DesiredOptions): DesiredState {
  const inputProviders: DesiredObject[] = [];
  const rendered: DesiredObject[] = [];
  const clusters = new Set<string>();
  const trusted = new Map<string, Set<string>>();
  const problems: string[] = [];
  const placements = [...fleet.placements].sort((a, b) => compare(placementKey(a), placementKey(b)));
  for (const placement of placements) {
    const key = placementKey(placement);
    if (placement.metadata.deletionTimestamp) continue;
    // No information (no, unstamped or unreadable status): nothing is written or pruned for it.
    const reading = readPlacementStatus(placement);
    if (!reading.ok) {
      problems.push(reading.reason);
      continue;
    }
    const listed = new Set<string>();
    trusted.set(key, listed);
    const templates = options.templates.filter(
      (t) => t.placement.namespace === placement.metadata.namespace && t.placement.name === placement.metadata.name,
    );
    for (const cluster of reading.clusters) {
      const profileNamespace = cluster.namespace ?? '';
      const clusterKey = `${profileNamespace}/${cluster.name}`;
      listed.add(clusterKey);
      clusters.add(clusterKey);
      const profile = fleet.clusterProfile(profileNamespace, cluster.name);
      const server = profile ? fleet.serverOf(profile) : undefined;
      if (!server) {
        problems.push(`placement ${key} lists ${clusterKey}, whose ClusterProfile or server is unknown`);
        continue;
      }
      const inputs = clusterInputs(placement, cluster, server);
      const meta = objectMeta(options, placement, inputs);
      if (options.inputProviders) {
        inputProviders.push({
          apiVersion: `${INPUT_PROVIDERS.group}/${INPUT_PROVIDERS.version}`,
          kind: 'ResourceSetInputProvider',
          metadata: {
            ...meta,
            name: inputProviderName(placement.metadata.namespace ?? '', placement.metadata.name, inputs.clusterSlug),
          },
          spec: { type: 'Static', defaultValues: { ...inputs } },
        });
      }
      for (const template of templates) rendered.push(...renderTemplate(template, meta, inputs));
    }
  }
  return { inputProviders, rendered, clusters, trusted, problems };
}

/** The inputs of a listed cluster. */
export function clusterInputs(placement: Placement, cluster: PlacementCluster, server: string): ClusterInputs {
  const namespace = cluster.namespace ?? '';
  return {
    clusterName: `${namespace}.${cluster.name}`,
    clusterSlug: clusterSlug(namespace, cluster.name),
    clusterProfileName: cluster.name,
    clusterProfileNamespace: namespace,
    server,
    kubeconfigSecretName: kubeconfigSecretName(namespace, cluster.name),
    placementName: placement.metadata.name,
    placementNamespace: placement.metadata.namespace ?? '',
    state: cluster.state,
    draining: String(cluster.draining !== undefined),
    desiredMaxReplicas: cluster.draining ? String(cluster.draining.desiredMaxReplicas) : NOT_DRAINING,
    desiredMinReplicas: cluster.desiredMinReplicas !== undefined ? String(cluster.desiredMinReplicas) : '',
  };
}

/** `MCO_CLUSTER_NAME`, … : the inputs as `postBuild.substitute` variables. */
export function substituteVariables(inputs: ClusterInputs): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(inputs)) {
    out[`MCO_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`] = value;
  }
  return out;
}

type Meta = DesiredObject['metadata'] & { labels: Record<string, string>; annotations: Record<string, string> };

function objectMeta(options: DesiredOptions, placement: Placement, inputs: ClusterInputs): Meta {
  return {
    name: '',
    namespace: options.namespace,
    labels: {
      [MANAGED_BY_LABEL]: options.manager,
      [PLACEMENT_LABEL]: placementLabelValue(placement.metadata.name),
      [PLACEMENT_NAMESPACE_LABEL]: placement.metadata.namespace ?? '',
      [CLUSTER_LABEL]: inputs.clusterSlug,
    },
    annotations: {
      [PLACEMENT_ANNOTATION]: placementKey(placement),
      [CLUSTER_PROFILE_ANNOTATION]: `${inputs.clusterProfileNamespace}/${inputs.clusterProfileName}`,
    },
  };
}

function renderTemplate(template: FluxTemplate, meta: Meta, inputs: ClusterInputs): DesiredObject[] {
  const out: DesiredObject[] = [];
  const kubeConfig = { secretRef: { name: inputs.kubeconfigSecretName, key: KUBECONFIG_KEY } };
  const metaFor = (t: { metadata: { name: string; labels?: Record<string, string> } }) => ({
    ...meta,
    name: `${t.metadata.name}-${inputs.clusterSlug}`,
    labels: { ...t.metadata.labels, ...meta.labels },
  });
  const k = template.kustomization;
  if (k) {
    const postBuild = (k.spec.postBuild ?? {}) as { substitute?: Record<string, string> };
    out.push({
      apiVersion: `${KUSTOMIZATIONS.group}/${KUSTOMIZATIONS.version}`,
      kind: 'Kustomization',
      metadata: metaFor(k),
      spec: {
        ...k.spec,
        kubeConfig,
        postBuild: { ...postBuild, substitute: { ...postBuild.substitute, ...substituteVariables(inputs) } },
      },
    });
  }
  const h = template.helmRelease;
  if (h) {
    const values = (h.spec.values ?? {}) as Record<string, unknown>;
    out.push({
      apiVersion: `${HELM_RELEASES.group}/${HELM_RELEASES.version}`,
      kind: 'HelmRelease',
      metadata: metaFor(h),
      spec: { ...h.spec, kubeConfig, values: { ...values, mco: { ...inputs } } },
    });
  }
  return out;
}

/**
 * May an owned (placement, cluster) object that is no longer desired be
 * deleted? Only on an observed removal: its placement is gone from the synced
 * cache (or being deleted), or its trusted status no longer lists the cluster.
 * An object without mco's annotations, or of a placement whose status is not
 * trusted, is kept.
 */
export function isRemovalObserved(
  object: KubeObject,
  placements: ReadonlyMap<string, Placement>,
  trusted: ReadonlyMap<string, ReadonlySet<string>>,
): boolean {
  const placement = object.metadata?.annotations?.[PLACEMENT_ANNOTATION];
  const cluster = object.metadata?.annotations?.[CLUSTER_PROFILE_ANNOTATION];
  if (!placement || !cluster) return false;
  const current = placements.get(placement);
  if (!current || current.metadata.deletionTimestamp) return true;
  const listed = trusted.get(placement);
  return listed !== undefined && !listed.has(cluster);
}

function placementKey(placement: Placement): string {
  return `${placement.metadata.namespace ?? ''}/${placement.metadata.name}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
