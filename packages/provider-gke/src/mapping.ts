import { CONTROL_PLANE_HEALTHY, clusterKey, type ClusterKey } from '@mco/core';
import { isLabelValue, isQualifiedKey, type DesiredClusterProfile, type DesiredCondition } from '@mco/provider-manual';
import { parseMembershipName, type Membership } from './membership.js';

// The shape of Google's managed ClusterProfile sync (fleet cluster inventory).
export const ANNOTATION_CLUSTER_NAME = 'fleet.gke.io/clusterName';
export const ANNOTATION_MEMBERSHIP_NAME = 'fleet.gke.io/membershipName';
export const ANNOTATION_METRICS_ENDPOINT = 'fleet.gke.io/metricsEndpoint';
export const ANNOTATION_GATEWAY_ENDPOINT = 'gateway.gke.io/endpoint';
export const ACCESS_PROVIDER_GOOGLE = 'google';
export const CONDITION_JOINED = 'Joined';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface MappingOptions {
  /** Namespace of every ClusterProfile. */
  readonly namespace: string;
  /** Project of the Cloud Monitoring endpoint when a membership names none. */
  readonly project: string;
  /** `https://monitoring.googleapis.com` */
  readonly monitoringEndpoint: string;
  /** One Connect Gateway for all locations; by default `https://{location}-connectgateway.googleapis.com` (global: no prefix). */
  readonly connectGatewayEndpoint?: string;
  /** Copy the membership's labels that are valid Kubernetes labels. */
  readonly copyLabels: boolean;
}

/** What to do with one membership. */
export type MembershipPlan =
  | { readonly action: 'apply'; readonly key: ClusterKey; readonly profile: DesiredClusterProfile }
  /** Keep an existing profile exactly as it is, create none: the membership's state is transient or unknown. */
  | { readonly action: 'retain'; readonly key: ClusterKey; readonly reason: string }
  /** The membership cannot have a profile (its name would not be a valid object name). */
  | { readonly action: 'skip'; readonly reason: string };

export interface FleetPlan {
  readonly desired: DesiredClusterProfile[];
  /** Profiles neither written nor pruned. */
  readonly retain: ClusterKey[];
  /** Memberships without a profile, with why (for logs). */
  readonly notes: { readonly membership: string; readonly reason: string }[];
  /** Memberships by `state.code`. */
  readonly states: Record<string, number>;
}

/**
 * Maps a COMPLETE listing of memberships to ClusterProfiles shaped like
 * Google's managed sync. State rules (docs/providers.md):
 * - READY, UPDATING, SERVICE_UPDATING: the profile is applied, `Joined=True`.
 * - the cluster behind it is gone (`clusterMissing`): applied with `Joined=False`
 *   and `ControlPlaneHealthy=False` (reason ClusterMissing), so placements move away;
 *   it is deleted only once the membership itself is gone.
 * - DELETING: an existing profile gets `Joined=False`/`ControlPlaneHealthy=False`
 *   (reason MembershipDeleting); none is created.
 * - CREATING, CODE_UNSPECIFIED, unknown: an existing profile is kept untouched; none is created.
 * A profile is deleted only when its membership is absent from a complete listing.
 * Throws when a membership's name is not `projects/*\/locations/*\/memberships/*`:
 * its identity is unknown, so nothing may be pruned.
 */
export function planFleet(memberships: readonly Membership[], options: MappingOptions): FleetPlan {
  const plans = memberships.map((m) => ({ membership: m.name, plan: planMembership(m, options) }));
  const byKey = new Map<ClusterKey, number>();
  for (const { plan } of plans) if (plan.action !== 'skip') byKey.set(plan.key, (byKey.get(plan.key) ?? 0) + 1);
  const desired: DesiredClusterProfile[] = [];
  const retain: ClusterKey[] = [];
  const notes: FleetPlan['notes'] = [];
  const states: Record<string, number> = {};
  for (const m of memberships) {
    const state = m.state?.code ?? 'CODE_UNSPECIFIED';
    states[state] = (states[state] ?? 0) + 1;
  }
  for (const { membership, plan } of plans) {
    if (plan.action === 'skip') {
      notes.push({ membership, reason: plan.reason });
      continue;
    }
    // Two memberships that map to one name (`a-b` in `c`, `a` in `b-c`): neither may win silently.
    if ((byKey.get(plan.key) ?? 0) > 1) {
      if (!retain.includes(plan.key)) retain.push(plan.key);
      notes.push({ membership, reason: `NameCollision: another membership also maps to ${plan.key}` });
      continue;
    }
    if (plan.action === 'retain') {
      retain.push(plan.key);
      notes.push({ membership, reason: plan.reason });
    } else desired.push(plan.profile);
  }
  return { desired, retain: retain.sort(), notes, states };
}

