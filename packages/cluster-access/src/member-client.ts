import {
  KubeConfig,
  ServerConfiguration,
  createConfiguration,
  type Configuration,
  type RequestContext,
  type ResponseContext,
  type User,
} from '@kubernetes/client-node';
import type { ClusterAccess } from './access.js';
import type { RateLimiter } from './rate-limiter.js';

/** The auth-provider name under which mco's credential cache answers for a member cluster's user. */
export const MCO_AUTH_PROVIDER = 'mco-cluster-access';

/** client-node clients for one member cluster, sharing the cluster's rate limiter and credential. */
export interface MemberClusterClient {
  readonly cluster: string;
  readonly access: ClusterAccess;
  /** A kubeconfig whose user and cluster names are unique to this member cluster. */
  readonly kubeConfig: KubeConfig;
  /**
   * A generated API client (e.g. `CoreV1Api`) whose requests wait for the
   * cluster's rate limiter, are cancelled by `signal`, and drop the cached
   * credential on 401.
   */
  api<T>(apiClass: new (configuration: Configuration) => T, signal?: AbortSignal): T;
}

/**
 * Builds the kubeconfig of a member cluster. client-node caches exec
 * credentials by user name, so every cluster gets its own user name; the
 * credential itself comes from `access` through a custom authenticator.
 */
export function memberKubeConfig(access: ClusterAccess): KubeConfig {
  const name = `mco/${access.cluster}/${access.provider}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name,
        server: access.server,
        skipTLSVerify: access.insecureSkipTlsVerify,
        ...(access.caData ? { caData: access.caData } : {}),
        ...(access.tlsServerName ? { tlsServerName: access.tlsServerName } : {}),
        ...(access.proxyUrl ? { proxyUrl: access.proxyUrl } : {}),
      },
    ],
    users: [{ name, authProvider: { name: MCO_AUTH_PROVIDER, config: {} } }],
    contexts: [{ name, cluster: name, user: name }],
    currentContext: name,
  });
  kc.addAuthenticator({
    isAuthProvider: (user: User) => user.name === name && user.authProvider?.name === MCO_AUTH_PROVIDER,
    async applyAuthentication(_user, opts) {
      const credential = await access.getCredential();
      const o = opts as { headers?: Record<string, string>; cert?: Buffer; key?: Buffer };
      if (credential.token) o.headers = { ...o.headers, Authorization: `Bearer ${credential.token}` };
      if (credential.clientCertificateData && credential.clientKeyData) {
        o.cert = Buffer.from(credential.clientCertificateData);
        o.key = Buffer.from(credential.clientKeyData);
      }
    },
  });
  return kc;
}

export function memberClusterClient(access: ClusterAccess, limiter: RateLimiter): MemberClusterClient {
  const kubeConfig = memberKubeConfig(access);
  return {
    cluster: access.cluster,
    access,
    kubeConfig,
    api(apiClass, signal) {
      const configuration = createConfiguration({
        baseServer: new ServerConfiguration(access.server, {}),
        authMethods: { default: kubeConfig },
        promiseMiddleware: [
          {
            async pre(context: RequestContext) {
              await limiter.acquire(signal);
              if (signal) context.setSignal(signal);
              return context;
            },
            async post(context: ResponseContext) {
              if (context.httpStatusCode === 401) access.invalidate();
              return context;
            },
          },
        ],
      });
      return new apiClass(configuration);
    },
  };
}
