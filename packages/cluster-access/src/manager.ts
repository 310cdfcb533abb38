import { clusterKey, type ClusterProfile } from '@mco/core';
import { abortable, KubeClient, objectPath, SECRETS } from '@mco/kube-runtime';
import { McoError, silentLogger, toMcoError, type KubeConnection, type Logger } from '@mco/runtime';
import { accessOf, providerAccess, providerList, selectAccessProvider, type ClusterAccess } from './access.js';
import { KUBECONFIG_SECRET_ANNOTATION, KUBECONFIG_SECRET_KEY, parseStaticKubeconfig } from './kubeconfig-secret.js';
import { memberClusterClient, type MemberClusterClient } from './member-client.js';
import type { ProviderConfig, ProviderFile } from './provider-file.js';
import { createRateLimiter, type RateLimiter } from './rate-limiter.js';

export interface ClusterAccessOptions {
  /** The consumer provider file (or its providers). */
  readonly providers: ProviderFile | readonly ProviderConfig[];
  /** Access to the hub, to read kubeconfig Secrets; without it such profiles get an error. */
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
   * cache survives between calls. Rejects with an McoError naming the profile.
   */
  accessFor(profile: ClusterProfile, signal?: AbortSignal): Promise<ClusterAccess>;
  /** A client for the cluster, rate-limited per cluster. */
  clientFor(profile: ClusterProfile, signal?: AbortSignal): Promise<MemberClusterClient>;
  /** Drops what is cached for a ClusterProfile that is gone. */
  forget(cluster: string): void;
}

interface Entry {
  readonly fingerprint: string;
  readonly access: ClusterAccess;
  readonly client: MemberClusterClient;
  readonly loadedAt: number;
}

/** Creates the manager; see docs/cluster-access.md. */
export function createClusterAccess(options: ClusterAccessOptions): ClusterAccessManager {
  const providers = providerList(options.providers);
  const now = options.now ?? (() => new Date());
  const logger = options.logger ?? silentLogger;
  const secretRefreshMs = options.secretRefreshMs ?? 60_000;
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

  const remember = (key: string, fingerprint: string, access: ClusterAccess): Entry => {
    const entry = {
      fingerprint,
      access,
      client: memberClusterClient(access, limiterFor(key)),
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
    return remember(key, content, access);
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
    return remember(key, fingerprint, access);
  }

  return {
    accessFor: async (profile, signal) => (await entryFor(profile, signal)).access,
    clientFor: async (profile, signal) => (await entryFor(profile, signal)).client,
    forget(cluster) {
      entries.delete(cluster);
      limiters.delete(cluster);
    },
  };
}
