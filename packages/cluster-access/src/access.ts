import type { AccessProviderCluster, ClusterProfile } from '@mco/core';
import { clusterKey } from '@mco/core';
import { createCachedCredential, runExecPlugin, type CachedCredential, type ExecClusterInfo } from '@mco/kube-runtime';
import { McoError, silentLogger, type KubeConnection, type Logger } from '@mco/runtime';
import type { ProviderConfig, ProviderFile } from './provider-file.js';

/** Name of the access-provider cluster extension that is passed to the plugin as `config`. */
export const EXEC_EXTENSION_NAME = 'client.authentication.k8s.io/exec';

/** How mco reaches one member cluster: where, which CA, and a credential kept fresh. */
export interface ClusterAccess extends KubeConnection {
  /** ClusterProfile `namespace/name`. */
  readonly cluster: string;
  /** The access provider used, or `kubeconfig-secret`. */
  readonly provider: string;
  /** The bearer token; an McoError (`Unauthorized`) when the credential is a client certificate. */
  getToken(signal?: AbortSignal): Promise<string>;
}

export type SelectedProvider =
  | { readonly ok: true; readonly provider: ProviderConfig; readonly cluster: AccessProviderCluster }
  | { readonly ok: false; readonly error: string };

/**
 * Picks the first provider of the provider file (file order) that the
 * ClusterProfile offers in `status.accessProviders` (or the deprecated
 * `status.credentialProviders` when that is absent), as the Cluster Inventory API
 * prescribes for consumers.
 */
export function selectAccessProvider(profile: ClusterProfile, providers: readonly ProviderConfig[]): SelectedProvider {
  const offered = profile.status?.accessProviders?.length
    ? profile.status.accessProviders
    : (profile.status?.credentialProviders ?? []);
  const key = clusterKey(profile.metadata.namespace, profile.metadata.name);
  for (const provider of providers) {
    const entry = offered.find((o) => o.name === provider.name);
    if (!entry) continue;
    if (!entry.cluster?.server) {
      return { ok: false, error: `ClusterProfile ${key}: access provider "${provider.name}" has no cluster.server` };
    }
    return { ok: true, provider, cluster: entry.cluster };
  }
  const names = offered.map((o) => `"${o.name}"`).join(', ') || 'none';
  const configured = providers.map((p) => `"${p.name}"`).join(', ') || 'none';
  return {
    ok: false,
    error: `ClusterProfile ${key} offers access providers [${names}] and the provider file configures [${configured}]: no match`,
  };
}

/** The `KUBERNETES_EXEC_INFO` cluster of an access-provider cluster entry. */
export function execClusterInfo(cluster: AccessProviderCluster): ExecClusterInfo {
  const extension = cluster.extensions?.find((e) => e.name === EXEC_EXTENSION_NAME)?.extension;
  return {
    server: cluster.server,
    ...(cluster['tls-server-name'] ? { 'tls-server-name': cluster['tls-server-name'] } : {}),
    ...(cluster['insecure-skip-tls-verify'] ? { 'insecure-skip-tls-verify': true } : {}),
    ...(cluster['certificate-authority-data']
      ? { 'certificate-authority-data': cluster['certificate-authority-data'] }
      : {}),
    ...(cluster['proxy-url'] ? { 'proxy-url': cluster['proxy-url'] } : {}),
    ...(cluster['disable-compression'] ? { 'disable-compression': true } : {}),
    ...(extension !== undefined ? { config: extension } : {}),
  };
}

export interface ProviderAccessOptions {
  readonly now?: () => Date;
  readonly execTimeoutMs?: number;
  readonly refreshBeforeMs?: number;
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  readonly logger?: Logger;
}

/** Access to one cluster through an access provider's credential plugin. */
export function providerAccess(
  key: string,
  provider: ProviderConfig,
  cluster: AccessProviderCluster,
  options: ProviderAccessOptions = {},
): ClusterAccess {
  if (cluster['certificate-authority'] && !cluster['certificate-authority-data']) {
    throw new McoError(
      'Invalid',
      `ClusterProfile ${key}: access provider "${provider.name}" names a CA file (certificate-authority); mco reads no hub files, use certificate-authority-data`,
      false,
    );
  }
  const logger = options.logger ?? silentLogger;
  const info = execClusterInfo(cluster);
  const cache = createCachedCredential(
    async () => {
      logger.debug('running credential plugin', {
        cluster: key,
        provider: provider.name,
        command: provider.execConfig.command,
      });
      return runExecPlugin(provider.execConfig, {
        provider: provider.name,
        cluster: info,
        ...(options.execTimeoutMs ? { timeoutMs: options.execTimeoutMs } : {}),
        ...(options.baseEnv ? { baseEnv: options.baseEnv } : {}),
        onStderr: (stderr) =>
          logger.warn('credential plugin failed', {
            cluster: key,
            provider: provider.name,
            command: provider.execConfig.command,
            stderr,
          }),
      });
    },
    {
      ...(options.now ? { now: options.now } : {}),
      ...(options.refreshBeforeMs ? { refreshBeforeMs: options.refreshBeforeMs } : {}),
    },
  );
  return accessOf(key, provider.name, cluster, cache);
}

/** Builds a ClusterAccess from a clientcmd cluster and a credential cache. */
export function accessOf(
  key: string,
  provider: string,
  cluster: AccessProviderCluster,
  cache: CachedCredential,
): ClusterAccess {
  return {
    cluster: key,
    provider,
    server: cluster.server,
    ...(cluster['certificate-authority-data'] ? { caData: cluster['certificate-authority-data'] } : {}),
    ...(cluster['tls-server-name'] ? { tlsServerName: cluster['tls-server-name'] } : {}),
    ...(cluster['proxy-url'] ? { proxyUrl: cluster['proxy-url'] } : {}),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    getCredential: (signal) => cache.get(signal),
    async getToken(signal) {
      const credential = await cache.get(signal);
      if (!credential.token) {
        throw new McoError(
          'Unauthorized',
          `ClusterProfile ${key}: access provider "${provider}" gives a client certificate, not a bearer token`,
          false,
        );
      }
      return credential.token;
    },
    invalidate: () => cache.invalidate(),
  };
}

/** Normalises a provider file or a provider list. */
export function providerList(providers: ProviderFile | readonly ProviderConfig[]): readonly ProviderConfig[] {
  return Array.isArray(providers) ? providers : (providers as ProviderFile).providers;
}
