import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { clusterKey, type ClusterProfile } from '@mco/core';
import { abortable, KubeClient, objectPath, SECRETS } from '@mco/kube-runtime';
import { McoError, silentLogger, toMcoError, type KubeConnection, type Logger } from '@mco/runtime';
import { accessOf, providerAccess, providerList, selectAccessProvider, type ClusterAccess } from './access.js';
import { KUBECONFIG_SECRET_ANNOTATION, KUBECONFIG_SECRET_KEY, parseStaticKubeconfig } from './kubeconfig-secret.js';
import { memberClusterClient, type MemberClusterClient } from './member-client.js';
import type { ProviderConfig, ProviderFile } from './provider-file.js';
import { createRateLimiter, type RateLimiter } from './rate-limiter.js';
import { readHubEndpoints } from './hub-endpoints.js';
import {
  addressCheck,
  checkClusterTrust,
  checkDuplicateServer,
  HUB_REASON,
  hubEndpointKey,
  type ServerPolicy,
  type TrustResult,
} from './server-trust.js';

/** How long the hub's own endpoints are used as read. */
const HUB_ENDPOINTS_REFRESH_MS = 5 * 60_000;
/** How long the addresses a member server's host resolved to are used before the next check resolves it again. */
const RESOLVED_REFRESH_MS = 60_000;

export interface ClusterAccessOptions {
  /** The consumer provider file (or its providers). */
  readonly providers: ProviderFile | readonly ProviderConfig[];
  /**
   * Access to the hub, to read kubeconfig Secrets (without it such profiles
   * get an error) and the hub's own endpoints (Service and EndpointSlice
   * `default/kubernetes`), never accepted as a member's.
   */
  readonly hub?: KubeConnection;
  /** Requests per second and burst of each member cluster's own token bucket (default 5 and 10, like client-go). */
  readonly qps?: number;
  readonly burst?: number;
  /** Credential plugin timeout (default 20 s). */
  readonly execTimeoutMs?: number;
  /** Timeout of a hub request (a kubeconfig Secret read; default 30 s): a hung API server fails the read, not the caller. */
  readonly requestTimeoutMs?: number;
  /** Refresh credentials this long before they expire (default 60 s). */
  readonly refreshBeforeMs?: number;
  /** A kubeconfig Secret is read again when its copy is older than this (default 60 s), so rotation is picked up. */
  readonly secretRefreshMs?: number;
  /**
   * Bounds of ClusterProfiles that name a kubeconfig Secret (default: the
   * provider file's `kubeconfigSecrets`, else https servers that are not
   * reserved, no insecure TLS, no proxy).
   */
  readonly kubeconfigSecrets?: ServerPolicy;
  /** The hub's API server URL, never accepted as a member's (default: `hub`'s server). */
  readonly hubServer?: string;
  /**
   * Resolves a member server's host name for the check before credentials
   * are obtained (default: the system resolver, `dns.lookup`); connections
   * check the addresses they resolve again.
   */
  readonly lookup?: (hostname: string) => Promise<readonly { readonly address: string }[]>;
  /** The environment credential plugins inherit (default: mco's own, as kubectl does). */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => Date;
  readonly logger?: Logger;
}

/** Credentials and clients for the member clusters behind ClusterProfiles. */
export interface ClusterAccessManager {
  /**
   * How to reach the cluster behind `profile`. The result is cached per cluster
   * and reused while the profile's access data is unchanged, so its credential
   * cache survives between calls. Rejects with an McoError naming the profile
   * and the field when the profile points outside its provider's bounds
   * (server, proxy, TLS: docs/cluster-access.md), before any credential is
   * obtained. `peers` are the other ClusterProfiles (an informer's list): a
   * profile naming the server of an older one is refused too.
   */
  accessFor(profile: ClusterProfile, signal?: AbortSignal, peers?: Iterable<ClusterProfile>): Promise<ClusterAccess>;
  /** A client for the cluster, rate-limited per cluster; refused as `accessFor` refuses. */
  clientFor(
    profile: ClusterProfile,
    signal?: AbortSignal,
    peers?: Iterable<ClusterProfile>,
  ): Promise<MemberClusterClient>;
  /** Drops what is cached for a ClusterProfile that is gone. */
  forget(cluster: string): void;
}

