export {
  CLUSTER_AUTOSCALER_CEILING_PHRASES,
  KARPENTER_LIMIT_PHRASES,
  clusterAutoscalerCeiling,
  karpenterCeiling,
  karpenterVerdict,
  type AutoscalerSetting,
} from './autoscalers.js';
export { KubernetesSignalsConfigSchema, type KubernetesSignalsConfig } from './config.js';
export { kubernetesSignalsModule } from './module.js';
export {
  SOURCE_NAME,
  createKubernetesSignalSource,
  deploymentHealth,
  eventTime,
  hpaSignal,
  labelSelectorString,
  type KubernetesSignalSourceOptions,
} from './source.js';
