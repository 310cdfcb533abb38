// @mco/provider-gke: mirrors a GKE fleet's memberships as ClusterProfiles (docs/providers.md).
export {
  kind,
  name,
  configSchema,
  create,
  createFleetSync,
  gkeFleetProvider,
  gkeFleetConfigSchema,
  GKE_FLEET_MANAGER,
  type GkeFleetConfig,
} from './provider.js';
export {
  planFleet,
  planMembership,
  ANNOTATION_CLUSTER_NAME,
  ANNOTATION_MEMBERSHIP_NAME,
  ANNOTATION_METRICS_ENDPOINT,
  ANNOTATION_GATEWAY_ENDPOINT,
  ACCESS_PROVIDER_GOOGLE,
  CONDITION_JOINED,
  type FleetPlan,
  type MappingOptions,
  type MembershipPlan,
} from './mapping.js';
export {
  listMemberships,
  DEFAULT_HUB_ENDPOINT,
  type ListMembershipsOptions,
  type ListResult,
  type ListFailureReason,
} from './hub-client.js';
export {
  AuthConfigSchema,
  createTokenSource,
  cachedTokenSource,
  parseExecOutput,
  DEFAULT_METADATA_URL,
  type AuthConfig,
  type TokenSource,
  type TokenSourceOptions,
} from './auth.js';
export {
  MembershipSchema,
  ListMembershipsResponseSchema,
  MEMBERSHIP_STATES,
  parseMembershipName,
  type Membership,
  type MembershipName,
  type ListMembershipsResponse,
} from './membership.js';
