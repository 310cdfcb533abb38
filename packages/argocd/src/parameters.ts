import type { ClusterProfile, ClusterState, Placement } from '@mco/core';
import { readPlacementStatus } from '@mco/kube-runtime';

/** Input parameter names of Google's MCO plugin; ApplicationSets written for it keep working. */
export const PLACEMENT_NAME_PARAMETER = 'multiClusterOrchestraPlacementName';
export const PLACEMENT_NAMESPACE_PARAMETER = 'multiClusterOrchestraPlacementNamespace';

/**
 * One parameter set per listed cluster: MCO's keys (`name`, `desiredMaxReplicas`)
 * plus mco's superset. Every key is always present, so a Go template with
 * `missingkey=error` never fails on a cluster that lacks a value.
 */
export interface PluginParameters {
  /** Argo CD cluster name `<cpNamespace>.<cpName>` (the cluster Secret's name). */
  readonly name: string;
  /** The HPA maxReplicas to apply while draining; null unless the cluster is draining. */
  readonly desiredMaxReplicas: number | null;
  /** The HPA minReplicas to apply to a replacement (rule O3); null unless it has a replica floor. */
  readonly desiredMinReplicas: number | null;
  /** API server URL of the ClusterProfile's access provider; null when the profile is gone. */
  readonly server: string | null;
  readonly clusterProfileName: string;
  readonly clusterProfileNamespace: string;
  readonly state: ClusterState;
  readonly draining: boolean;
  readonly placementName: string;
  readonly placementNamespace: string;
  /** The ClusterProfile's labels ({} when the profile is gone). */
  readonly labels: Readonly<Record<string, string>>;
}

/** The Argo CD cluster name (and cluster Secret name) of a ClusterProfile, as MCO named it. */
export function argoClusterName(profileNamespace: string, profileName: string): string {
  return `${profileNamespace}.${profileName}`;
}

/** Why an answer cannot be given with certainty: the plugin then answers 5xx so Argo CD changes nothing. */
export interface Unsure {
  readonly ok: false;
  /** 503 for a view that is behind (retry helps), 500 for a status mco cannot read. */
  readonly status: 500 | 503;
  readonly reason: string;
  readonly message: string;
}

export type ParametersResult = { readonly ok: true; readonly value: readonly PluginParameters[] } | Unsure;

/** What the parameters need from the fleet: ClusterProfiles by identity, and their server URL. */
export interface ProfileLookup {
  clusterProfile(namespace: string, name: string): ClusterProfile | undefined;
  serverOf(profile: ClusterProfile): string | null;
}

/**
 * The plugin's answer for one placement, from its status. Pure.
 *
 * Returns Unsure instead of a list when the list could be wrong: no
 * information about the placement (no status, a status the controller never
 * stamped with `observedGeneration`, one that does not parse, a listed cluster
 * without a namespace: `readPlacementStatus` of @mco/kube-runtime, shared by
 * every adapter), or an ACTIVE cluster whose ClusterProfile is not in the cache
 * (the profile cache lags the placement cache). A 2xx with a wrong list would
 * make Argo CD delete Applications; an error leaves them untouched. A lagging
 * `observedGeneration` (a spec edit not evaluated yet) still answers the last
 * clusters.
 */
export function placementParameters(placement: Placement, profiles: ProfileLookup): ParametersResult {
  const { name: placementName, namespace: placementNamespace = '' } = placement.metadata;
  const reading = readPlacementStatus(placement);
  if (!reading.ok) {
    return reading.why === 'Absent'
      ? unsure(503, 'PlacementNotEvaluated', reading.reason)
      : unsure(500, 'InvalidPlacementStatus', reading.reason);
  }
  const clusters = reading.clusters;
  const out: PluginParameters[] = [];
  for (const cluster of clusters) {
    const namespace = cluster.namespace ?? '';
    const profile = profiles.clusterProfile(namespace, cluster.name);
    if (!profile && cluster.state === 'ACTIVE') {
      return unsure(
        503,
        'ClusterProfileNotCached',
        `ClusterProfile ${namespace}/${cluster.name} listed ACTIVE by placement ${placementNamespace}/${placementName} is not in the cache yet`,
      );
    }
    out.push({
      name: argoClusterName(namespace, cluster.name),
      desiredMaxReplicas: cluster.draining ? cluster.draining.desiredMaxReplicas : null,
      desiredMinReplicas: cluster.desiredMinReplicas ?? null,
      server: profile ? profiles.serverOf(profile) : null,
      clusterProfileName: cluster.name,
      clusterProfileNamespace: namespace,
      state: cluster.state,
      draining: cluster.draining !== undefined,
      placementName,
      placementNamespace,
      labels: profile?.metadata.labels ?? {},
    });
  }
  return { ok: true, value: out };
}

function unsure(status: 500 | 503, reason: string, message: string): Unsure {
  return { ok: false, status, reason, message };
}

/** What Argo CD's ApplicationSet controller sends (applicationset/services/plugin). */
export interface PluginRequest {
  readonly applicationSetName: string;
  readonly placementNamespace: string;
  readonly placementName: string;
}

export type PluginRequestResult =
  { readonly ok: true; readonly value: PluginRequest } | { readonly ok: false; readonly message: string };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Validates a decoded request body `{"applicationSetName", "input": {"parameters": {...}}}`.
 * The error message names the offending parameter. Unknown input parameters are ignored.
 */
export function parsePluginRequest(body: unknown): PluginRequestResult {
  if (!isObject(body)) return bad('the request body must be a JSON object');
  const appSet = body.applicationSetName;
  if (appSet !== undefined && typeof appSet !== 'string') return bad('applicationSetName must be a string');
  const input = body.input;
  if (!isObject(input)) return bad('input must be an object with input.parameters');
  const parameters = input.parameters;
  if (!isObject(parameters)) return bad('input.parameters must be an object');
  const name = parameters[PLACEMENT_NAME_PARAMETER];
  const namespace = parameters[PLACEMENT_NAMESPACE_PARAMETER];
  if (name === undefined || name === null || name === '') {
    return bad(`input.parameters.${PLACEMENT_NAME_PARAMETER} is required`);
  }
  if (typeof name !== 'string' || name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    return bad(`input.parameters.${PLACEMENT_NAME_PARAMETER} must be a Kubernetes object name`);
  }
  if (namespace === undefined || namespace === null || namespace === '') {
    return bad(`input.parameters.${PLACEMENT_NAMESPACE_PARAMETER} is required`);
  }
  if (typeof namespace !== 'string' || namespace.length > 63 || !DNS_LABEL.test(namespace)) {
    return bad(`input.parameters.${PLACEMENT_NAMESPACE_PARAMETER} must be a Kubernetes namespace name`);
  }
  return { ok: true, value: { applicationSetName: appSet ?? '', placementNamespace: namespace, placementName: name } };
}

function bad(message: string): PluginRequestResult {
  return { ok: false, message };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
