import { expect, it } from 'vitest';
import { waitFor, describeWithHub, FakeSignalSource } from './support.js';
import { testController, useControllerHub } from './support-controller.js';

// Fail-back (docs/placement-rules.md §10.3) run by the controller unchanged, on a
// real kube-apiserver: a stockout moves the workload to the fallback cluster,
// and once the preferred cluster has had room for the window the fallback is
// drained step by step and removed.

interface ListedCluster {
  namespace: string;
  name: string;
  state: string;
  reason?: string;
  message?: string;
  belowCeilingSince?: string;
  desiredMinReplicas?: number;
  draining?: { desiredMaxReplicas?: number; lastReplicaCountDecrease?: string };
}

const WINDOW = 3;

/** Clusters labelled failback=yes, min 1, with the given draining and behavior. */
const placementSpec = (useDraining: boolean, behavior: object) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [
          { matchExpressions: [{ labelSelector: { key: 'failback', operator: 'In', values: ['yes'] } }] },
        ],
      },
    },
  },
  scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining, behavior } },
});

describeWithHub('controller: fail-back to the preferred cluster (real kube-apiserver)', () => {
  const env = useControllerHub();

  it('adds the fallback on a stockout signal, fails back after the window, drains it step by step and removes it', async () => {
    await env.fleet.namespace('fb');
    await env.fleet.namespace('fleet-fb');
    // fleet-fb/a is preferred over fleet-fb/b (namespace/name order).
    for (const name of ['a', 'b']) await env.fleet.createProfile('fleet-fb', name, { failback: 'yes' });
    const a = 'fleet-fb/a';
    const b = 'fleet-fb/b';
    // Room for b's 8 replicas (10 − 2), every field the room rule reads, and ready replicas for the drain.
    const room = {
      hpa: { currentReplicas: 2, desiredReplicas: 2, maxReplicas: 10 },
      pendingPods: 0,
      failedScaleUp: false,
      readyReplicas: 2,
      workloadHealthy: true,
    };
    const source = new FakeSignalSource();
    source.set(a, room);
    env.start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    await env.fleet.createPlacement(
      'fb',
      'gpu',
      placementSpec(true, {
        scaleIn: { stabilizationWindowSeconds: 3600, cooldownSeconds: 1 },
        // b lingers warm for 1 s once drained (docs/placement-rules.md §10.3 rule F3).
        failBack: { enabled: true, stabilizationWindowSeconds: WINDOW, lingerSeconds: 1 },
        drain: { stepIntervalSeconds: 1, stepPercent: 25 },
      }),
    );
    const clusters = async () =>
      ((await env.fleet.placement('fb', 'gpu')).status as { clusters?: ListedCluster[] } | undefined)?.clusters ?? [];
    const statesAre = (...expected: string[]) =>
      waitFor(expected.join(' '), async () => {
        const states = await env.fleet.states('fb', 'gpu');
        return JSON.stringify(states) === JSON.stringify(expected) && states;
      });

    await statesAre(`${a}:ACTIVE`);
    await waitFor('a below its ceiling is recorded', async () => (await clusters())[0]?.belowCeilingSince);
    // a serves the whole load first (10 ready): fail-back's room is room it has seen serve (rule F2).
    source.set(a, { ...room, hpa: { currentReplicas: 10, desiredReplicas: 10, maxReplicas: 12 }, readyReplicas: 10 });
    await waitFor('a seen running 10 ready', async () => {
      const status = (await env.fleet.placement('fb', 'gpu')).status as
        { failBack?: { provenReplicas?: { cluster: string; replicas: number }[] } } | undefined;
      return status?.failBack?.provenReplicas?.some((p) => p.cluster === a && p.replicas === 10);
    });

    // Stockout: pods pending and the cluster-autoscaler's FailedScaleUp. The fallback takes the load.
    source.set(a, { ...room, pendingPods: 3, failedScaleUp: true });
    source.set(b, { hpa: { currentReplicas: 8, maxReplicas: 10 }, readyReplicas: 8, workloadHealthy: true });
    await statesAre(`${a}:ACTIVE`, `${b}:ACTIVE`);
    expect((await clusters())[0]).not.toHaveProperty('belowCeilingSince');

    // a's delivery applies the floor (desiredMinReplicas) the status asks of it, and its HPA and pods follow.
    let aReady = room.readyReplicas;
    const followFloor = (listed: ListedCluster[]) => {
      const floor = listed[0]?.desiredMinReplicas;
      if (floor === undefined || floor <= aReady) return;
      aReady = floor;
      source.set(a, {
        ...room,
        hpa: { currentReplicas: floor, desiredReplicas: floor, maxReplicas: 10 },
        readyReplicas: floor,
      });
    };

    // Recovery: a has room again. Nothing moves before the window has passed; then a is asked for
    // b's first step (rule F7) and b moves once a runs it.
    source.set(a, room);
    const since = await waitFor('a below its ceiling again', async () => (await clusters())[0]?.belowCeilingSince);
    const failedBack = await waitFor(
      'fail-back of b',
      async () => {
        const listed = await clusters();
        followFloor(listed);
        return listed[1]?.state === 'SCALING_IN' && listed;
      },
      30_000,
    );
    const p2 = failedBack[1]!;
    expect({ reason: p2.reason, message: p2.message, desiredMaxReplicas: p2.draining?.desiredMaxReplicas }).toEqual({
      reason: 'FailBack',
      message: `fail-back: higher-priority ${a} below capacity ceiling for ${WINDOW}s or more, and 2 more replica(s) ready for the first step of 2 (rule F7); headroom stays 1 >= min 1 without this lowest-priority cluster`,
      desiredMaxReplicas: 8,
    });
    // The status keeps whole seconds: the window ran from `since` (kept in status) to the fail-back.
    const lastDecrease = Date.parse(p2.draining!.lastReplicaCountDecrease!);
    expect(lastDecrease - Date.parse(since)).toBeGreaterThanOrEqual(WINDOW * 1000);
    expect(failedBack[0]).toMatchObject({ state: 'ACTIVE', belowCeilingSince: since });

    // Draining steps b down, one step of max(1, ceil(25%)) per 1 s interval: 8 -> 6 -> 4 -> 3,
    // each once a has the replicas ready (rule F6): a's delivery applies the floor the
    // status asks of it, and its HPA and pods follow.
    const seen = [8];
    await waitFor(
      'three drain steps',
      async () => {
        const listed = await clusters();
        followFloor(listed);
        const desired = listed[1]?.draining?.desiredMaxReplicas;
        if (desired !== undefined && desired !== seen.at(-1)) seen.push(desired);
        return desired !== undefined && desired <= 3;
      },
      30_000,
    );
    // Each value on the schedule, in order (a slow poll may miss a step, never reorder or invent one).
    const schedule = [8, 6, 4, 3, 2, 1];
    expect(seen.map((v) => schedule.indexOf(v))).toEqual(
      seen.map((v) => schedule.indexOf(v)).filter((i, k, all) => i >= 0 && (k === 0 || i > all[k - 1]!)),
    );

    // The drainer brought b down to one replica: after lingering it is removed (R1); the workload is back on a.
    source.set(b, { hpa: { currentReplicas: 1, maxReplicas: 1 }, workloadHealthy: true });
    await waitFor(`${a}:ACTIVE alone`, async () => {
      const listed = await clusters();
      followFloor(listed);
      return listed.length === 1 && listed[0]?.state === 'ACTIVE';
    });
    const reasons = await waitFor('the P2 and R1 Events', async () => {
      const events = (await env.fleet.events('fb')).map((e) => `${e.reason}`).filter((r) => /^(P2|R1)/.test(r));
      return events.length >= 2 && events.sort();
    });
    expect(reasons.map((r) => r.slice(0, 2))).toEqual(['P2', 'R1']);
  });

  it('rejects fail-back without useDraining (Valid=False InvalidBehavior) and leaves the listed clusters as they are', async () => {
    await env.fleet.namespace('fb-invalid');
    await env.fleet.namespace('fleet-fb-invalid');
    for (const name of ['a', 'b']) await env.fleet.createProfile('fleet-fb-invalid', name, { failback: 'yes' });
    const source = new FakeSignalSource();
    const room = { hpa: { currentReplicas: 4, maxReplicas: 10 }, workloadHealthy: true };
    source.set('fleet-fb-invalid/a', { ...room, atCapacityCeiling: true });
    source.set('fleet-fb-invalid/b', room);
    env.start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    const spec = (useDraining: boolean) =>
      placementSpec(useDraining, {
        scaleIn: { cooldownSeconds: 0 },
        failBack: { enabled: true, stabilizationWindowSeconds: 1 },
      });
    await env.fleet.createPlacement('fb-invalid', 'gpu', spec(true));
    const both = ['fleet-fb-invalid/a:ACTIVE', 'fleet-fb-invalid/b:ACTIVE'];
    await waitFor('a at its ceiling adds b', async () => {
      const states = await env.fleet.states('fb-invalid', 'gpu');
      return JSON.stringify(states) === JSON.stringify(both);
    });
    // Turn draining off but keep fail-back on: the spec is invalid, and a having room changes nothing.
    // A replace races the controller's status writes (409 Conflict): retried until it lands.
    await waitFor('the spec replaced', async () => {
      await env.fleet.setPlacementSpec('fb-invalid', 'gpu', spec(false));
      return true;
    });
    const valid = await waitFor('Valid=False', async () => {
      const c = (await env.fleet.condition('fb-invalid', 'gpu', 'Valid')) as
        { status: string; reason?: string; message?: string } | undefined;
      return c?.status === 'False' && c;
    });
    expect({ reason: valid.reason, message: valid.message }).toEqual({
      reason: 'InvalidBehavior',
      message: expect.stringMatching(
        /^spec\.scaling\.autoscaleForCapacity\.behavior\.failBack\.enabled: fail-back needs useDraining: true/,
      ),
    });
    source.set('fleet-fb-invalid/a', room);
    // A change that does not happen has no condition to wait on: give it the 1 s window twice over
    // (signals are polled every 300 ms), then the clusters must still be where they were.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await env.fleet.states('fb-invalid', 'gpu')).toEqual(both);
  });
});
