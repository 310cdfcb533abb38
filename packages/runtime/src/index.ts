export {
  createLogger,
  redact,
  silentLogger,
  REDACTED,
  type Logger,
  type LogFields,
  type LogLevel,
  type LoggerOptions,
} from './logger.js';
export { RepeatLimiter } from './repeats.js';
export { McoError, toMcoError, httpStatusOf, type McoErrorCode } from './errors.js';
export { readBoundedJson, readJsonRequest, RequestBodyError } from './http.js';
export type { Credential, KubeConnection } from './kube-connection.js';
export type {
  CapacityObservation,
  CapacityRequest,
  CapacitySignalSource,
  CapacitySource,
  CapacitySourceModule,
  InventoryProvider,
  InventoryProviderModule,
  PluginDeps,
  PluginKind,
  PluginModule,
  SignalSourceDeps,
  SignalError,
  SignalObservation,
  SignalRequest,
  SignalSourceModule,
} from './plugin.js';
export {
  answerEachCluster,
  observeEachCluster,
  isDeadline,
  observeWorkloadOnEachCluster,
  type AnswerEachClusterOptions,
  type ClusterCapacity,
  type ClusterObservation,
  type ObserveEachClusterOptions,
} from './observe-clusters.js';
export {
  capacityMetrics,
  signalMetrics,
  type CapacityMetrics,
  type CapacityResult,
  type SignalMetrics,
  type SignalResult,
} from './signal-metrics.js';
export {
  podShapeOf,
  replicasThatFit,
  subtractQuantities,
  type PodShape,
  type PodSpecFields,
  type Toleration,
} from './pod-shape.js';
export { reconcileMetrics, type ReconcileRecorder, type ReconcileResult } from './reconcile-metrics.js';
