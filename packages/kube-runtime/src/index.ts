// The public API of @mco/kube-runtime: the Kubernetes machinery the controller
// and every delivery adapter share (docs/architecture.md). Nothing here loads
// @kubernetes/client-node; the bridges for code that still uses it are in
// `@mco/kube-runtime/client-node`.
export {
  Informer,
  jsonSize,
  objectKey,
  type InformerEvent,
  type InformerHandler,
  type InformerHealth,
  type InformerLimits,
  type InformerOptions,
  type KubeObject,
  type ListWatch,
  type ListPage,
  type WatchEventType,
} from './informer.js';
export { PRIORITY, WorkQueue, type Priority, type WorkQueueOptions } from './work-queue.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export { WakeableSleep } from './sleep.js';
export { LeaderElector, microTime, type Lease, type LeaderElectionOptions } from './leader-election.js';
export {
  CLUSTER_PROFILES,
  PLACEMENTS,
  PLACEMENT_DECISIONS,
  SECRETS,
  createInformer,
  createListWatch,
  isPartialObjectMetadata,
  objectPath,
  resourcePath,
  type InformerTuning,
  type ListWatchScope,
  type Resource,
} from './kube.js';
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_WATCH_LINE_BYTES,
  KubeApiError,
  KubeClient,
  ResponseTooLargeError,
  type KubeClientOptions,
  type KubeRequest,
  type PatchType,
  type Query,
  type WatchHandlers,
} from './client.js';
export {
  loadKubeConfig,
  SERVICE_ACCOUNT_DIR,
  type LoadedKubeConfig,
  type LoadKubeConfigOptions,
} from './kubeconfig.js';
export {
  parseExecCredential,
  redactTokens,
  runExecPlugin,
  type ExecClusterInfo,
  type ExecConfig,
  type ExecPluginOptions,
} from './exec-plugin.js';
export {
  abortable,
  createCachedCredential,
  type CachedCredential,
  type CachedCredentialOptions,
} from './cached-credential.js';
export type { Credential, KubeConnection } from '@mco/runtime';
export { jsonEqual } from './equal.js';
export { WriteOverlay } from './overlay.js';
export {
  APPLIED_DIGEST_ANNOTATION,
  contains,
  createObjectWriter,
  digestOf,
  listObjects,
  planOwnedObjects,
  syncOwnedObjects,
  type DesiredObject,
  type ObjectWriter,
  type ObjectWriterOptions,
  type OwnedObjectsInput,
  type OwnedObjectsPlan,
  type SyncOwnedObjectsOptions,
  type SyncOwnedObjectsReport,
} from './owned.js';
export {
  applyPlacementCondition,
  createPlacementEvent,
  readPlacementStatus,
  type PlacementStatusReading,
} from './placement-status.js';
