import type { AddressInfo } from 'node:net';
import { PLACEMENT_KIND } from '@mco/core';
import {
  CLUSTER_PROFILES,
  createInformer,
  createListWatch,
  Informer,
  KubeApiError,
  KubeClient,
  PLACEMENTS,
  type InformerEvent,
  type KubeConnection,
  type KubeObject,
  type ListWatchScope,
  type Resource,
} from '@mco/kube-runtime';
import { silentLogger, type Logger } from '@mco/runtime';
import {
  AccessCache,
  SessionStore,
  subjectAccessReview,
  type AuthMode,
  type Identity,
  type ProxyTrust,
} from './auth.js';
import { FleetModel, keptDeliveryObject, keptEvent, keptGenerator, type FleetModelOptions } from './model.js';
import { createDashboardServer } from './server.js';

const EVENTS: Resource = { group: '', version: 'v1', plural: 'events' };
const LEASES: Resource = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
/** Delivery objects shown per placed cluster, when their API is served on the hub. */
const DELIVERY: readonly Resource[] = [
  { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' },
  { group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations' },
  { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases' },
];
/** What generates delivery objects for a placement: Argo CD ApplicationSets, Flux Operator ResourceSets. */
const GENERATORS: readonly Resource[] = [
  { group: 'argoproj.io', version: 'v1alpha1', plural: 'applicationsets' },
  { group: 'fluxcd.controlplane.io', version: 'v1', plural: 'resourcesets' },
];

export interface DashboardOptions {
  readonly hub: KubeConnection;
  readonly host: string;
  readonly port: number;
  readonly auth: AuthMode;
  /** Mark the session cookie Secure (default true). */
  readonly secureCookies?: boolean;
  /** Serve https with this certificate and key (PEM); proxy mode requires it. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Proxy mode: what proves that a request came through the proxy. */
  readonly proxy?: ProxyTrust;
  /** None mode: Host names served besides `localhost`, loopback addresses and the listen address. */
  readonly allowedHosts?: readonly string[];
  /** The controller's Lease, `namespace/name` (default DEFAULT_CONTROLLER_LEASE), read for its liveness. */
  readonly controllerLease?: string;
  /** The bounds of what the dashboard keeps (defaults: DEFAULT_EVENT_BOUNDS, DEFAULT_DELIVERY_BOUNDS). */
  readonly bounds?: Omit<FleetModelOptions, 'now' | 'laneLength'>;
  readonly logger?: Logger;
}

export interface Dashboard {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Watches the hub (ClusterProfiles, placements, their Events and, where
 * served, Argo CD Applications and Flux Kustomizations/HelmReleases) and
 * serves the live page. It reads the hub only; it never reaches member clusters.
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const logger = options.logger ?? silentLogger;
  const client = new KubeClient(options.hub);
  const model = new FleetModel({
    ...options.bounds,
    ...(options.controllerLease ? { controllerLease: options.controllerLease } : {}),
  });
  const informers: Pick<Informer<KubeObject>, 'hasSynced' | 'start' | 'stop'>[] = [];
  const watch = <T extends KubeObject>(informer: Informer<T>, handler: (event: InformerEvent, o: T) => void) => {
    informer.addHandler((event, object) => handler(event, object));
    informers.push(informer);
  };
  /** An informer that keeps only `transform`'s part of each object: what the page shows, cut to size. */
  const kept = <T extends KubeObject>(resource: Resource, transform: (o: KubeObject) => T, scope?: ListWatchScope) =>
    new Informer<T>({
      name: resource.plural,
      listWatch: createListWatch<T>(client, resource, scope),
      logger,
      transform,
    });
  watch(createInformer(client, CLUSTER_PROFILES, { logger }), (e, o) => model.clusterProfile(e, o));
  watch(createInformer(client, PLACEMENTS, { logger }), (e, o) => model.placement(e, o));
  // Only placements' Events: the API server filters, so a busy hub's other Events are never cached.
  watch(kept(EVENTS, keptEvent, { fieldSelector: `involvedObject.kind=${PLACEMENT_KIND}` }), (e, o) =>
    model.event(e, o),
  );
  for (const resource of DELIVERY) {
    if (await served(client, resource)) watch(kept(resource, keptDeliveryObject), (e, o) => model.deliveryObject(e, o));
  }
  watch(
    kept(LEASES, (o) => o, { namespace: model.controllerLease.slice(0, model.controllerLease.indexOf('/')) }),
    (e, o) => model.lease(e, o),
  );
  for (const resource of GENERATORS) {
    if (await served(client, resource)) watch(kept(resource, keptGenerator), (e, o) => model.generator(e, o));
  }

  const review = async (identity: Identity, namespace: string, resource: { group: string; resource: string }) => {
    const answer = await client.create<{ status?: { allowed?: boolean } }>(
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      subjectAccessReview(identity, namespace, resource),
    );
    return answer.status?.allowed === true;
  };
  const server = createDashboardServer({
    model,
    synced: () => informers.every((i) => i.hasSynced()),
    auth: options.auth,
    ...(options.auth === 'none' ? {} : { access: new AccessCache(review) }),
    ...(options.auth === 'token'
      ? {
          login: (token: string) => whoAmI(options.hub, token),
          sessions: new SessionStore(8 * 3600_000),
        }
      : {}),
    ...(options.secureCookies === false ? { secureCookies: false } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.proxy ? { proxy: options.proxy } : {}),
    allowedHosts: [options.host, ...(options.allowedHosts ?? [])],
    logger,
  });
  for (const informer of informers) informer.start();
  // The controller turns stale with time alone: look every few seconds.
  const ticker = setInterval(() => model.tick(), 5_000);
  ticker.unref();
  let address: AddressInfo;
  try {
    address = await server.listen(options.host, options.port);
  } catch (error) {
    clearInterval(ticker);
    await Promise.all(informers.map((i) => i.stop()));
    client.close();
    throw error;
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `${options.tls ? 'https' : 'http'}://${host}:${address.port}/`,
    async close() {
      clearInterval(ticker);
      await server.close();
      await Promise.all(informers.map((i) => i.stop()));
      client.close();
    },
  };
}

/** Whether the hub serves `resource` (an API group that is not installed answers 404). */
async function served(client: KubeClient, resource: Resource): Promise<boolean> {
  try {
    const list = await client.get<{ resources?: { name: string }[] }>(`/apis/${resource.group}/${resource.version}`);
    return (list.resources ?? []).some((r) => r.name === resource.plural);
  } catch (error) {
    if (error instanceof KubeApiError && error.code === 404) return false;
    throw error;
  }
}

/** The identity a bearer token authenticates as on the hub: a SelfSubjectReview made with the token itself. */
async function whoAmI(hub: KubeConnection, token: string): Promise<Identity> {
  const client = new KubeClient(
    {
      server: hub.server,
      ...(hub.caData ? { caData: hub.caData } : {}),
      ...(hub.tlsServerName ? { tlsServerName: hub.tlsServerName } : {}),
      ...(hub.proxyUrl ? { proxyUrl: hub.proxyUrl } : {}),
      insecureSkipTlsVerify: hub.insecureSkipTlsVerify,
      getCredential: () => Promise.resolve({ token }),
      invalidate: () => undefined,
    },
    { timeoutMs: 10_000 },
  );
  try {
    const review = await client.create<{ status?: { userInfo?: { username?: string; groups?: string[] } } }>(
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    );
    const user = review.status?.userInfo?.username;
    if (!user) throw new Error('the SelfSubjectReview named no user');
    return { user, groups: review.status?.userInfo?.groups ?? [] };
  } finally {
    client.close();
  }
}
