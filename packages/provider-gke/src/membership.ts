import { z } from 'zod';

// GKE Hub v1 wire format (gkehub.googleapis.com, projects.locations.memberships):
// only the fields the mapping reads are typed; everything else is kept and ignored.

const ClusterEndpoint = z.looseObject({
  /** e.g. `//container.googleapis.com/projects/p/locations/us-west1/clusters/c` */
  resourceLink: z.string().optional(),
  /** Output only: the cluster behind the membership no longer exists. */
  clusterMissing: z.boolean().optional(),
});

export const MembershipSchema = z.looseObject({
  /** `projects/{project}/locations/{location}/memberships/{membershipId}` */
  name: z.string(),
  labels: z.record(z.string(), z.string()).optional(),
  description: z.string().optional(),
  state: z.looseObject({ code: z.string().optional() }).optional(),
  endpoint: z
    .looseObject({
      gkeCluster: ClusterEndpoint.optional(),
      multiCloudCluster: ClusterEndpoint.optional(),
      onPremCluster: ClusterEndpoint.optional(),
      edgeCluster: ClusterEndpoint.optional(),
      applianceCluster: ClusterEndpoint.optional(),
      kubernetesMetadata: z.looseObject({ kubernetesApiServerVersion: z.string().optional() }).optional(),
    })
    .optional(),
  uniqueId: z.string().optional(),
  monitoringConfig: z.looseObject({ projectId: z.string().optional(), location: z.string().optional() }).optional(),
  deleteTime: z.string().optional(),
});
export type Membership = z.infer<typeof MembershipSchema>;

export const ListMembershipsResponseSchema = z.looseObject({
  resources: z.array(MembershipSchema).optional(),
  nextPageToken: z.string().optional(),
  /** Locations that could not be reached: the listing is then incomplete. */
  unreachable: z.array(z.string()).optional(),
});
export type ListMembershipsResponse = z.infer<typeof ListMembershipsResponseSchema>;

/** Membership states (MembershipState.Code). */
export const MEMBERSHIP_STATES = [
  'CODE_UNSPECIFIED',
  'CREATING',
  'READY',
  'DELETING',
  'UPDATING',
  'SERVICE_UPDATING',
] as const;

export interface MembershipName {
  readonly project: string;
  readonly location: string;
  readonly membershipId: string;
}

const NAME = /^projects\/([^/]+)\/locations\/([^/]+)\/memberships\/([^/]+)$/;

/** Splits a membership's resource name; undefined when it does not have the documented shape. */
export function parseMembershipName(name: string): MembershipName | undefined {
  const match = NAME.exec(name);
  if (!match) return undefined;
  return { project: match[1]!, location: match[2]!, membershipId: match[3]! };
}
