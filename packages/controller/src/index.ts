// The public API of @mco/controller (docs/operations.md describes running it).
export {
  createController,
  installOf,
  type Controller,
  type ControllerOptions,
  type LeaderElectionSettings,
  type DecisionTrace,
  type ReconcileTrace,
} from './controller.js';
export {
  Reconciler,
  NotLeaderError,
  CONDITION_SIGNALS_OBSERVED,
  DECISIONS_LABEL_SELECTOR,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  REASON_NO_SIGNAL_SOURCE,
  REASON_UNKNOWN_SIGNAL_SOURCE,
  REASON_SIGNAL_SOURCE_NOT_ALLOWED,
  withoutSignalSource,
  type ReconcileResult,
  type ReconcilerOptions,
} from './reconciler.js';
export { askCapacity, type CapacityQuestion, type CapacityReport } from './capacity.js';
export { EventRecorder, type EventType } from './events.js';
export {
  CONFIG_MAPS,
  CONFIRMATION_FIELD_SELECTOR,
  CONFIRMED_AT_KEY,
  DEFAULT_CONTROLLER_NAMESPACE,
  INVENTORY_LOSS_CONFIRMATION,
  InventoryLossGuard,
  MAX_CONFIRMATION_AHEAD_MS,
  readConfirmation,
  type ConfirmOutcome,
  type InventoryLoss,
  type InventoryLossConfirmation,
  type InventoryLossGuardOptions,
} from './inventory-guard.js';
export { createMetrics, type ControllerMetrics } from './metrics.js';
export {
  fieldManagerOf,
  membersLeaseName,
  shardLeaseName,
  shardOf,
  MEMBERS_ANNOTATION,
  SHARDS_ANNOTATION,
  type ShardSettings,
} from './shards.js';
export { INVENTORY_LOSS_ANNOTATION, inventoryLossLeaseName, readLoss } from './inventory-loss-state.js';
export { startHealthServer, type HealthServer, type HealthServerOptions } from './server.js';
export { createHubClient, type CoreEvent, type HubClient } from './kube.js';
export {
  CONTROLLER_FLAGS,
  SignalSourcesFileSchema,
  controllerFlagsHelp,
  flagSyntax,
  parseControllerConfig,
  parseInteger,
  parseNamespaceList,
  parseDuration,
  type ControllerConfig,
  type FlagSpec,
  type SignalSourcesFile,
} from './options.js';
