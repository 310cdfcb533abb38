// The public API of @mco/simulator: a time-driven fleet and load model that
// drives the real @mco/core engine, and its HTML report.
export {
  parseScenario,
  parseScenarioText,
  formatIssues,
  longView,
  ScenarioSchema,
  DEFAULT_HPA,
  DEFAULT_NODE_POOL,
  type Scenario,
  type ScenarioInput,
  type ScenarioIssue,
  type ScenarioEvent,
  type ClusterSpec,
  type PlacedWorkload,
  type Workload,
  type Demand,
  type Hpa,
  type NodePool,
} from './scenario.js';
export { CapacitySourceSchema, SIMULATED_SOURCE, type CapacitySource } from './capacity.js';
export {
  simulate,
  defaultPolicies,
  MCO_POLICIES,
  type EnginePolicy,
  GPU_HOUR_COST_PROPERTY,
  POLICIES,
  POLICY_LABELS,
  type PolicyName,
  type PolicyRun,
  type PlacementRun,
  type SimulationResult,
  type SimulateOptions,
  type Evaluation,
  type Summary,
  type FailBackOutcome,
  type StockoutOutcome,
  type TickSample,
  type ClusterSample,
  type LaneState,
  type TimelineEntry,
} from './simulate.js';
export {
  HorizontalPodAutoscaler,
  NodePoolModel,
  Pods,
  spreadLoad,
  type HpaStatus,
  type HpaSyncInput,
  type AutoscalerEvent,
  type LoadShare,
} from './model.js';
export { createRandom, hashRandom, type Random } from './random.js';
export { baseDemand, demandSeries } from './demand.js';
export { parseDuration, formatDuration, formatElapsed } from './duration.js';
export {
  formatConsole,
  formatTimeline,
  formatTimelineEntry,
  formatSummary,
  formatTable,
  summaryRows,
  metrics,
  type Metric,
} from './format.js';
export { renderReport, REPORT_STYLE, SERIES_COLORS } from './report.js';
export {
  escapeHtml,
  laneChart,
  lineChart,
  type Lane,
  type LaneChartOptions,
  type LineChartOptions,
  type Marker,
  type Series,
} from './svg.js';
export {
  simulateSeeds,
  metricStats,
  policiesOf,
  verdicts,
  formatStat,
  formatSeeds,
  formatSeedsConsole,
  formatSeedsSummary,
  formatVerdicts,
  formatVerdictTable,
  placementView,
  replaceVerdictTable,
  EQUIVALENT_COST_SHARE,
  EQUIVALENT_UNSERVED_PP,
  VERDICT_TABLE_BEGIN,
  VERDICT_TABLE_END,
  type MultiSeedResult,
  type MetricStats,
  type Stat,
  type Verdict,
  type VerdictKind,
} from './compare.js';
export {
  decideMcoV02,
  preferenceOrder,
  atCeilingV02,
  wantsFewerThanMinV02,
  type McoV02Input,
  type PolicyDecision,
} from './mco-v02.js';
export { decidePickN, pickNSize } from './pick-n.js';
export { GPU_STOCKOUT_SCENARIO } from './embedded.js';
