// The public API of @mco/kube-runtime: the Kubernetes machinery the controller
// and every delivery adapter share (docs/architecture.md).
export {
  Informer,
  objectKey,
  type InformerEvent,
  type InformerHandler,
  type InformerHealth,
  type InformerOptions,
  type KubeObject,
  type ListWatch,
  type ListPage,
  type WatchEventType,
} from './informer.js';
export { WorkQueue, type WorkQueueOptions } from './work-queue.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export { WakeableSleep } from './sleep.js';
export { LeaderElector, type LeaderElectionOptions } from './leader-election.js';
export {
  CLUSTER_PROFILES,
  PLACEMENTS,
  PLACEMENT_DECISIONS,
  SECRETS,
  createInformer,
  createListWatch,
  requestOptions,
  type InformerTuning,
  type ListWatchScope,
  type RequestOptions,
  type Resource,
} from './kube.js';
export { jsonEqual } from './equal.js';
export { WriteOverlay } from './overlay.js';
export {
  APPLIED_DIGEST_ANNOTATION,
  contains,
  createObjectWriter,
  digestOf,
  planOwnedObjects,
  type DesiredObject,
  type ObjectWriter,
  type ObjectWriterOptions,
  type OwnedObjectsInput,
  type OwnedObjectsPlan,
} from './owned.js';
