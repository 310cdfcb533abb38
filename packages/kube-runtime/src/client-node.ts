import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import https from 'node:https';
import type * as ClientNode from '@kubernetes/client-node';
import type { CustomObjectsApi, KubeConfig, RequestContext, User } from '@kubernetes/client-node';
import { McoError, type Credential, type KubeConnection } from '@mco/runtime';
import { KubeClient, type KubeClientOptions } from './client.js';

// The one interop module with @kubernetes/client-node, in an entry point of
// its own (`@mco/kube-runtime/client-node`). A library user may hand mco a
// client-node `KubeConfig`; every request is still made by `KubeClient`
// (`hubClient`, `kubeClientFromKubeConfig`). Importing this module does not
// load client-node (about 65 MiB, docs/performance.md): only
// `toClientNodeKubeConfig` does, when first called, so an adapter that accepts
// a `KubeConfig` costs nothing to a process that passes a connection.
// `requestOptions` is for code that drives client-node's generated APIs itself
// (tests, benchmarks); runtime code may not (a lint rule).

/**
 * Where an adapter reaches the hub: `hub`, a connection (a kubeconfig loaded by
 * `loadKubeConfig` of @mco/kube-runtime, as the `mco` commands pass), or
 * `kubeConfig`, a client-node `KubeConfig` a library user has. Exactly one.
 */
export interface HubSource {
  readonly hub?: KubeConnection;
  readonly kubeConfig?: KubeConfig;
}

/** The one `KubeClient` of an adapter, from its `HubSource`. */
export function hubClient(source: HubSource, options?: KubeClientOptions): KubeClient {
  if (source.hub && source.kubeConfig) {
    throw new McoError('Invalid', 'hub and kubeConfig: give one of them, not both', false);
  }
  if (source.hub) return new KubeClient(source.hub, options);
  if (source.kubeConfig) return kubeClientFromKubeConfig(source.kubeConfig, options);
  throw new McoError('Invalid', 'hub: missing (give hub, a connection from loadKubeConfig, or kubeConfig)', false);
}

let clientNode: typeof ClientNode | undefined;
function loadClientNode(): typeof ClientNode {
  return (clientNode ??= createRequire(import.meta.url)('@kubernetes/client-node') as typeof ClientNode);
}

/** The auth-provider name under which a converted connection's credential answers. */
const AUTH_PROVIDER = 'mco-connection';
let converted = 0;

/**
 * A client-node `KubeConfig` for a connection: its server and CA, and a user
 * whose credential comes from the connection (client-node caches
 * authenticators by user name, so every conversion gets its own).
 */
export function toClientNodeKubeConfig(connection: KubeConnection): KubeConfig {
  const name = `mco-${++converted}`;
  const kubeConfig = new (loadClientNode().KubeConfig)();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name,
        server: connection.server,
        skipTLSVerify: connection.insecureSkipTlsVerify,
        ...(connection.caData ? { caData: connection.caData } : {}),
        ...(connection.tlsServerName ? { tlsServerName: connection.tlsServerName } : {}),
        ...(connection.proxyUrl ? { proxyUrl: connection.proxyUrl } : {}),
      },
    ],
    users: [{ name, authProvider: { name: AUTH_PROVIDER, config: {} } }],
    contexts: [{ name, cluster: name, user: name }],
    currentContext: name,
  });
  kubeConfig.addAuthenticator({
    isAuthProvider: (user: User) => user.name === name && user.authProvider?.name === AUTH_PROVIDER,
    async applyAuthentication(_user, opts) {
      const credential = await connection.getCredential();
      const o = opts as { headers?: Record<string, string>; cert?: Buffer; key?: Buffer };
      if (credential.token) o.headers = { ...o.headers, Authorization: `Bearer ${credential.token}` };
      if (credential.clientCertificateData && credential.clientKeyData) {
        o.cert = Buffer.from(credential.clientCertificateData);
        o.key = Buffer.from(credential.clientKeyData);
      }
    },
  });
  return kubeConfig;
}

/**
 * A connection that makes requests with a client-node `KubeConfig`'s current
 * context: its server and CA, and whatever credential it applies (token,
 * client certificate, exec plugin, with client-node's own caching).
 */
export function connectionFromKubeConfig(kubeConfig: KubeConfig): KubeConnection {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current context with a cluster');
  return {
    server: cluster.server,
    ...(cluster.caData ? { caData: cluster.caData } : {}),
    ...(!cluster.caData && cluster.caFile ? { caData: readFileSync(cluster.caFile).toString('base64') } : {}),
    ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
    ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
    insecureSkipTlsVerify: cluster.skipTLSVerify === true,
    async getCredential(): Promise<Credential> {
      const options: https.RequestOptions = { headers: {} };
      await kubeConfig.applyToHTTPSOptions(options);
      const authorization = String((options.headers as Record<string, unknown>).Authorization ?? '');
      const token = authorization.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
      return {
        ...(token ? { token } : {}),
        ...(options.cert && options.key
          ? { clientCertificateData: String(options.cert), clientKeyData: String(options.key) }
          : {}),
      };
    },
    invalidate: () => {},
  };
}

// client-node 1.4 builds a new https.Agent for every request, so every call
// pays a TLS handshake; mco reuses one keep-alive agent per
// kubeconfig, rebuilt when the TLS material changes (a rotated client cert).
const keepAliveAgents = new WeakMap<KubeConfig, { signature: string; agent: https.Agent }>();

/** A `KubeClient` over a client-node `KubeConfig` (`connectionFromKubeConfig`). */
export function kubeClientFromKubeConfig(kubeConfig: KubeConfig, options?: KubeClientOptions): KubeClient {
  return new KubeClient(connectionFromKubeConfig(kubeConfig), options);
}

function keepAliveAgent(kubeConfig: KubeConfig, created: https.Agent): https.Agent {
  const o = created.options;
  const signature = [o.ca, o.cert, o.key, o.pfx, o.rejectUnauthorized, o.servername]
    .map((v) => (v === undefined ? '' : String(v)))
    .join('\u0000');
  const cached = keepAliveAgents.get(kubeConfig);
  if (cached?.signature === signature) return cached.agent;
  cached?.agent.destroy();
  const agent = new https.Agent({ ...o, keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 120_000 });
  keepAliveAgents.set(kubeConfig, { signature, agent });
  return agent;
}

// client-node's generated calls take observable-style middleware (anything
// with toPromise). This one reuses the keep-alive agent, bounds a request's
// duration (client-node 1.4 sets no timeout) and can set a patch's Content-Type.
export type RequestOptions = Parameters<CustomObjectsApi['listClusterCustomObject']>[1];
export function requestOptions(kubeConfig: KubeConfig, timeoutMs: number, contentType?: string): RequestOptions {
  const resolved = <T>(value: T) => ({ toPromise: () => Promise.resolve(value) });
  const middleware = {
    pre: (context: RequestContext) => {
      const agent = context.getAgent();
      if (agent instanceof https.Agent) context.setAgent(keepAliveAgent(kubeConfig, agent));
      context.setSignal(AbortSignal.timeout(timeoutMs));
      if (contentType) context.setHeaderParam('Content-Type', contentType);
      return resolved(context);
    },
    post: (response: unknown) => resolved(response),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' } as unknown as RequestOptions;
}
