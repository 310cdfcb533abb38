import { readFileSync } from 'node:fs';
import {
  createClusterAccess,
  parseProviderFile,
  type ClusterAccessManager,
  type ProviderConfig,
  type ServerPolicy,
} from '@mco/cluster-access';
import {
  McoError,
  type CapacitySourceModule,
  type Logger,
  type SignalSourceDeps,
  type SignalSourceModule,
} from '@mco/runtime';
import { KARPENTER_SOURCE_NAME, createKarpenterCapacitySource } from './capacity-karpenter.js';
import {
  ClusterPropertyCapacityConfigSchema,
  PROPERTY_SOURCE_NAME,
  createClusterPropertyCapacitySource,
  type ClusterPropertyCapacityConfig,
} from './capacity-property.js';
import {
  KarpenterCapacityConfigSchema,
  KubernetesSignalsConfigSchema,
  type KarpenterCapacityConfig,
  type KubernetesSignalsConfig,
  type MemberAccessConfig,
} from './config.js';
import { SOURCE_NAME, createKubernetesSignalSource } from './source.js';

/** The `kubernetes` capacity-signal source, as registered in the mco app. */
export const kubernetesSignalsModule: SignalSourceModule<KubernetesSignalsConfig> = {
  kind: 'signals',
  name: SOURCE_NAME,
  configSchema: KubernetesSignalsConfigSchema,
  create(config, deps) {
    const logger = deps.logger.child({ source: SOURCE_NAME });
    const access = memberAccess(config, deps, logger);
    return createKubernetesSignalSource({ access, config, metrics: deps.metrics, now: deps.now, logger });
  },
};

/** The `karpenter` capacity source, as registered in the mco app. */
export const karpenterCapacityModule: CapacitySourceModule<KarpenterCapacityConfig> = {
  kind: 'capacity',
  name: KARPENTER_SOURCE_NAME,
  configSchema: KarpenterCapacityConfigSchema,
  create(config, deps) {
    const logger = deps.logger.child({ source: KARPENTER_SOURCE_NAME });
    const access = memberAccess(config, deps, logger);
    return createKarpenterCapacitySource({ access, config, metrics: deps.metrics, now: deps.now, logger });
  },
};

/** The `cluster-property` capacity source, as registered in the mco app. */
export const clusterPropertyCapacityModule: CapacitySourceModule<ClusterPropertyCapacityConfig> = {
  kind: 'capacity',
  name: PROPERTY_SOURCE_NAME,
  configSchema: ClusterPropertyCapacityConfigSchema,
  create(config, deps) {
    return createClusterPropertyCapacitySource({ config, metrics: deps.metrics, now: deps.now });
  },
};

/** Member cluster access as the configuration says: its provider file (read now) or inline providers. */
function memberAccess(config: MemberAccessConfig, deps: SignalSourceDeps, logger: Logger): ClusterAccessManager {
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
  return createClusterAccess({
    providers,
    hub: deps.hub,
    ...(kubeconfigSecrets ? { kubeconfigSecrets } : {}),
    qps: config.qps,
    burst: config.burst,
    now: deps.now,
    logger,
  });
}
