// @mco/provider-manual: ClusterProfiles declared in files or kubeconfig contexts,
// and the ClusterProfile writer every inventory provider can build on
// (docs/providers.md, docs/writing-a-provider.md).
export {
  kind,
  name,
  configSchema,
  create,
  manualProvider,
  manualProviderConfigSchema,
  applyClustersFile,
  readClustersFile,
  MANUAL_MANAGER,
  ownedCount,
  type ManualProviderConfig,
  type ApplyClustersFileOptions,
} from './provider.js';
export {
  ClusterDeclarationSchema,
  ClustersFileSchema,
  parseClustersFile,
  resolveClusterDeclarations,
  clusterFromKubeconfig,
  isQualifiedKey,
  isLabelValue,
  type ClusterDeclaration,
  type ClustersFile,
  type ResolveOptions,
} from './declarations.js';
export {
  syncClusterProfiles,
  isOwnedBy,
  type DesiredClusterProfile,
  type DesiredCondition,
  type SyncOptions,
  type SyncReport,
  type SkipReason,
} from './sync.js';
export {
  runSyncLoop,
  backoffDelayMs,
  createSyncMetrics,
  type SyncLoopOptions,
  type SyncOutcome,
  type SyncMetrics,
} from './loop.js';
