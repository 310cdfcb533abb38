export {
  CLUSTER_AUTOSCALER_CEILING_PHRASES,
  CLUSTER_AUTOSCALER_LIMIT_PHRASES,
  KARPENTER_LIMIT_PHRASES,
  clusterAutoscalerCeiling,
  clusterAutoscalerLimit,
  karpenterCeiling,
  karpenterLimit,
  karpenterVerdict,
  type AutoscalerSetting,
} from './autoscalers.js';
export {
  KarpenterCapacityConfigSchema,
  KubernetesSignalsConfigSchema,
  type KarpenterCapacityConfig,
  type KubernetesSignalsConfig,
} from './config.js';
export { clusterPropertyCapacityModule, karpenterCapacityModule, kubernetesSignalsModule } from './module.js';
export {
  KARPENTER_SOURCE_NAME,
  createKarpenterCapacitySource,
  karpenterCapacity,
  nodePoolRoom,
  refusal,
  type KarpenterCapacitySourceOptions,
  type NodePool,
} from './capacity-karpenter.js';
export {
  ClusterPropertyCapacityConfigSchema,
  PROPERTY_SOURCE_NAME,
  createClusterPropertyCapacitySource,
  type ClusterPropertyCapacityConfig,
  type ClusterPropertyCapacitySourceOptions,
} from './capacity-property.js';
export {
  SOURCE_NAME,
  createKubernetesSignalSource,
  deploymentHealth,
  eventTime,
  hpaSignal,
  labelSelectorString,
  type KubernetesSignalSourceOptions,
} from './source.js';
