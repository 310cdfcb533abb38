import { readFileSync } from 'node:fs';
import { createClusterAccess, parseProviderFile, type ProviderConfig, type ServerPolicy } from '@mco/cluster-access';
import { McoError, type SignalSourceModule } from '@mco/runtime';
import { KubernetesSignalsConfigSchema, type KubernetesSignalsConfig } from './config.js';
import { SOURCE_NAME, createKubernetesSignalSource } from './source.js';

/** The `kubernetes` capacity-signal source, as registered in the mco app. */
export const kubernetesSignalsModule: SignalSourceModule<KubernetesSignalsConfig> = {
  kind: 'signals',
  name: SOURCE_NAME,
  configSchema: KubernetesSignalsConfigSchema,
  create(config, deps) {
    let providers: readonly ProviderConfig[] = config.providers ?? [];
    let kubeconfigSecrets: ServerPolicy | undefined = config.kubeconfigSecrets;
    if (config.providersFile) {
      let text: string;
      try {
        text = readFileSync(config.providersFile, 'utf8');
      } catch (error) {
        throw new McoError('Invalid', `providersFile ${config.providersFile}: ${(error as Error).message}`, false, {
          cause: error,
        });
      }
      const file = parseProviderFile(text, config.providersFile);
      providers = file.providers;
      kubeconfigSecrets ??= file.kubeconfigSecrets;
    }
    const logger = deps.logger.child({ source: SOURCE_NAME });
    const access = createClusterAccess({
      providers,
      hub: deps.hub,
      ...(kubeconfigSecrets ? { kubeconfigSecrets } : {}),
      qps: config.qps,
      burst: config.burst,
      now: deps.now,
      logger,
    });
    return createKubernetesSignalSource({ access, config, metrics: deps.metrics, now: deps.now, logger });
  },
};