export function planMembership(membership: Membership, options: MappingOptions): MembershipPlan {
  const parsed = parseMembershipName(membership.name);
  if (!parsed) throw new Error(`membership name "${membership.name}" is not projects/*/locations/*/memberships/*`);
  const { project, location, membershipId } = parsed;
  const name = `${membershipId}-${location}`;
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    return { action: 'skip', reason: `InvalidName: ${name} is not a valid ClusterProfile name` };
  const key = clusterKey(options.namespace, name);
  const state = membership.state?.code ?? 'CODE_UNSPECIFIED';
  const cluster = clusterEndpoint(membership);
  let conditions: DesiredCondition[];
  let updateOnly = false;
  switch (state) {
    case 'READY':
    case 'UPDATING':
    case 'SERVICE_UPDATING':
      conditions = cluster?.clusterMissing
        ? notJoined(
            'ClusterMissing',
            `the cluster ${clusterName(cluster) ?? ''} behind membership ${membershipId} no longer exists`,
          )
        : [{ type: CONDITION_JOINED, status: 'True', reason: 'Joined', message: '' }];
      break;
    case 'DELETING':
      conditions = notJoined('MembershipDeleting', `membership ${membershipId} is being unregistered from the fleet`);
      updateOnly = true;
      break;
    case 'CREATING':
      return { action: 'retain', key, reason: `MembershipCreating: membership ${membershipId} is being registered` };
    default:
      return { action: 'retain', key, reason: `UnknownState: membership ${membershipId} is in state ${state}` };
  }
  const gateway = `${gatewayHost(location, options.connectGatewayEndpoint)}/v1/projects/${project}/locations/${location}/gkeMemberships/${membershipId}`;
  const metricsProject = membership.monitoringConfig?.projectId || options.project;
  const resource = clusterName(cluster);
  const version = membership.endpoint?.kubernetesMetadata?.kubernetesApiServerVersion;
  return {
    action: 'apply',
    key,
    profile: {
      namespace: options.namespace,
      name,
      displayName: `${membershipId}(${location})`,
      labels: options.copyLabels ? validLabels(membership.labels) : {},
      annotations: {
        ...(resource ? { [ANNOTATION_CLUSTER_NAME]: resource } : {}),
        [ANNOTATION_MEMBERSHIP_NAME]: membership.name,
        [ANNOTATION_METRICS_ENDPOINT]: `${trimSlash(options.monitoringEndpoint)}/v1/projects/${metricsProject}/location/global/prometheus`,
        [ANNOTATION_GATEWAY_ENDPOINT]: gateway,
      },
      status: {
        accessProviders: [{ name: ACCESS_PROVIDER_GOOGLE, cluster: { server: gateway } }],
        conditions,
        ...(version ? { version: { kubernetes: version } } : {}),
      },
      ...(updateOnly ? { updateOnly } : {}),
    },
  };
}

function notJoined(reason: string, message: string): DesiredCondition[] {
  return [
    { type: CONDITION_JOINED, status: 'False', reason, message },
    { type: CONTROL_PLANE_HEALTHY, status: 'False', reason, message },
  ];
}

function clusterEndpoint(m: Membership) {
  const e = m.endpoint;
  return e?.gkeCluster ?? e?.multiCloudCluster ?? e?.onPremCluster ?? e?.edgeCluster ?? e?.applianceCluster;
}

/** `projects/p/locations/l/clusters/c` from `//container.googleapis.com/projects/p/locations/l/clusters/c`. */
function clusterName(cluster: { resourceLink?: string } | undefined): string | undefined {
  return cluster?.resourceLink?.replace(/^\/\/[^/]+\//, '') || undefined;
}

function gatewayHost(location: string, override: string | undefined): string {
  if (override) return trimSlash(override);
  return location === 'global'
    ? 'https://connectgateway.googleapis.com'
    : `https://${location}-connectgateway.googleapis.com`;
}

/** GCP labels that are also valid Kubernetes labels (GCP allows values Kubernetes does not, e.g. `-x`). */
function validLabels(labels: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels ?? {}))
    if (isQualifiedKey(key) && isLabelValue(value) && key !== 'x-k8s.io/cluster-manager') out[key] = value;
  return out;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
