// The public API of @mco/core. Everything here is documented in docs/api.md.
export * from './api/common.js';
export * from './api/cluster-profile.js';
export * from './api/placement.js';
export * from './api/signal.js';
export * from './api/placement-decision.js';
export * from './api/decision.js';
export * from './api/taint.js';
export { CapacityAnswerSchema, type CapacityAnswer } from './api/capacity.js';
export type { Result, SpecError } from './result.js';
export {
  decide,
  compilePlacementSpec,
  crossNamespaceWorkload,
  CONDITION_SATISFIED,
  CONDITION_VALID,
  type CompiledSpec,
  type DecideInput,
} from './decide.js';
export { explain, type ClusterExplanation, type Explanation } from './explain.js';
export { ClusterProperty, createInventory, type Inventory, type InventoryCluster } from './selection/inventory.js';
export { compileRe2, type Re2Pattern } from './selection/regex.js';
export { compileSelection, selectClusters, type Selection, type SelectionResult } from './selection/select.js';
export { RULE_TYPES } from './selection/rules.js';
export { PROPERTY_OPERATORS, SORT_ORDERS } from './selection/properties.js';
export { compareQuantities, parseQuantity, type Quantity } from './selection/quantity.js';
export { formatTaint, parseTaints, type ParsedTaint, type TaintsAnnotation } from './selection/taints.js';
export { DEFAULT_BEHAVIOR, resolveBehavior, type ResolvedBehavior } from './scaling/behavior.js';
export {
  isAtCapacityCeiling,
  wantsScaleIn,
  assessSignal,
  sourceReportsReadyReplicas,
  type SignalAssessment,
} from './scaling/signals.js';
export { drainStepSize } from './scaling/draining.js';
export { setCondition } from './conditions.js';
export {
  buildPlacementDecisions,
  placementDecisionName,
  placementLabelValue,
  SCHEDULER_NAME,
  type PreviousSlice,
} from './placement-decisions.js';
