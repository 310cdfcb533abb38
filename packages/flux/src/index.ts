// The public API of @mco/flux: Flux delivery of mco's placements (docs/flux.md).
export {
  CLUSTER_LABEL,
  CLUSTER_PROFILE_ANNOTATION,
  CREDENTIAL_EXPIRES_ANNOTATION,
  DEFAULT_MANAGER,
  FLUX_WATCH_LABEL,
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
export {
  HELM_RELEASES,
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  NOT_DRAINING,
  clusterInputs,
  desiredState,
  isRemovalObserved,
  substituteVariables,
  type ClusterInputs,
  type DesiredOptions,
  type DesiredState,
  type FleetSnapshot,
} from './desired.js';
export { buildKubeconfigSecret, type ClusterEndpoint, type KubeconfigSecretOptions } from './kubeconfig.js';
export { FluxTemplateSchema, FluxTemplatesFileSchema, type FluxTemplate, type FluxTemplatesFile } from './templates.js';
export {
  createFluxSync,
  type FluxSync,
  type FluxSyncOptions,
  type ObjectCache,
  type OwnedKind,
  type PassResult,
} from './sync.js';
export {
  ORPHANS_CONDITION,
  RESOURCE_SET_NAME_LABEL,
  RESOURCE_SET_NAMESPACE_LABEL,
  describeOrphan,
  findOrphans,
  startOrphanCheck,
  type Orphan,
  type OrphanCheck,
  type OrphanCheckOptions,
  type OrphanInput,
  type ResourceSetView,
} from './orphans.js';
export { startFluxDelivery, type FluxDelivery, type FluxDeliveryOptions } from './run.js';
