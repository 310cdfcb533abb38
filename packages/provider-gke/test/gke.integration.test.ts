import type { KubeConfig } from '@kubernetes/client-node';
import { silentLogger } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
// Hub helpers shared with the manual provider's tests (same ClusterRole, same CRD).
import {
  clusterProfileCrd,
  createForeignProfile,
  createNamespaces,
  eventually,
  grantProviderRole,
  readProfiles,
  resourceVersions,
  written,
} from '../../provider-manual/test/hub.js';
import { configSchema, create, createFleetSync } from '../src/index.js';
import { aMembership, startGkeHubServer, type GkeHubServer } from './gke-hub-server.js';

const gateway = (location: string, id: string) =>
  `http://gateway.test/v1/projects/123456789012/locations/${location}/gkeMemberships/${id}`;

describeWithControlPlane('GKE fleet provider against a real kube-apiserver and a local GKE Hub', () => {
  let cp: ControlPlane;
  let hub: GkeHubServer;
  let provider: KubeConfig;
  let metrics: Registry;

  beforeAll(async () => {
    [cp, hub] = await Promise.all([startControlPlane(), startGkeHubServer()]);
    await cp.hub.installCrds([clusterProfileCrd()]);
    await createNamespaces(cp.hub, ['fleet']);
    // Least privilege: the provider's ClusterRole bound in its one namespace only.
    provider = await grantProviderRole(cp.hub, 'provider', ['fleet']);
    await createForeignProfile(cp.hub, 'fleet', 'by-hand', 'mco-manual');
  });
  afterAll(async () => {
    await hub?.close();
    await cp?.stop();
  });
  beforeEach(() => {
    hub.unreachable = undefined;
    hub.failNext = undefined;
    hub.delayMs = 0;
    hub.pageSize = 2;
    metrics = new Registry();
  });

  const config = (extra: Record<string, unknown> = {}) =>
    configSchema.parse({
      project: 'my-project',
      hubEndpoint: hub.url,
      connectGatewayEndpoint: 'http://gateway.test',
      // Generous: under load a short timeout turns a hub's 500 into a Timeout
      // (the answer arrives after the client gave up). The slow-answer case sets its own.
      requestTimeoutSeconds: 10,
      pollSeconds: 600,
      backoff: { initialSeconds: 0.02, maxSeconds: 0.1 },
      auth: { type: 'metadata', baseUrl: hub.url },
      ...extra,
    });
  const deps = () => ({ kubeConfig: provider, logger: silentLogger, metrics, now: () => new Date() });
  const syncOnce = (extra: Record<string, unknown> = {}) =>
    createFleetSync(config(extra), deps())(new AbortController().signal);
  const ours = async () =>
    Object.fromEntries(Object.entries(await resourceVersions(cp.hub)).filter(([k]) => k !== 'fleet/by-hand'));
  const errors = async () =>
    (await metrics.metrics())
      .split('\n')
      .filter((l) => l.startsWith('mco_gke_fleet_sync_errors_total'))
      .map((l) => l.replace(/manager="mco-gke-fleet",/, ''));

  it('mirrors READY memberships as Google-shaped profiles, creates none for CREATING or DELETING ones', async () => {
    hub.memberships = [
      aMembership('east', 'us-east1', { labels: { env: 'prod' } }),
      aMembership('west', 'us-west4'),
      aMembership('new', 'us-east1', { state: 'CREATING' }),
      aMembership('leaving', 'us-east1', { state: 'DELETING' }),
      aMembership('world', 'global'),
    ];
    const outcome = await syncOnce();
    const profiles = await readProfiles(cp.hub);
    expect({
      outcome,
      names: [...profiles.keys()].sort(),
      east: written(profiles.get('fleet/east-us-east1')),
    }).toEqual({
      outcome: { ok: true },
      names: ['fleet/by-hand', 'fleet/east-us-east1', 'fleet/west-us-west4', 'fleet/world-global'],
      east: {
        labels: { env: 'prod', 'x-k8s.io/cluster-manager': 'mco-gke-fleet' },
        annotations: {
          'fleet.gke.io/clusterName': 'projects/my-project/locations/us-east1/clusters/east',
          'fleet.gke.io/membershipName': 'projects/123456789012/locations/us-east1/memberships/east',
          'fleet.gke.io/metricsEndpoint':
            'https://monitoring.googleapis.com/v1/projects/my-project/location/global/prometheus',
          'gateway.gke.io/endpoint': gateway('us-east1', 'east'),
        },
        spec: { displayName: 'east(us-east1)', clusterManager: { name: 'mco-gke-fleet' } },
        status: {
          accessProviders: [{ name: 'google', cluster: { server: gateway('us-east1', 'east') } }],
          conditions: [{ type: 'Joined', status: 'True', reason: 'Joined', message: '', lastTransitionTime: 'set' }],
          version: { kubernetes: 'v1.34.1-gke.3355000' },
        },
      },
    });
  });

  it('a second sync of the same fleet writes nothing', async () => {
    const before = await ours();
    const outcome = await syncOnce();
    expect({ outcome, after: await ours() }).toEqual({ outcome: { ok: true }, after: before });
  });

  it.each([
    [
      'unreachable locations',
      (h: GkeHubServer) => (h.unreachable = { page: 0, locations: ['asia-east1'] }),
      'UnreachableLocations',
      {},
    ],
    ['a 503', (h: GkeHubServer) => (h.failNext = { count: 1, status: 503, message: 'unavailable' }), 'Unavailable', {}],
    ['a slow answer', (h: GkeHubServer) => (h.delayMs = 600), 'Timeout', { requestTimeoutSeconds: 0.3 }],
  ])('%s on a listing without a membership changes nothing and prunes nothing', async (_name, setup, reason, extra) => {
    const before = await ours();
    hub.memberships = [aMembership('east', 'us-east1')]; // west and world vanished... or did they?
    setup(hub);
    const outcome = await syncOnce(extra);
    expect({
      outcome: outcome.ok ? 'ok' : outcome.reason,
      after: await ours(),
      errors: await errors(),
    }).toEqual({
      outcome: reason,
      after: before,
      errors: [`mco_gke_fleet_sync_errors_total{reason="${reason}"} 1`],
    });
  });

  it('marks a missing cluster and a deleting membership not Joined and unhealthy, keeps a CREATING one as is', async () => {
    hub.memberships = [
      aMembership('east', 'us-east1', { clusterMissing: true }),
      aMembership('west', 'us-west4', { state: 'DELETING' }),
      aMembership('world', 'global', { state: 'CREATING' }),
    ];
    const before = await ours();
    expect(await syncOnce()).toEqual({ ok: true });
    const profiles = await readProfiles(cp.hub);
    const conditions = (key: string) =>
      profiles.get(key)?.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`);
    expect({
      east: conditions('fleet/east-us-east1'),
      west: conditions('fleet/west-us-west4'),
      worldUntouched: (await ours())['fleet/world-global'] === before['fleet/world-global'],
    }).toEqual({
      east: ['Joined=False/ClusterMissing', 'ControlPlaneHealthy=False/ClusterMissing'],
      west: ['Joined=False/MembershipDeleting', 'ControlPlaneHealthy=False/MembershipDeleting'],
      worldUntouched: true,
    });
  });

  it('deletes a profile only once its membership is absent from a complete listing, never a foreign one', async () => {
    hub.memberships = [aMembership('east', 'us-east1')];
    const foreignBefore = (await resourceVersions(cp.hub))['fleet/by-hand'];
    // Two of three go: more than half, so the mass-prune guard refuses until it is allowed.
    const refused = await syncOnce();
    const unchanged = Object.keys(await resourceVersions(cp.hub));
    expect({ refused: refused.ok, unchanged }).toEqual({
      refused: false,
      unchanged: ['fleet/by-hand', 'fleet/east-us-east1', 'fleet/west-us-west4', 'fleet/world-global'],
    });
    expect(await createFleetSync(config({ allowMassPrune: true }), deps())(new AbortController().signal)).toEqual({
      ok: true,
    });
    const after = await resourceVersions(cp.hub);
    expect({ names: Object.keys(after), foreignUntouched: after['fleet/by-hand'] === foreignBefore }).toEqual({
      names: ['fleet/by-hand', 'fleet/east-us-east1'],
      foreignUntouched: true,
    });
  });

  it('run() retries with backoff after errors, then syncs and reports its health in metrics', async () => {
    hub.memberships = [aMembership('east', 'us-east1'), aMembership('back', 'europe-west1')];
    hub.failNext = { count: 2, status: 500, message: 'internal' };
    const abort = new AbortController();
    // west and world go (two of three): a decommission, allowed.
    const running = create(config({ allowMassPrune: true }), deps()).run(abort.signal);
    // The metrics are set once the pass that wrote the profiles has returned.
    const text = await eventually(
      () => metrics.metrics(),
      (t) => t.includes('mco_gke_fleet_last_success_timestamp_seconds{'),
    );
    abort.abort();
    await running;
    const names = Object.keys(await ours());
    expect({
      names,
      errors: await errors(),
      lastSuccess: /mco_gke_fleet_last_success_timestamp_seconds\{manager="mco-gke-fleet"\} \d+/.test(text),
      profiles: /mco_gke_fleet_cluster_profiles\{manager="mco-gke-fleet"\} (\d+)/.exec(text)?.[1],
      ready: /mco_gke_fleet_memberships\{manager="mco-gke-fleet",state="READY"\} (\d+)/.exec(text)?.[1],
    }).toEqual({
      names: ['fleet/back-europe-west1', 'fleet/east-us-east1'],
      errors: ['mco_gke_fleet_sync_errors_total{reason="Unavailable"} 2'],
      lastSuccess: true,
      profiles: '2',
      ready: '2',
    });
  });
});
