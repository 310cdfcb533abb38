import { expect, it } from 'vitest';
import { TRANSITION_IDS } from '@mco/core';
import type { KubeObject } from '@mco/kube-runtime';
import { createLogger, type CapacitySignalSource } from '@mco/runtime';
import { startHealthServer } from '../src/index.js';
import { FakeSignalSource, waitFor, describeWithHub } from './support.js';
import { counterValue, settled, testController, useControllerHub } from './support-controller.js';

const rde = (key: string, values: string[]) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key, operator: 'In', values } }] }],
      },
    },
  },
});

describeWithHub('controller on a real kube-apiserver (chart RBAC)', () => {
  const env = useControllerHub();
  const { start } = env;

  it('drives an autoscaling placement through every transition type, with Events, PlacementDecisions and no idle writes', async () => {
    await env.fleet.namespace('life');
    await env.fleet.namespace('fleet-life');
    for (const name of ['a', 'b', 'c']) await env.fleet.createProfile('fleet-life', name, { lifecycle: 'yes' });
    const source = new FakeSignalSource();
    const healthy = { hpa: { currentReplicas: 3 }, workloadHealthy: true };
    for (const c of ['a', 'b', 'c']) source.set(`fleet-life/${c}`, healthy);
    const controller = start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    await env.fleet.createPlacement('life', 'web', {
      ...rde('lifecycle', ['yes']),
      scaling: {
        autoscaleForCapacity: {
          minClustersBelowCapacityCeiling: 1,
          behavior: {
            scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
            unhealthyTimeoutSeconds: 2,
            evictionTimeoutSeconds: 3600,
          },
        },
      },
    });
    const step = async (what: string, change: () => Promise<void> | void, expected: string[]) => {
      await change();
      await waitFor(`${what}: ${expected.join(' ')}`, async () => {
        const states = await env.fleet.states('life', 'web');
        return JSON.stringify(states) === JSON.stringify(expected.map((e) => `fleet-life/${e}`)) && states;
      });
    };
    const a = 'fleet-life/a';
    const b = 'fleet-life/b';
    await step('P1: a new placement gets the highest-priority cluster', () => {}, ['a:ACTIVE']);
    await step('P1: a at its ceiling adds b', () => source.set(a, { ...healthy, atCapacityCeiling: true }), [
      'a:ACTIVE',
      'b:ACTIVE',
    ]);
    await step(
      'P2: b wants scale-in while a has headroom',
      () => {
        source.set(a, healthy);
        source.set(b, { ...healthy, wantsScaleIn: true });
      },
      ['a:ACTIVE', 'b:SCALING_IN'],
    );
    await step(
      'P3: a at its ceiling reactivates b',
      () => {
        source.set(a, { ...healthy, atCapacityCeiling: true });
        source.set(b, healthy);
      },
      ['a:ACTIVE', 'b:ACTIVE'],
    );
    await step(
      'P2 again',
      () => {
        source.set(a, healthy);
        source.set(b, { ...healthy, wantsScaleIn: true });
      },
      ['a:ACTIVE', 'b:SCALING_IN'],
    );
    await step(
      'R1: b scaled in to one replica',
      () => source.set(b, { hpa: { currentReplicas: 1 }, workloadHealthy: true }),
      ['a:ACTIVE'],
    );
    await step(
      'H1: a unhealthy, b added for headroom',
      () => {
        source.set(b, healthy);
        source.set(a, { ...healthy, workloadHealthy: false });
      },
      ['a:UNHEALTHY', 'b:ACTIVE'],
    );
    await step('H2: a healthy again', () => source.set(a, healthy), ['a:ACTIVE', 'b:ACTIVE']);
    await step('P2: b scaling in', () => source.set(b, { ...healthy, wantsScaleIn: true }), [
      'a:ACTIVE',
      'b:SCALING_IN',
    ]);
    await step(
      'H3 then R2 after unhealthyTimeoutSeconds',
      () => source.set(b, { ...healthy, workloadHealthy: false }),
      ['a:ACTIVE'],
    );
    await step(
      'E1: a relabelled out, b added',
      async () => {
        source.set(b, healthy);
        await env.fleet.labelProfile('fleet-life', 'a', { lifecycle: 'no' });
      },
      ['b:ACTIVE', 'a:EVICTING'],
    );
    await step('E2: a relabelled back', () => env.fleet.labelProfile('fleet-life', 'a', { lifecycle: 'yes' }), [
      'a:ACTIVE',
      'b:ACTIVE',
    ]);
    await step('P2: b scaling in', () => source.set(b, { ...healthy, wantsScaleIn: true }), [
      'a:ACTIVE',
      'b:SCALING_IN',
    ]);
    await step(
      'E3: b relabelled out while scaling in',
      () => env.fleet.labelProfile('fleet-life', 'b', { lifecycle: 'no' }),
      ['a:ACTIVE', 'b:EVICTING'],
    );
    await step('R3: b drained', () => source.set(b, { hpa: { currentReplicas: 1 } }), ['a:ACTIVE']);

    const ids = await waitFor('an Event for every transition type', async () => {
      const reasons = new Set((await env.fleet.events('life')).map((e) => e.reason?.slice(0, 2)));
      return (
        TRANSITION_IDS.every((id) => reasons.has(id)) && [...reasons].filter((r) => r && /^[PEHR]\d$/.test(r)).sort()
      );
    });
    expect(ids).toEqual([...TRANSITION_IDS].sort());
    expect(await env.fleet.decisionSummary('life')).toEqual(['web-0: fleet-life/a=ACTIVE']);
    const placement = await env.fleet.placement('life', 'web');
    expect((placement.status as { observedGeneration?: number }).observedGeneration).toBe(
      placement.metadata?.generation,
    );
    for (const id of TRANSITION_IDS) {
      expect(await counterValue(controller, 'mco_controller_transitions_total', { transition: id })).toBeGreaterThan(0);
    }

    // Signals keep being polled, but nothing changes: no write.
    await settled(controller);
    const writes = await counterValue(controller, 'mco_controller_status_writes_total');
    const polls = source.calls;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect({
      writes: await counterValue(controller, 'mco_controller_status_writes_total'),
      polled: source.calls > polls,
    }).toEqual({
      writes,
      polled: true,
    });
    await env.fleet.deletePlacement('life', 'web');
    await waitFor(
      'PlacementDecisions deleted with the placement',
      async () => (await env.fleet.decisions('life')).length === 0,
    );
  });

  it('reports clusters the signal source cannot observe, retries a broken source without touching the status', async () => {
    await env.fleet.namespace('sig');
    await env.fleet.namespace('fleet-sig');
    for (const name of ['s1', 's2']) await env.fleet.createProfile('fleet-sig', name, { sig: 'yes' });
    const source = new FakeSignalSource();
    for (const name of ['s1', 's2']) source.set(`fleet-sig/${name}`, { hpa: { currentReplicas: 2 } });
    const controller = start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    await env.fleet.createPlacement('sig', 'obs', {
      ...rde('sig', ['yes']),
      scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } },
    });
    await waitFor(
      'observed',
      async () => (await env.fleet.condition('sig', 'obs', 'SignalsObserved'))?.status === 'True',
    );
    source.fail('fleet-sig/s2', { code: 'Unauthorized', message: 'the access provider returned no credentials' });
    const failed = await waitFor('SignalsObserved=False', async () => {
      const c = (await env.fleet.condition('sig', 'obs', 'SignalsObserved')) as {
        status: string;
        reason?: string;
        message?: string;
      };
      return c?.status === 'False' && c;
    });
    expect({ reason: failed.reason, message: failed.message, states: await env.fleet.states('sig', 'obs') }).toEqual({
      reason: 'ObserveFailed',
      // The code only: the source's message stays in the log, never in a tenant's status.
      message: 'fleet-sig/s2: Unauthorized',
      states: ['fleet-sig/s1:ACTIVE', 'fleet-sig/s2:ACTIVE'],
    });
    // A source that fails as a whole: the reconcile fails and is retried; the status stays.
    const before = (await env.fleet.placement('sig', 'obs')).status;
    source.broken = new Error('prometheus is unreachable');
    await env.fleet.labelProfile('fleet-sig', 's1', { sig: 'no' });
    await waitFor(
      'a retried failure',
      async () => (await counterValue(controller, 'mco_controller_reconcile_total', { result: 'error' })) >= 2,
    );
    expect({
      status: (await env.fleet.placement('sig', 'obs')).status,
      errors: (await counterValue(controller, 'mco_controller_signal_source_errors_total', { source: 'fake' })) > 0,
    }).toEqual({ status: before, errors: true });
    source.broken = undefined;
    source.fail('fleet-sig/s2', undefined);
    await waitFor('recovered: s1 evicting, observed again', async () => {
      const states = await env.fleet.states('sig', 'obs');
      const observed = (await env.fleet.condition('sig', 'obs', 'SignalsObserved'))?.status === 'True';
      return observed && states.includes('fleet-sig/s1:EVICTING');
    });
    await env.fleet.deletePlacement('sig', 'obs');
  });

  it("re-evaluates when the engine's RequeueAfter is due, with no event and no polling", async () => {
    await env.fleet.namespace('timer');
    await env.fleet.namespace('fleet-timer');
    await env.fleet.createProfile('fleet-timer', 'h', { timer: 'yes' });
    const source = new FakeSignalSource();
    source.set('fleet-timer/h', { hpa: { currentReplicas: 2 } });
    start(
      testController(env.hub.controllerKubeConfig(), {
        sources: { fake: source },
        defaultSignalSource: 'fake',
        signalPollIntervalMs: 3_600_000,
      }),
    );
    await env.fleet.createPlacement('timer', 'cron', {
      ...rde('timer', ['yes']),
      scaling: {
        autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, behavior: { unhealthyTimeoutSeconds: 2 } },
      },
    });
    await waitFor('placed', async () => (await env.fleet.states('timer', 'cron')).length === 1);
    await env.fleet.setProfileHealthy('fleet-timer', 'h', false);
    await waitFor('H1', async () => (await env.fleet.states('timer', 'cron'))[0] === 'fleet-timer/h:UNHEALTHY');
    const unhealthyAt = Date.now();
    await waitFor(
      'R2 once unhealthyTimeoutSeconds passed',
      async () => (await env.fleet.states('timer', 'cron')).length === 0,
      10_000,
    );
    expect(Date.now() - unhealthyAt).toBeGreaterThanOrEqual(1_000);
    await env.fleet.deletePlacement('timer', 'cron');
  });

  it('a placement name over 63 characters gets PlacementDecisions with a hashed placement-key label, kept in line and deleted with it', async () => {
    await env.fleet.namespace('longname');
    await env.fleet.namespace('fleet-longname');
    const controller = start(testController(env.hub.controllerKubeConfig()));
    await env.fleet.createProfile('fleet-longname', 'x', { longname: 'yes' });
    const name = `${'inference-'.repeat(9)}server`; // 96 characters
    await env.fleet.createPlacement('longname', name, rde('longname', ['yes']));
    await waitFor('decided', async () => (await env.fleet.decisionSummary('longname')).length === 1);
    await settled(controller);
    const [decision] = await env.fleet.decisions('longname');
    const label = (decision!.metadata!.labels as Record<string, string>)['multicluster.x-k8s.io/placement-key']!;
    const errors = await counterValue(controller, 'mco_controller_reconcile_total', { result: 'error' });
    await env.fleet.deletePlacement('longname', name);
    await waitFor('decisions deleted', async () => (await env.fleet.decisions('longname')).length === 0);
    expect({
      summary: `${decision!.metadata!.name}`,
      label: { length: label.length, prefix: label.slice(0, 52) === name.slice(0, 52) },
      errors,
    }).toEqual({ summary: `${name}-0`, label: { length: 63, prefix: true }, errors: 0 });
  });

  it('follows ClusterProfiles added, relabelled and deleted, and deletes the PlacementDecisions with the placement', async () => {
    await env.fleet.namespace('inv');
    await env.fleet.namespace('fleet-inv');
    const controller = start(testController(env.hub.controllerKubeConfig()));
    await env.fleet.createProfile('fleet-inv', 'x', { tier: 'gold' });
    // A deleted profile's cluster is EVICTING for profileLossGraceSeconds before it goes (docs/placement-rules.md §10.5).
    await env.fleet.createPlacement('inv', 'api', {
      ...rde('tier', ['gold']),
      scaling: { behavior: { profileLossGraceSeconds: 1 } },
    });
    const expectDecided = async (what: string, states: string[], decisions: string[]) => {
      await waitFor(what, async () => JSON.stringify(await env.fleet.states('inv', 'api')) === JSON.stringify(states));
      await waitFor(
        `${what} (PlacementDecisions)`,
        async () => JSON.stringify(await env.fleet.decisionSummary('inv')) === JSON.stringify(decisions),
      );
    };
    await expectDecided('initial', ['fleet-inv/x:ACTIVE'], ['api-0: fleet-inv/x=ACTIVE']);
    await env.fleet.createProfile('fleet-inv', 'y', { tier: 'gold' });
    await expectDecided(
      'added',
      ['fleet-inv/x:ACTIVE', 'fleet-inv/y:ACTIVE'],
      ['api-0: fleet-inv/x=ACTIVE,fleet-inv/y=ACTIVE'],
    );
    await env.fleet.labelProfile('fleet-inv', 'x', { tier: 'silver' });
    await expectDecided('relabelled', ['fleet-inv/y:ACTIVE'], ['api-0: fleet-inv/y=ACTIVE']);
    await env.fleet.deleteProfile('fleet-inv', 'y');
    await expectDecided('deleted', [], ['api-0: ']);
    expect(await env.fleet.condition('inv', 'api', 'Satisfied')).toMatchObject({
      status: 'False',
      reason: 'NoEligibleClusters',
    });

    const [decision] = await env.fleet.decisions('inv');
    const placement = await env.fleet.placement('inv', 'api');
    expect({
      labels: decision!.metadata?.labels,
      owner: decision!.metadata?.ownerReferences,
      scheduler: decision!.schedulerName,
    }).toEqual({
      labels: { 'multicluster.x-k8s.io/placement-key': 'api', 'app.kubernetes.io/managed-by': 'mco' },
      owner: [
        {
          apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
          kind: 'MultiKubernetesClusterPlacement',
          name: 'api',
          uid: placement.metadata?.uid,
          controller: true,
        },
      ],
      scheduler: 'mco',
    });
    await env.fleet.deletePlacement('inv', 'api');
    await waitFor('PlacementDecisions deleted', async () => (await env.fleet.decisions('inv')).length === 0);
    expect(await counterValue(controller, 'mco_controller_reconcile_total', { result: 'error' })).toBe(0);
  });

  it('puts back a PlacementDecision someone else changed or deleted, and ignores ClusterProfile heartbeats', async () => {
    await env.fleet.namespace('own');
    await env.fleet.namespace('fleet-own');
    await env.fleet.createProfile('fleet-own', 'o1', { own: 'yes' });
    const controller = start(testController(env.hub.controllerKubeConfig()));
    await env.fleet.createPlacement('own', 'mine', rde('own', ['yes']));
    const want = ['mine-0: fleet-own/o1=ACTIVE'];
    await env.fleet.setProfileHealthy('fleet-own', 'o1', true);
    await waitFor(
      'decided',
      async () => JSON.stringify(await env.fleet.decisionSummary('own')) === JSON.stringify(want),
    );
    await settled(controller);
    const reconciles = await counterValue(controller, 'mco_controller_reconcile_total');
    // Heartbeats: the profile's status is rewritten, nothing the engine reads changes.
    await env.fleet.setProfileHealthy('fleet-own', 'o1', true);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // a new lastTransitionTime
    await env.fleet.setProfileHealthy('fleet-own', 'o1', true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await counterValue(controller, 'mco_controller_reconcile_total')).toBe(reconciles);

    const group = {
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'placementdecisions',
      namespace: 'own',
      name: 'mine-0',
    };
    const current = (await env.hub.custom.getNamespacedCustomObject(group)) as KubeObject;
    await env.hub.custom.replaceNamespacedCustomObject({ ...group, body: { ...current, decisions: [] } });
    await waitFor(
      'restored after an edit',
      async () => JSON.stringify(await env.fleet.decisionSummary('own')) === JSON.stringify(want),
    );
    await env.hub.custom.deleteNamespacedCustomObject(group);
    await waitFor(
      'restored after a delete',
      async () => JSON.stringify(await env.fleet.decisionSummary('own')) === JSON.stringify(want),
    );
    await env.fleet.deletePlacement('own', 'mine');
  });

  it('slices more than 100 clusters into PlacementDecisions and deletes the surplus slice when the list shrinks', async () => {
    await env.fleet.namespace('big');
    await env.fleet.namespace('fleet-big');
    const names = Array.from({ length: 105 }, (_, i) => `m${String(i).padStart(3, '0')}`);
    await Promise.all(names.map((name) => env.fleet.createProfile('fleet-big', name, { big: 'yes' })));
    start(testController(env.hub.controllerKubeConfig()));
    await env.fleet.createPlacement('big', 'wide', rde('big', ['yes']));
    const slices = async () =>
      (await env.fleet.decisions('big')).map((d) => ({
        name: d.metadata?.name,
        count: (d.decisions as unknown[]).length,
        labels: d.metadata?.labels,
      }));
    const sliced = await waitFor('two slices', async () => {
      const s = await slices();
      return s.length === 2 && s[1]!.count === 5 && s;
    });
    const key = (index: number) => ({
      'app.kubernetes.io/managed-by': 'mco',
      'multicluster.x-k8s.io/placement-key': 'wide',
      'multicluster.x-k8s.io/decision-key': 'wide',
      'multicluster.x-k8s.io/decision-index': String(index),
    });
    expect(sliced).toEqual([
      { name: 'wide-0', count: 100, labels: key(0) },
      { name: 'wide-1', count: 5, labels: key(1) },
    ]);
    for (const name of names.slice(0, 10)) await env.fleet.labelProfile('fleet-big', name, { big: 'no' });
    const shrunk = await waitFor('one slice', async () => {
      const s = await slices();
      return s.length === 1 && s[0]!.count === 95 && s;
    });
    expect(shrunk).toEqual([
      {
        name: 'wide-0',
        count: 95,
        labels: { 'app.kubernetes.io/managed-by': 'mco', 'multicluster.x-k8s.io/placement-key': 'wide' },
      },
    ]);
    await env.fleet.deletePlacement('big', 'wide');
    await waitFor('PlacementDecisions deleted', async () => (await env.fleet.decisions('big')).length === 0);
  });

  it('leaves status.clusters untouched when the spec becomes invalid, and resumes when it is fixed', async () => {
    await env.fleet.namespace('bad');
    await env.fleet.namespace('fleet-bad');
    start(testController(env.hub.controllerKubeConfig()));
    await env.fleet.createProfile('fleet-bad', 'p', { zone: 'z1' });
    await env.fleet.createPlacement('bad', 'svc', rde('zone', ['z1']));
    await waitFor('decided', async () => (await env.fleet.states('bad', 'svc')).length === 1);
    const before = (await env.fleet.placement('bad', 'svc')).status as { clusters: unknown[] };
    await env.fleet.setPlacementSpec('bad', 'svc', {
      clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '(' } }],
    });
    await waitFor('Valid=False', async () => (await env.fleet.condition('bad', 'svc', 'Valid'))?.status === 'False');
    await env.fleet.createProfile('fleet-bad', 'q', { zone: 'z1' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const invalid = (await env.fleet.placement('bad', 'svc')).status as {
      clusters: unknown[];
      conditions: { type: string; status: string; reason: string }[];
    };
    expect({
      clusters: invalid.clusters,
      conditions: invalid.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
      decisions: await env.fleet.decisionSummary('bad'),
    }).toEqual({
      clusters: before.clusters,
      conditions: ['Valid=False/InvalidRegex', 'Satisfied=Unknown/InvalidSpec'],
      decisions: ['svc-0: fleet-bad/p=ACTIVE'],
    });
    const warnings = (await env.fleet.events('bad')).filter((e) => e.type === 'Warning').map((e) => e.reason);
    expect(warnings).toContain('InvalidRegex');
    await env.fleet.setPlacementSpec('bad', 'svc', rde('zone', ['z1']));
    await waitFor('fixed', async () => (await env.fleet.states('bad', 'svc')).length === 2);
    await env.fleet.deletePlacement('bad', 'svc');
  });

  it('without a signal source decides autoscaling placements with no signals: placed up to the minimum, Satisfied=Unknown names the source', async () => {
    await env.fleet.namespace('nosrc');
    await env.fleet.namespace('fleet-nosrc');
    for (const name of ['m', 'n', 'o']) await env.fleet.createProfile('fleet-nosrc', name, { nosrc: 'yes' });
    const autoscale = { minClustersBelowCapacityCeiling: 2 };
    await env.fleet.createPlacement('nosrc', 'plain', rde('nosrc', ['yes']));
    await env.fleet.createPlacement('nosrc', 'auto', {
      ...rde('nosrc', ['yes']),
      scaling: { autoscaleForCapacity: autoscale },
    });
    await env.fleet.createPlacement('nosrc', 'named', {
      ...rde('nosrc', ['yes']),
      scaling: { autoscaleForCapacity: { ...autoscale, signalSource: 'prometheus' } },
    });
    await env.fleet.createPlacement('nosrc', 'wide', {
      ...rde('nosrc', ['yes']),
      scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } },
    });
    // Running on more clusters than its minimum: missing data never removes one.
    const wide = await env.fleet.placement('nosrc', 'wide');
    const listed = ['m', 'n', 'o'].map((name) => ({
      name,
      namespace: 'fleet-nosrc',
      state: 'ACTIVE',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    }));
    await env.hub.custom.replaceNamespacedCustomObjectStatus({
      group: 'orchestra.multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'multikubernetesclusterplacements',
      namespace: 'nosrc',
      name: 'wide',
      body: { ...wide, status: { clusters: listed } },
    });
    const controller = start(testController(env.hub.controllerKubeConfig()));
    const satisfied = async (name: string) => {
      const c = await waitFor(`${name} decided`, async () => {
        const c = await env.fleet.condition('nosrc', name, 'Satisfied');
        return c?.reason !== undefined && c;
      });
      return `${c.status}/${c.reason}: ${c.message}`;
    };
    const placed = 'placed on 2 ACTIVE cluster(s), up to minClustersBelowCapacityCeiling; it cannot scale out or in: ';
    expect({
      plain: await satisfied('plain'),
      auto: await satisfied('auto'),
      autoStates: await env.fleet.states('nosrc', 'auto'),
      named: await satisfied('named'),
      namedStates: await env.fleet.states('nosrc', 'named'),
      wideStates: await env.fleet.states('nosrc', 'wide'),
      valid: (await env.fleet.condition('nosrc', 'auto', 'Valid'))?.status,
      decisions: await env.fleet.decisionSummary('nosrc'),
    }).toEqual({
      plain: 'True/AllEligibleClustersPlaced: 3 cluster(s) listed',
      auto: `Unknown/NoSignalSource: ${placed}no capacity-signal source is configured (see --signal-sources)`,
      autoStates: ['fleet-nosrc/m:ACTIVE', 'fleet-nosrc/n:ACTIVE'],
      named: `Unknown/UnknownSignalSource: ${placed}capacity-signal source "prometheus" is not configured (usable here: none)`,
      namedStates: ['fleet-nosrc/m:ACTIVE', 'fleet-nosrc/n:ACTIVE'],
      wideStates: ['fleet-nosrc/m:ACTIVE', 'fleet-nosrc/n:ACTIVE', 'fleet-nosrc/o:ACTIVE'],
      valid: 'True',
      decisions: expect.arrayContaining(['auto-0: fleet-nosrc/m=ACTIVE,fleet-nosrc/n=ACTIVE']),
    });
    // Deciding again changes nothing: one status write per placement.
    await settled(controller);
    expect(await counterValue(controller, 'mco_controller_status_writes_total')).toBe(4);
    for (const name of ['plain', 'auto', 'named', 'wide']) await env.fleet.deletePlacement('nosrc', name);
  });

  it('a flapping source (errors finishing in random order) over many resyncs: zero status writes after the first', async () => {
    await env.fleet.namespace('flap');
    await env.fleet.namespace('fleet-flap');
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    for (const name of names) await env.fleet.createProfile('fleet-flap', name, { flap: 'yes' });
    // Every listed cluster fails, reported in the order concurrent observations finish: a new order each time.
    let observations = 0;
    const source: CapacitySignalSource = {
      async observe(request) {
        observations++;
        const errors = request.clusters.map((c) => ({
          cluster: c.key,
          code: 'Unavailable' as const,
          message: `cannot reach ${c.key}`,
        }));
        for (let i = errors.length - 1; i > 0; i--) {
          const j = Math.floor(Math.random() * (i + 1));
          [errors[i], errors[j]] = [errors[j]!, errors[i]!];
        }
        return { signals: [], errors };
      },
    };
    await env.fleet.createPlacement('flap', 'svc', {
      ...rde('flap', ['yes']),
      // More clusters than the message shows (5), so a random order would change the message.
      scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 7 } },
    });
    const warnings: { msg: string; placement?: string }[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => void warnings.push(JSON.parse(line)) });
    const controller = start(
      testController(env.hub.controllerKubeConfig(), {
        sources: { flap: source },
        defaultSignalSource: 'flap',
        logger,
      }),
    );
    const first = await waitFor('placed and observed', async () => {
      const c = await env.fleet.condition('flap', 'svc', 'SignalsObserved');
      return (await env.fleet.states('flap', 'svc')).length === 7 && c?.status === 'False' && c;
    });
    const writesAfterFirst = await counterValue(controller, 'mco_controller_status_writes_total');
    const observedBefore = observations;
    // At least 30 more evaluations (the poll interval is 300 ms), each with a fresh random order.
    await waitFor('30 more evaluations', async () => observations >= observedBefore + 30, 60_000);
    expect({
      writes: (await counterValue(controller, 'mco_controller_status_writes_total')) - writesAfterFirst,
      message: (await env.fleet.condition('flap', 'svc', 'SignalsObserved'))?.message,
    }).toEqual({
      writes: 0,
      message:
        'fleet-flap/a: Unavailable; fleet-flap/b: Unavailable; fleet-flap/c: Unavailable; ' +
        'fleet-flap/d: Unavailable; fleet-flap/e: Unavailable; and 2 more',
    });
    expect(first.message).toMatch(/^fleet-flap\/a: /);
    // The same failure on every evaluation is logged once per interval (10 min by default) per placement.
    expect(warnings.filter((w) => w.placement === 'flap/svc').map((w) => w.msg)).toEqual([
      'the signal source could not observe some clusters; their signals are missing',
    ]);
    await env.fleet.deletePlacement('flap', 'svc');
  });

  it('restarted over decided placements, writes nothing', async () => {
    await env.fleet.namespace('calm');
    await env.fleet.namespace('fleet-calm');
    for (const name of ['r', 's', 't']) await env.fleet.createProfile('fleet-calm', name, { calm: 'yes' });
    const source = new FakeSignalSource();
    for (const c of ['r', 's', 't']) source.set(`fleet-calm/${c}`, { hpa: { currentReplicas: 2 } });
    for (let i = 0; i < 5; i++) {
      await env.fleet.createPlacement('calm', `p${i}`, {
        ...rde('calm', ['yes']),
        ...(i % 2 ? { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } } } : {}),
      });
    }
    const first = start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    await waitFor('all decided', async () => {
      for (let i = 0; i < 5; i++) if ((await env.fleet.states('calm', `p${i}`)).length < 2) return false;
      return (await env.fleet.decisions('calm')).length === 5;
    });
    await settled(first);
    await first.stop();
    const eventsBefore = (await env.fleet.events('calm')).length;
    const second = start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );
    await second.waitForSync();
    await waitFor(
      'every placement reconciled',
      async () => (await counterValue(second, 'mco_controller_reconcile_total')) >= 5,
    );
    await settled(second);
    expect({
      status: await counterValue(second, 'mco_controller_status_writes_total'),
      decisions: await counterValue(second, 'mco_controller_placement_decision_writes_total'),
      events: (await env.fleet.events('calm')).length - eventsBefore,
    }).toEqual({ status: 0, decisions: 0, events: 0 });
    for (let i = 0; i < 5; i++) await env.fleet.deletePlacement('calm', `p${i}`);
  });

  it('a writer with a stale copy (a deposed leader) gets 409 and never overwrites; once caught up nothing is lost', async () => {
    await env.fleet.namespace('stale');
    await env.fleet.namespace('fleet-stale');
    await env.fleet.createProfile('fleet-stale', 'u', { stale: 'yes' });
    await env.fleet.createPlacement('stale', 'job', rde('stale', ['yes']));
    const controller = start(testController(env.hub.controllerKubeConfig()));
    await waitFor('decided', async () => (await env.fleet.states('stale', 'job')).length === 1);
    await settled(controller);
    // Its view of placements freezes (a paused or partitioned leader) ...
    await controller.informers.placements.stop();
    // ... while someone else (the new leader) writes the status.
    const current = await env.fleet.placement('stale', 'job');
    const foreign = { ...(current.status as object), lastAdditionTime: '2030-01-01T00:00:00Z' };
    await env.hub.custom.replaceNamespacedCustomObjectStatus({
      group: 'orchestra.multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'multikubernetesclusterplacements',
      namespace: 'stale',
      name: 'job',
      body: { ...current, status: foreign },
    });
    // A fleet change makes the stale writer try to write.
    await env.fleet.createProfile('fleet-stale', 'v', { stale: 'yes' });
    await waitFor(
      'a 409 on the stale write',
      async () => (await counterValue(controller, 'mco_controller_status_writes_total', { result: 'conflict' })) > 0,
    );
    expect(((await env.fleet.placement('stale', 'job')).status as { lastAdditionTime: string }).lastAdditionTime).toBe(
      '2030-01-01T00:00:00Z',
    );
    // Caught up again, it converges: v is added, the foreign write was the base.
    controller.informers.placements.start();
    await waitFor('converged', async () => (await env.fleet.states('stale', 'job')).length === 2);
    await env.fleet.deletePlacement('stale', 'job');
  });

  it('serves /readyz only after the caches synced, /healthz and Prometheus /metrics', async () => {
    const controller = testController(env.hub.controllerKubeConfig());
    const server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      registry: controller.metrics.registry,
      isHealthy: () => true,
      isReady: () => controller.isReady(),
    });
    try {
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
        return { status: res.status, body: await res.text() };
      };
      const before = await get('/readyz');
      start(controller);
      await controller.waitForSync();
      const metrics = await get('/metrics');
      expect({
        before: before.status,
        after: (await get('/readyz')).status,
        healthz: (await get('/healthz')).status,
        post: (await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST', body: 'x' })).status,
        unknown: (await get('/nope')).status,
      }).toEqual({ before: 503, after: 200, healthz: 200, post: 405, unknown: 404 });
      for (const line of [
        'mco_controller_informer_synced{informer="placements"} 1',
        'mco_controller_informer_synced{informer="clusterprofiles"} 1',
        'mco_controller_informer_synced{informer="placementdecisions"} 1',
        // The operator's confirmation, read with the chart's Role limited to that one ConfigMap.
        'mco_controller_informer_synced{informer="inventory-loss-confirmation"} 1',
        'mco_controller_is_leader 1',
        'mco_controller_queue_depth',
        '# TYPE mco_controller_reconcile_duration_seconds histogram',
        '# TYPE mco_controller_transitions_total counter',
      ]) {
        expect(metrics.body).toContain(line);
      }
    } finally {
      await server.close();
    }
  });
});
