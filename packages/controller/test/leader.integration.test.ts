import { expect, it } from 'vitest';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { createLogger } from '@mco/runtime';
import { CLUSTER_PROFILES, createListWatch, Informer, PLACEMENT_DECISIONS, type KubeObject } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import type { Controller } from '../src/index.js';
import { FakeSignalSource, LEASE_NAME, LEASE_NAMESPACE, waitFor, describeWithHub } from './support.js';
import { counterValue, FAST_LEADER_ELECTION, testController, useControllerHub } from './support-controller.js';

const leaderElection = FAST_LEADER_ELECTION;
const allClusters = { clusterSelectorRules: [{ type: 'all-clusters' }] };

describeWithHub('leader election and the idle watchdog on a real kube-apiserver', () => {
  const env = useControllerHub();
  const { start } = env;
  const holder = async () =>
    (
      await env.hub.admin
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: LEASE_NAMESPACE, name: LEASE_NAME })
    ).spec?.holderIdentity;

  it('with two replicas only the leader writes; a released Lease is taken over at once', async () => {
    await env.fleet.namespace('ha');
    await env.fleet.namespace('fleet-ha');
    await env.fleet.createProfile('fleet-ha', 'one');
    const first = start(testController(env.hub.controllerKubeConfig(), { identity: 'first', leaderElection }));
    const second = start(testController(env.hub.controllerKubeConfig(), { identity: 'second', leaderElection }));
    const leader = await waitFor('a leader', () => (first.isLeader() ? first : second.isLeader() ? second : undefined));
    const follower = leader === first ? second : first;
    await env.fleet.createPlacement('ha', 'app', allClusters);
    await waitFor('decided', async () => (await env.fleet.states('ha', 'app')).includes('fleet-ha/one:ACTIVE'));
    await env.fleet.createProfile('fleet-ha', 'two');
    await waitFor('decided again', async () => (await env.fleet.states('ha', 'app')).length >= 2);
    const writes = async (c: Controller) =>
      (await counterValue(c, 'mco_controller_status_writes_total')) +
      (await counterValue(c, 'mco_controller_placement_decision_writes_total'));
    expect({
      leaders: [first.isLeader(), second.isLeader()].filter(Boolean).length,
      holder: await holder(),
      followerWrites: await writes(follower),
      leaderWrote: (await writes(leader)) > 0,
    }).toEqual({ leaders: 1, holder: leader.identity, followerWrites: 0, leaderWrote: true });

    const stopped = Date.now();
    await leader.stop();
    await waitFor('the follower leads', () => follower.isLeader());
    const failoverMs = Date.now() - stopped;
    console.log(`[bench] failover after a graceful stop (Lease released): ${failoverMs} ms (retry period 300 ms)`);
    await env.fleet.createProfile('fleet-ha', 'three');
    await waitFor('the new leader decides', async () => (await env.fleet.states('ha', 'app')).length >= 3);
    expect({ holder: await holder(), failoverWithinRetry: failoverMs < leaderElection.leaseDurationMs }).toEqual({
      holder: follower.identity,
      failoverWithinRetry: true,
    });
    await env.fleet.deletePlacement('ha', 'app');
    await waitFor('cleaned up', async () => (await env.fleet.decisions('ha')).length === 0);
  });

  it('a leader keeps its Lease: renewed round after round, never lost and taken again, no renewal failing', async () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => warnings.push(line) });
    const leader = start(
      testController(env.hub.controllerKubeConfig(), { identity: 'keeper', leaderElection, logger }),
    );
    await waitFor('the leader', () => leader.isLeader());
    const leases = env.hub.admin.makeApiClient(CoordinationV1Api);
    const read = () => leases.readNamespacedLease({ namespace: LEASE_NAMESPACE, name: LEASE_NAME });
    const taken = await read();
    // Ten renewals (each a new resourceVersion): about 3 s at the 300 ms retry period, twice the renew deadline.
    const versions = new Set([taken.metadata?.resourceVersion]);
    await waitFor('ten renewals', async () => versions.add((await read()).metadata?.resourceVersion).size > 10);
    const now = await read();
    await leader.stop();
    expect({
      holder: now.spec?.holderIdentity,
      transitions: now.spec?.leaseTransitions,
      acquired: String(now.spec?.acquireTime),
      warnings: warnings.filter((w) => w.includes('lease')),
    }).toEqual({
      holder: 'keeper',
      transitions: taken.spec?.leaseTransitions,
      acquired: String(taken.spec?.acquireTime),
      warnings: [],
    });
  });

  it('two installs share the Lease: only the first reconciles, the second stands by (not ready, logging the holder) and takes over when the first is removed', async () => {
    await env.fleet.namespace('installs');
    await env.fleet.namespace('fleet-installs');
    await env.fleet.createProfile('fleet-installs', 'one');
    // Identities as the chart makes them: <release namespace>/<release name>/<pod>_<suffix>.
    const a = start(
      testController(env.hub.controllerKubeConfig(), { identity: 'team-a/mco/mco-controller-0_aaaa', leaderElection }),
    );
    await waitFor('install A leads', () => a.isLeader());
    const bLogs: string[] = [];
    const b = start(
      testController(env.hub.controllerKubeConfig(), {
        identity: 'team-b/mco/mco-controller-0_bbbb',
        leaderElection,
        logger: createLogger({ level: 'info', write: (line) => bLogs.push(line) }),
      }),
    );
    await b.waitForSync();
    await waitFor('B sees A holding the Lease', () => b.standingByFor() === a.identity);
    await env.fleet.createPlacement('installs', 'app', allClusters);
    await waitFor('decided', async () =>
      (await env.fleet.states('installs', 'app')).includes('fleet-installs/one:ACTIVE'),
    );
    await env.fleet.createProfile('fleet-installs', 'two');
    // Other tests' ClusterProfiles match all-clusters too: wait for this test's own cluster by name.
    await waitFor('decided again', async () =>
      (await env.fleet.states('installs', 'app')).includes('fleet-installs/two:ACTIVE'),
    );
    const writes = async (c: Controller) =>
      (await counterValue(c, 'mco_controller_status_writes_total')) +
      (await counterValue(c, 'mco_controller_placement_decision_writes_total'));
    const standby = bLogs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.holder === a.identity && r.level === 'warn');
    expect({
      aLeads: a.isLeader(),
      aReady: a.isReady(),
      bLeads: b.isLeader(),
      bReady: b.isReady(),
      bStandsByFor: b.standingByFor(),
      bStandbyGauge: await counterValue(b, 'mco_controller_standby_for_other_install'),
      bLogged: standby && { level: standby.level, msg: standby.msg, lease: standby.lease },
      bWrites: await writes(b),
      aWrote: (await writes(a)) > 0,
      holder: await holder(),
    }).toEqual({
      aLeads: true,
      aReady: true,
      bLeads: false,
      bReady: false,
      bStandsByFor: a.identity,
      bStandbyGauge: 1,
      bLogged: {
        level: 'warn',
        msg: 'another mco install holds the controller lease; this install stands by and is not ready',
        lease: `${LEASE_NAMESPACE}/${LEASE_NAME}`,
      },
      bWrites: 0,
      aWrote: true,
      holder: a.identity,
    });

    await a.stop(); // install A is uninstalled: its controller releases the Lease
    await waitFor('install B leads', () => b.isLeader());
    await env.fleet.createProfile('fleet-installs', 'three');
    await waitFor('B decides', async () =>
      (await env.fleet.states('installs', 'app')).includes('fleet-installs/three:ACTIVE'),
    );
    expect({
      bReady: b.isReady(),
      bStandsByFor: b.standingByFor(),
      bStandbyGauge: await counterValue(b, 'mco_controller_standby_for_other_install'),
      // The test can read the status before B has its write's answer and counts it.
      bWrote: await waitFor('B counted its write', async () => (await writes(b)) > 0),
      holder: await holder(),
    }).toEqual({ bReady: true, bStandsByFor: undefined, bStandbyGauge: 0, bWrote: true, holder: b.identity });
    await env.fleet.deletePlacement('installs', 'app');
    await waitFor('cleaned up', async () => (await env.fleet.decisions('installs')).length === 0);
  });

  it('a leader killed mid-reconcile: the successor takes over after the lease expires and nothing is lost', async () => {
    await env.fleet.namespace('kill');
    await env.fleet.namespace('fleet-kill');
    await env.fleet.createProfile('fleet-kill', 'k1');
    await env.fleet.createProfile('fleet-kill', 'k2');
    const source = new FakeSignalSource();
    const sources = { fake: source };
    const first = start(
      testController(env.hub.controllerKubeConfig(), {
        identity: 'first',
        leaderElection,
        sources,
        defaultSignalSource: 'fake',
      }),
    );
    await waitFor('first leads', () => first.isLeader());
    const second = start(
      testController(env.hub.controllerKubeConfig(), {
        identity: 'second',
        leaderElection,
        sources,
        defaultSignalSource: 'fake',
      }),
    );
    await second.waitForSync();
    source.hold();
    await env.fleet.createPlacement('kill', 'batch', {
      clusterSelectorRules: [{ type: 'cluster-list', arguments: { clusters: 'fleet-kill/k1,fleet-kill/k2' } }],
      scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } },
    });
    await waitFor('the leader is inside observe()', () => source.waiting > 0);
    const killed = Date.now();
    await first.stop({ release: false }); // a crash: the Lease is not released
    source.release();
    await waitFor('the successor leads', () => second.isLeader(), 10_000);
    const failoverMs = Date.now() - killed;
    console.log(`[bench] failover after a crash (Lease expires): ${failoverMs} ms (lease duration 2000 ms)`);
    await waitFor('the successor decided', async () => (await env.fleet.states('kill', 'batch')).length === 2);
    expect({
      states: await env.fleet.states('kill', 'batch'),
      firstWrites: await counterValue(first, 'mco_controller_status_writes_total'),
      firstAborted: await counterValue(first, 'mco_controller_reconcile_total', { result: 'not_leader' }),
      waitedForExpiry: failoverMs >= leaderElection.leaseDurationMs - leaderElection.retryPeriodMs,
      decisions: await waitFor('decisions', async () => {
        const s = await env.fleet.decisionSummary('kill');
        return s[0]?.includes('k2') && s;
      }),
    }).toEqual({
      states: ['fleet-kill/k1:ACTIVE', 'fleet-kill/k2:ACTIVE'],
      firstWrites: 0,
      firstAborted: 1,
      waitedForExpiry: true,
      decisions: ['batch-0: fleet-kill/k1=ACTIVE,fleet-kill/k2=ACTIVE'],
    });
    await env.fleet.deletePlacement('kill', 'batch');
  });

  it('relists when the apiserver answers a watch from an expired resourceVersion with 410 Gone', async () => {
    await env.fleet.namespace('gone');
    for (let i = 0; i < 3; i++) await env.fleet.createProfile('gone', `g${i}`);
    const real = createListWatch<KubeObject>(
      kubeClientFromKubeConfig(env.hub.controllerKubeConfig()),
      CLUSTER_PROFILES,
    );
    const asked: string[] = [];
    // The first watch asks for resourceVersion 1, as after a long disconnection: long compacted away.
    const informer = new Informer<KubeObject>({
      name: 'expired',
      listWatch: {
        list: (options) => real.list(options),
        watch: (rv, timeout, onEvent, onDone) => {
          asked.push(asked.length === 0 ? '1' : rv);
          return real.watch(asked.at(-1)!, timeout, onEvent, onDone);
        },
      },
    });
    informer.start();
    try {
      await informer.waitForSync();
      const health = await waitFor('a relist after 410', () => informer.health().lists >= 2 && informer.health());
      await env.fleet.createProfile('gone', 'g3');
      await waitFor('g3 seen after the relist', () => informer.get('gone/g3') !== undefined);
      expect({
        firstWatchFrom: asked[0],
        resumedFromNewer: asked.length >= 2 && asked[1] !== '1',
        lists: health.lists,
        objects: informer
          .keys()
          .filter((k) => k.startsWith('gone/'))
          .sort(),
      }).toEqual({
        firstWatchFrom: '1',
        resumedFromNewer: true,
        lists: 2,
        objects: ['gone/g0', 'gone/g1', 'gone/g2', 'gone/g3'],
      });
    } finally {
      await informer.stop();
    }
  });

  it('the watchdog relists when a watch delivers nothing for the idle timeout', async () => {
    const informer = new Informer<KubeObject>({
      name: 'quiet',
      listWatch: createListWatch(kubeClientFromKubeConfig(env.hub.controllerKubeConfig()), PLACEMENT_DECISIONS, {
        labelSelector: 'quiet=yes',
      }),
      idleTimeoutMs: 1_000,
    });
    informer.start();
    try {
      await informer.waitForSync();
      const health = await waitFor('two relists', () => informer.health().lists >= 3 && informer.health(), 10_000);
      expect({ synced: health.synced, relistedAfterIdle: health.restarts >= 2 }).toEqual({
        synced: true,
        relistedAfterIdle: true,
      });
    } finally {
      await informer.stop();
    }
  });
});
