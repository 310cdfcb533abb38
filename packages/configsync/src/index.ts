// The public API of @mco/configsync: Config Sync delivery of mco's placements (docs/configsync.md).
export {
  APPLIED_HASH_ANNOTATION,
  CLUSTER_ANNOTATION,
  DEFAULT_ALLOWED_ROLE_REFS,
  DELETION_PROPAGATION_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PLACEMENT_ANNOTATION,
  ROOT_SYNC_NAMESPACE,
  TEMPLATE_ANNOTATION,
  clusterValues,
  desiredObjects,
  parseRoleRefList,
  parseTemplate,
  reconcilerName,
  type ClusterValues,
  type MemberObject,
  type MemberObjectRef,
  type SyncTemplate,
  type TemplatePolicy,
  type TemplateResult,
} from './template.js';
export {
  CLEANUP_FINALIZER,
  DELIVERED_ANNOTATION,
  isConfigSyncPlacement,
  readRecord,
  writeRecord,
  type DeliveredRecord,
} from './record.js';
export {
  CONDITION_TYPE,
  summarizeCondition,
  summarizeSyncStatus,
  type ClusterPhase,
  type ClusterReport,
  type ConditionSummary,
  type SyncStatus,
} from './sync-status.js';
export { createHubWriter, memberObjects, type ExistingObject, type HubWriter, type MemberObjects } from './kube.js';
export { createReconciler, type Cache, type ReconcileResult, type ReconcilerOptions } from './reconciler.js';
export {
  RETRY_BACKOFF,
  startConfigSyncDelivery,
  type ConfigSyncDelivery,
  type ConfigSyncDeliveryOptions,
} from './run.js';
