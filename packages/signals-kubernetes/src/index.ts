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
