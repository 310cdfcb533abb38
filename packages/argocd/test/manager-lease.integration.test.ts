// Two cluster Secret syncers with one --secret-manager in one Argo CD namespace
// would delete each other's Secrets as orphans. On the real kube-apiserver: the
// manager name is held by a Lease; a second live syncer with the same name
// writes nothing and says who holds it; a crashed holder's Lease expires; a
// different name runs alongside.
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, V1MicroTime } from '@kubernetes/client-node';
import { CLUSTER_PROFILES } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger } from '@mco/runtime';
import { describeWithControlPlane, thirdPartyCrd, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { managerLeaseName, startArgoCdDelivery, type ArgoCdDelivery } from '../src/index.js';

vi.setConfig({ testTimeout: 60_000 });

async function until<T>(what: string, probe: () => Promise<T> | T, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve(probe()).catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('managerLeaseName', () => {
  it('is readable for a lower-case manager and a hash otherwise (as the chart computes it for its Role)', () => {
    expect([managerLeaseName('mco-argocd-cluster-sync'), managerLeaseName('Foo_bar')]).toEqual([
      'mco-secret-manager.mco-argocd-cluster-sync',
      // helm: sha256sum "Foo_bar" | trunc 16
      'mco-secret-manager-febc8ff2d861862a',
    ]);
  });
});

describeWithControlPlane('cluster Secret manager names on the real kube-apiserver', () => {
  let plane: ControlPlane;
  const deliveries: ArgoCdDelivery[] = [];

  /** A syncer as `mco argocd-sync --sync-cluster-secrets` runs it, with a short Lease and its log captured. */
  async function syncer(manager: string, identity: string) {
    const log: { level: string; msg: string; holder?: string; cluster?: string }[] = [];
    let accessCalls = 0;
    const delivery = await startArgoCdDelivery({
      kubeConfig: plane.hub.adminKubeConfig(),
      logger: createLogger({ level: 'info', write: (line) => log.push(JSON.parse(line) as (typeof log)[number]) }),
      secretSync: {
        namespace: 'argocd',
        manager,
        resolveAccess: async () => {
          accessCalls++;
          return {
            server: 'https://member.example',
            insecureSkipTlsVerify: false,
            getCredential: async () => ({ token: 't' }),
          };
        },
        lease: { identity, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
      },
    });
    deliveries.push(delivery);
    return { delivery, log, accessCalls: () => accessCalls };
  }
  const core = () => plane.hub.adminKubeConfig().makeApiClient(CoreV1Api);
  const managerOf = async (name: string) =>
    (await core().readNamespacedSecret({ namespace: 'argocd', name })).metadata?.labels?.[
      'app.kubernetes.io/managed-by'
    ];

  beforeAll(async () => {
    plane = await startControlPlane();
    await plane.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url)
        .pathname,
    ]);
    await plane.hub.apply(
      ['fleet', 'argocd'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    );
    const hub = plane.hub.adminKubeConfig();
    const custom = hub.makeApiClient(CustomObjectsApi);
    for (const name of ['a', 'b']) {
      const profile = {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet' },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      };
      await plane.hub.apply([profile]);
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...CLUSTER_PROFILES,
          namespace: 'fleet',
          name,
          body: { status: { accessProviders: [{ name: 'p', cluster: { server: 'https://member.example' } }] } },
        },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
    }
  });

  afterAll(async () => {
    for (const d of deliveries) await d.stop();
    await plane?.stop();
  });

  it('a crashed holder blocks the name only until its Lease expires; a second live syncer with the name writes nothing and names the holder; a different name runs alongside; the standby takes over when the holder stops', async () => {
    // A syncer that crashed a moment ago: its Lease was renewed just now and will never be again.
    const now = Date.now();
    await plane.hub
      .adminKubeConfig()
      .makeApiClient(CoordinationV1Api)
      .createNamespacedLease({
        namespace: 'argocd',
        body: {
          metadata: { name: managerLeaseName('team-a'), namespace: 'argocd' },
          spec: {
            holderIdentity: 'crashed-syncer',
            leaseDurationSeconds: 3,
            acquireTime: new V1MicroTime(now),
            renewTime: new V1MicroTime(now),
          },
        },
      });
    const first = await syncer('team-a', 'syncer-1');
    const blocked = await until('syncer-1 names the crashed holder', () =>
      first.log.find((l) => l.level === 'error' && l.holder === 'crashed-syncer'),
    );
    const whileBlocked = first.accessCalls();
    // The crashed holder's Lease expires and syncer-1 takes the name and writes the Secrets.
    await until(
      'syncer-1 writes both Secrets',
      async () => (await managerOf('fleet.a')) && (await managerOf('fleet.b')),
    );

    const second = await syncer('team-a', 'syncer-2');
    const refusal = await until('syncer-2 names syncer-1', () =>
      second.log.find((l) => l.level === 'error' && l.holder === 'syncer-1'),
    );
    const other = await syncer('team-c', 'syncer-3');
    await until('syncer-3 reconciles under its own name', () =>
      other.log.find((l) => l.msg.includes('not managed by mco') && l.cluster === 'fleet/a'),
    );
    // Several renewals later syncer-2 still has not touched a profile, and syncer-1 still holds the name.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const state = {
      blockedMessage: blocked.msg,
      whileBlocked,
      refusal: refusal.msg,
      secondAccessCalls: second.accessCalls(),
      held: [
        first.delivery.managerLease!.held(),
        second.delivery.managerLease!.held(),
        other.delivery.managerLease!.held(),
      ],
      managers: [await managerOf('fleet.a'), await managerOf('fleet.b')],
    };

    // syncer-1 stops (releasing the Lease): the standby takes over at once.
    await first.delivery.stop();
    await until('syncer-2 takes over', () => second.delivery.managerLease!.held() && second.accessCalls() >= 2);
    expect(state).toEqual({
      blockedMessage:
        'cluster Secret manager "team-a" is in use by another live syncer (crashed-syncer); this syncer writes no cluster Secrets until that one stops: give each syncer into one namespace its own --secret-manager',
      whileBlocked: 0,
      refusal:
        'cluster Secret manager "team-a" is in use by another live syncer (syncer-1); this syncer writes no cluster Secrets until that one stops: give each syncer into one namespace its own --secret-manager',
      secondAccessCalls: 0,
      held: [true, false, true],
      managers: ['team-a', 'team-a'],
    });
  });
});
