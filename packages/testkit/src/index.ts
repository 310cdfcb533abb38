// @mco/testkit (private): a real kube-apiserver + etcd for integration tests.
// See docs/testing.md.
export { controlPlaneAvailability, ENABLE_HINT, locateBinaries, type Availability } from './binaries.js';
export { PREPARE_HINT, preparedTool, requireTool, toolsManifestPath } from './tools.js';
export {
  DEFAULT_USERS,
  startControlPlane,
  type ClusterHandle,
  type TokenConnection,
  type ControlPlane,
  type ControlPlaneOptions,
  type StopOptions,
} from './control-plane.js';
export {
  RELEASE_NAMESPACE,
  accessCheckKey,
  helmTemplate,
  renderChart,
  serviceAccountAccess,
  serviceAccountKubeConfig,
  type AccessCheck,
} from './chart.js';
export { kubeconfigSecret, placeOn, tenantKubeConfig, tenantPlacement } from './tenant.js';
export { apiErrorOf, type ApiErrorInfo, type RawRequestOptions, type RawResponse } from './http.js';
export {
  applyObjects,
  FIELD_MANAGER,
  installCrds,
  loadYamlObjects,
  parseYamlDocuments,
  toYaml,
  type CrdSource,
  type InstalledCrd,
  type RequestTarget,
} from './objects.js';
export { freePort, ProcessReaper, startServer, stopServer, tailOf, type ServerProcess } from './processes.js';
export { eventually } from './wait.js';
export {
  AUTOSCALING_MEMBER_TOOLS,
  INSTANCE_TYPE,
  startAutoscalingMember,
  type AutoscalingMember,
  type AutoscalingMemberOptions,
} from './autoscaling-member.js';
export { startExternalMetrics, type ExternalMetrics } from './external-metrics.js';
export { startGitServer, type GitServer } from './git.js';
export {
  fluxControllerCrds,
  fluxControllerTool,
  startFluxController,
  type FluxController,
  type FluxControllerName,
  type FluxControllerOptions,
} from './flux.js';
export { checkSamples, percentile, summarize } from './figures.js';
export { metricSums } from './metrics-text.js';
export { controlPlaneSkipReason, describeWithControlPlane, type RequirementOptions } from './vitest.js';
export { sharedCrdsDir, THIRD_PARTY_CRDS, thirdPartyCrd, type ThirdPartyCrd } from './crds.js';
export {
  commandsOf,
  containsFragment,
  normalizeOutputLine,
  parseDocBlocks,
  substitute,
  Walkthrough,
  type BlockReport,
  type Directive,
  type DocBlock,
  type Outcome,
  type Substitution,
  type WalkthroughOptions,
} from './walkthrough.js';
