// The public API of @mco/argocd: Argo CD delivery of mco's placements (docs/argocd.md).
export { selectAccessProvider, type SelectedAccess } from './access.js';
export {
  PLACEMENT_NAME_PARAMETER,
  PLACEMENT_NAMESPACE_PARAMETER,
  argoClusterName,
  parsePluginRequest,
  placementParameters,
  type ParametersResult,
  type PluginParameters,
  type PluginRequest,
  type PluginRequestResult,
  type ProfileLookup,
  type Unsure,
} from './parameters.js';
export {
  PLUGIN_PATH,
  createPluginServer,
  type PluginServer,
  type PluginServerLimits,
  type PluginServerOptions,
} from './server.js';
export { createFileTokenVerifier, type FileTokenOptions, type TokenVerifier } from './token.js';
export { createStaticPlacementView, type PlacementView, type StaticPlacementView } from './view.js';
export { APPLICATION_SETS, REFRESH_ANNOTATION, placementsOf, type ApplicationSetLike } from './applicationsets.js';
export { createCachedPlacementView, type CacheEvent, type CachedViewOptions, type ObjectCache } from './cache.js';
export {
  CLUSTER_PROFILE_ANNOTATION,
  CREDENTIAL_EXPIRES_ANNOTATION,
  RELEASED_AT_ANNOTATION,
  DEFAULT_MANAGER,
  MANAGED_BY_LABEL,
  SECRET_TYPE_LABEL,
  buildClusterSecret,
  isUpToDate,
  isValidSecretName,
  type ArgoClusterConfig,
  type ClusterAccessLike,
  type ClusterSecret,
  type ClusterSecretOptions,
} from './cluster-secret.js';
export {
  createApplicationSetClient,
  createSecretClient,
  type ApplicationSetClientOptions,
  type SecretClientOptions,
} from './kube.js';
export {
  createApplicationSetRefresher,
  type ApplicationSetClient,
  type Refresher,
  type RefresherOptions,
} from './refresher.js';
export {
  createSecretSyncer,
  refreshDelay,
  type AccessResolver,
  type ExistingSecret,
  type SecretClient,
  type SecretSyncer,
  type SecretSyncerOptions,
} from './secret-syncer.js';
export { holdManagerName, managerLeaseName, type ManagerLease, type ManagerLeaseOptions } from './manager-lease.js';
export { createTrustedServerOf, type NamedServerPolicy, type TrustedServerOptions } from './trusted-server.js';
export { startArgoCdDelivery, type ArgoCdDelivery, type ArgoCdDeliveryOptions } from './run.js';