interface Entry {
  readonly fingerprint: string;
  /** The policy the access is checked against (its provider's, or the kubeconfig Secrets'). */
  readonly policy: ServerPolicy;
  readonly access: ClusterAccess;
  /** Why an address the server's host resolves to is refused (server-trust.ts `addressCheck`). */
  readonly checkAddress: (address: string, port: number) => string | undefined;
  readonly client: MemberClusterClient;
  readonly loadedAt: number;
}

/**
 * A ClusterProfile refused because its server is the hub's own API server
 * (any spelling of its address, or a name resolving to it). Not a doubt: an
 * adapter removes what it wrote for that profile (an Argo CD cluster Secret,
 * a Flux kubeconfig Secret), so the hub is not reached with it by another
 * controller either.
 */
export class HubServerRefusedError extends McoError {
  constructor(message: string) {
    super('Invalid', message, false);
  }
}

/** Creates the manager; see docs/cluster-access.md. */
export function createClusterAccess(options: ClusterAccessOptions): ClusterAccessManager {
  const providers = providerList(options.providers);
  const secretPolicy: ServerPolicy =
    options.kubeconfigSecrets ??
    (Array.isArray(options.providers) ? {} : (options.providers as ProviderFile)).kubeconfigSecrets ??
    {};
  const hubServer = options.hubServer ?? options.hub?.server;
  const now = options.now ?? (() => new Date());
  const logger = options.logger ?? silentLogger;
  const secretRefreshMs = options.secretRefreshMs ?? 60_000;
  const resolve = options.lookup ?? ((host: string) => lookup(host, { all: true }));
  const entries = new Map<string, Entry>();
  const limiters = new Map<string, RateLimiter>();
  const hub = options.hub ? new KubeClient(options.hub, { timeoutMs: options.requestTimeoutMs ?? 30_000 }) : undefined;

  const limiterFor = (key: string) => {
    let limiter = limiters.get(key);
    if (!limiter) {
      limiter = createRateLimiter({ qps: options.qps ?? 5, burst: options.burst ?? 10 });
      limiters.set(key, limiter);
    }
    return limiter;
  };

  /**
   * The hub's API server URL as address keys (hubEndpointKey): its IP, or the
   * addresses its name resolves to, so a member server spelling the hub
   * another way (or a name resolving to it) is refused at connect time too.
   */
  const hubServerKeys = async (): Promise<Set<string>> => {
    const url = hubServer ? new URL(hubServer) : undefined;
    if (!url) return new Set();
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = url.port || '443';
    const addresses = isIP(host)
      ? [host]
      : await resolve(host).then(
          (found) => found.map((a) => a.address),
          () => [],
        );
    return new Set(addresses.map((address) => hubEndpointKey(address, port)));
  };

  /** The hub's own endpoints and URL's addresses as last read (stale ones are kept when a refresh fails). */
  let hubEndpoints: { readonly keys: ReadonlySet<string>; readonly at: number } | undefined;
  let reading: Promise<void> | undefined;
  const currentHubEndpoints = async (signal?: AbortSignal): Promise<ReadonlySet<string> | undefined> => {
    if (hubEndpoints && now().getTime() - hubEndpoints.at < HUB_ENDPOINTS_REFRESH_MS) return hubEndpoints.keys;
    reading ??= (async () => {
      const own = await hubServerKeys();
      try {
        if (hub) for (const key of await readHubEndpoints(hub, signal)) own.add(key);
      } catch (error) {
        // Not allowed to read them (no RBAC for it): only the hub's URL and in-cluster names are refused.
        if (!(error instanceof McoError && error.code === 'Unauthorized')) throw error;
        logger.warn("may not read the hub's own endpoints; only its URL and in-cluster names are refused", {
          error,
        });
        for (const key of hubEndpoints?.keys ?? []) own.add(key);
      }
      hubEndpoints = { keys: own, at: now().getTime() };
    })().finally(() => (reading = undefined));
    try {
      await reading;
    } catch (error) {
      if (!hubEndpoints) throw error;
      logger.warn("could not refresh the hub's own endpoints; using the last ones read", { error });
    }
    return hubEndpoints?.keys;
  };

  const remember = (key: string, fingerprint: string, policy: ServerPolicy, access: ClusterAccess): Entry => {
    const checkAddress = addressCheck(access.server, policy, () => hubEndpoints?.keys);
    const entry = {
      fingerprint,
      policy,
      access,
      checkAddress,
      client: memberClusterClient(access, limiterFor(key), checkAddress),
      loadedAt: now().getTime(),
    };
    entries.set(key, entry);
    return entry;
  };

  async function fromSecret(key: string, profile: ClusterProfile, secretName: string, signal?: AbortSignal) {
    const namespace = profile.metadata.namespace;
    const fingerprint = `secret:${namespace}/${secretName}`;
    const cached = entries.get(key);
    if (cached?.fingerprint === fingerprint && now().getTime() - cached.loadedAt < secretRefreshMs) return cached;
    if (!hub) {
      throw new McoError(
        'Invalid',
        `ClusterProfile ${key}: annotation ${KUBECONFIG_SECRET_ANNOTATION} needs hub access, which this component was not given`,
        false,
      );
    }
    let secret: { data?: Record<string, string> };
    try {
      secret = await abortable(hub.get(objectPath(SECRETS, namespace, secretName), signal ? { signal } : {}), signal);
    } catch (error) {
      throw toMcoError(error, `ClusterProfile ${key}: reading kubeconfig Secret ${namespace}/${secretName}`);
    }
    const data = secret.data?.[KUBECONFIG_SECRET_KEY];
    if (!data) {
      throw new McoError(
        'Invalid',
        `ClusterProfile ${key}: Secret ${namespace}/${secretName} has no key "${KUBECONFIG_SECRET_KEY}"`,
        false,
      );
    }
    let parsed;
    try {
      parsed = parseStaticKubeconfig(Buffer.from(data, 'base64').toString('utf8'));
    } catch (error) {
      throw new McoError(
        'Invalid',
        `ClusterProfile ${key}: Secret ${namespace}/${secretName} key "${KUBECONFIG_SECRET_KEY}": ${(error as Error).message}`,
        false,
      );
    }
    const content = `${fingerprint}:${JSON.stringify(parsed.cluster)}:${JSON.stringify(parsed.credential)}`;
    // An unchanged Secret keeps its entry (and client); only the age is reset.
    if (cached?.fingerprint === content) {
      const entry = { ...cached, loadedAt: now().getTime() };
      entries.set(key, entry);
      return entry;
    }
    const credential = parsed.credential;
    const access = accessOf(key, 'kubeconfig-secret', parsed.cluster, {
      get: () => Promise.resolve(credential),
      invalidate: () => {},
    });
    return remember(key, content, secretPolicy, access);
  }

  async function entryFor(profile: ClusterProfile, signal?: AbortSignal): Promise<Entry> {
    const key = clusterKey(profile.metadata.namespace, profile.metadata.name);
    const secretName = profile.metadata.annotations?.[KUBECONFIG_SECRET_ANNOTATION];
    if (secretName) return fromSecret(key, profile, secretName, signal);
    const selected = selectAccessProvider(profile, providers);
    if (!selected.ok) throw new McoError('Invalid', selected.error, false);
    const fingerprint = JSON.stringify([selected.provider, selected.cluster]);
    const cached = entries.get(key);
    if (cached?.fingerprint === fingerprint) return cached;
    logger.debug('member cluster access', { cluster: key, provider: selected.provider.name });
    const access = providerAccess(key, selected.provider, selected.cluster, {
      now,
      logger,
      ...(options.execTimeoutMs ? { execTimeoutMs: options.execTimeoutMs } : {}),
      ...(options.refreshBeforeMs ? { refreshBeforeMs: options.refreshBeforeMs } : {}),
      ...(options.baseEnv ? { baseEnv: options.baseEnv } : {}),
    });
    return remember(key, fingerprint, selected.provider, access);
  }

  /**
   * The server a peer ClusterProfile claims: its selected provider's, when that
   * passes the checks. Remembered per object: informers replace an object on
   * change, and every call checks all peers (1,000 profiles: ~3 ms a call unremembered).
   */
  const claims = new WeakMap<ClusterProfile, { readonly server: string | undefined }>();
  const claimOf = (peer: ClusterProfile): string | undefined => {
    const known = claims.get(peer);
    if (known) return known.server;
    const selected = selectAccessProvider(peer, providers);
    const key = clusterKey(peer.metadata.namespace, peer.metadata.name);
    const source = selected.ok ? `access provider "${selected.provider.name}"` : '';
    const server =
      selected.ok &&
      checkClusterTrust(selected.cluster, selected.provider, {
        cluster: key,
        source,
        hubServer,
        hubEndpoints: hubEndpoints?.keys,
      }).ok
        ? selected.cluster.server
        : undefined;
    claims.set(peer, { server });
    return server;
  };

  /** Addresses per host name, as last resolved (one lookup per host a minute, however many profiles share it). */
  const resolvedHosts = new Map<string, { readonly at: number; readonly addresses: Promise<readonly string[]> }>();
  const addressesOf = (host: string): Promise<readonly string[]> => {
    const known = resolvedHosts.get(host);
    if (known && now().getTime() - known.at < RESOLVED_REFRESH_MS) return known.addresses;
    // A name that does not resolve is left to the connection, which fails on it.
    const addresses = resolve(host).then(
      (found) => found.map((a) => a.address),
      () => [],
    );
    if (resolvedHosts.size >= 10_000) resolvedHosts.clear();
    resolvedHosts.set(host, { at: now().getTime(), addresses });
    return addresses;
  };

  /**
   * The addresses the server's host resolves to, checked as a connection
   * checks them (`addressCheck`): adapters that hand the access to another
   * controller (Argo CD, Flux) never connect themselves.
   */
  async function checkResolved(entry: Entry, source: string, signal?: AbortSignal): Promise<TrustResult> {
    const { access } = entry;
    const url = new URL(access.server);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (access.proxyUrl || isIP(host)) return { ok: true };
    const port = Number(url.port || 443);
    for (const address of await abortable(addressesOf(host), signal)) {
      const why = entry.checkAddress(address, port);
      if (why) {
        return {
          ok: false,
          field: 'cluster.server',
          error: `ClusterProfile ${access.cluster}: ${source}: cluster.server "${access.server}" is refused: its host resolves to ${address}, which ${why}`,
          ...(why === HUB_REASON ? { hub: true as const } : {}),
        };
      }
    }
    return { ok: true };
  }

  /**
   * The one gate every caller passes (accessFor, clientFor): checked on each
   * call, cached or not, since a peer may have appeared since.
   */
  async function checkedEntryFor(
    profile: ClusterProfile,
    signal: AbortSignal | undefined,
    peers: Iterable<ClusterProfile> | undefined,
  ): Promise<Entry> {
    const entry = await entryFor(profile, signal);
    const { access } = entry;
    let endpoints: ReadonlySet<string> | undefined;
    try {
      endpoints = await currentHubEndpoints(signal);
    } catch (error) {
      throw toMcoError(error, `ClusterProfile ${access.cluster}`);
    }
    const source =
      access.provider === 'kubeconfig-secret' ? 'kubeconfig Secret' : `access provider "${access.provider}"`;
    const cluster = {
      server: access.server,
      ...(access.proxyUrl ? { 'proxy-url': access.proxyUrl } : {}),
      'insecure-skip-tls-verify': access.insecureSkipTlsVerify,
    };
    const context = { cluster: access.cluster, source, hubServer, hubEndpoints: endpoints };
    let result: TrustResult = checkClusterTrust(cluster, entry.policy, context);
    if (result.ok) result = await checkResolved(entry, context.source, signal);
    if (result.ok && peers && access.provider !== 'kubeconfig-secret') {
      result = checkDuplicateServer(profile, access.server, peers, claimOf);
    }
    if (!result.ok) {
      logger.warn('ClusterProfile refused', { cluster: access.cluster, field: result.field, reason: result.error });
      throw result.hub ? new HubServerRefusedError(result.error) : new McoError('Invalid', result.error, false);
    }
    return entry;
  }

  for (const provider of providers) {
    if (provider.allowAnyServer === true) {
      logger.warn(
        'access provider has allowAnyServer: true: its credentials go to any https server a ClusterProfile names',
        { provider: provider.name },
      );
    }
  }

  return {
    accessFor: async (profile, signal, peers) => (await checkedEntryFor(profile, signal, peers)).access,
    clientFor: async (profile, signal, peers) => (await checkedEntryFor(profile, signal, peers)).client,
    forget(cluster) {
      entries.delete(cluster);
      limiters.delete(cluster);
    },
  };
}
