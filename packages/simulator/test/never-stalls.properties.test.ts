import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseScenario, simulate, type PolicyName, type ScenarioInput } from '../src/index.js';

// Issue 41, "decisions that never stall": random fleets, signal sources
// (complete, without readyReplicas, verdicts only, the autoscaler's metrics), HPA minimums, draining on
// or off and stockouts, outages and flaky signals, under load that rises and
// then falls to almost nothing for the last 4.5 hours. Whatever the mix, no
// scale-in is held for ever, and with fail-back on a source that reports HPA
// figures ends on the clusters the load needs. Found this way: a SCALING_IN
// cluster without draining at an HPA minimum of 2 or more was held to the end
// (rule R1), a countless one was removed while its load had come back, and
// rule M1 refused sources without readyReplicas (docs/placement-rules.md §3, §10.10).

// 'autoscaler metrics' reads failed scale-ups only, never a size limit, as the Prometheus source does;
// 'prometheus' also lacks readyReplicas, as that source does where kube-state-metrics' deployment series are not kept.
const SOURCES = [
  'complete',
  'no readyReplicas',
  'undeclared',
  'verdicts only',
  'autoscaler metrics',
  'prometheus',
] as const;

const params = fc.record({
  clusters: fc.integer({ min: 2, max: 4 }),
  regions: fc.array(fc.constantFrom('r1', 'r2', 'r3'), { minLength: 4, maxLength: 4 }),
  maxNodes: fc.array(fc.constantFrom(6, 12, 24), { minLength: 4, maxLength: 4 }),
  source: fc.constantFrom(...SOURCES),
  hpaMin: fc.integer({ min: 1, max: 3 }),
  minClusters: fc.constantFrom(1, 1, 2),
  useDraining: fc.boolean(),
  peak: fc.integer({ min: 40, max: 180 }),
  events: fc.array(
    fc.record({
      type: fc.constantFrom('stockout', 'outage', 'signalNoise'),
      at: fc.integer({ min: 0, max: 3 * 3600 }),
      length: fc.integer({ min: 600, max: 3600 }),
      cluster: fc.integer({ min: 0, max: 3 }),
    }),
    { maxLength: 3 },
  ),
  seed: fc.integer({ min: 1, max: 1000 }),
});

type Params = typeof params extends fc.Arbitrary<infer T> ? T : never;

function signalsOf(source: (typeof SOURCES)[number]) {
  return {
    complete: {},
    'no readyReplicas': { omitReadyReplicas: true },
    undeclared: { omitReadyReplicas: true, declareOmission: false },
    'verdicts only': { verdictsOnly: true },
    'autoscaler metrics': { autoscalerMetrics: true },
    prometheus: { autoscalerMetrics: true, omitReadyReplicas: true },
  }[source];
}

// Up to the peak in half an hour, held until 3 h, then down to 5 requests/s by `quietFrom`.
function stepDemand(peak: number, quietFrom: number) {
  return {
    piecewise: [
      { at: 0, value: 20 },
      { at: 1800, value: peak },
      { at: 3 * 3600, value: peak },
      { at: quietFrom, value: 5 },
    ],
    noise: { stddev: 0.05, correlation: 0.9 },
  };
}

/** Runs the policies on the scenario; `end` is when it ends, in ms. */
function run(input: ScenarioInput, policies: PolicyName[]) {
  const parsed = parseScenario(input);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
  return {
    result: simulate(parsed.value, { policies }),
    end: Date.parse(parsed.value.start) + parsed.value.duration * 1000,
  };
}

// Clusters named `names`, dearer in their order, with their own node pool sizes.
function fleetOf(names: string[], regions: string[], nodePool: (i: number) => object) {
  return {
    nodePool: { podsPerNode: 1, minNodes: 0, maxNodes: 24, scaleUpDelay: '4m', scaleDownDelay: '10m' },
    clusters: names.map((name, i) => ({
      name,
      region: regions[i]!,
      labels: { accelerator: 'gpu' },
      gpuHourCost: 0.7 + i * 0.05,
      nodePool: nodePool(i),
    })),
  };
}

// Every cluster is eligible; the cheapest is preferred.
const AFFINITY = {
  clusterAffinity: {
    requiredDuringSchedulingRequiredDuringExecution: {
      clusterSelectorTerms: [
        { matchExpressions: [{ labelSelector: { key: 'accelerator', operator: 'In', values: ['gpu'] } }] },
      ],
    },
    preferredDuringSchedulingIgnoredDuringExecution: [
      { weight: 100, propertySorter: { name: 'gpu-hour-cost', sortOrder: 'Ascending' } },
    ],
  },
};

/** A placement of the workload `name`, with the given `autoscaleForCapacity` fields. */
function placementOf<A extends object>(name: string, autoscale: A) {
  return {
    apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
    kind: 'MultiKubernetesClusterPlacement',
    metadata: { name, namespace: 'default' },
    spec: {
      affinity: AFFINITY,
      scaling: {
        autoscaleForCapacity: {
          ...autoscale,
          workloadDetails: { namespace: 'ml', deploymentName: name, hpaName: name },
        },
      },
    },
  };
}

function scenarioOf(p: Params): ScenarioInput {
  const names = Array.from({ length: p.clusters }, (_, i) => `c${i}`);
  return {
    name: 'never-stalls',
    seed: p.seed,
    duration: '8h',
    tick: '30s',
    workload: {
      capacityPerReplica: 10,
      podStartup: '2m',
      deployDelay: '1m',
      removeDelay: '1m',
      hpa: { minReplicas: p.hpaMin, maxReplicas: 16, targetUtilization: 70, scaleDownStabilization: '5m' },
    },
    fleet: fleetOf(names, p.regions, (i) => ({ maxNodes: p.maxNodes[i]! })),
    signals: signalsOf(p.source),
    placement: placementOf('w', { minClustersBelowCapacityCeiling: p.minClusters, useDraining: p.useDraining }),
    demand: stepDemand(p.peak, 3.5 * 3600),
    events: p.events.map((e) => {
      const base = { at: e.at, until: e.at + e.length, cluster: names[e.cluster % p.clusters]! };
      return e.type === 'signalNoise'
        ? { ...base, type: e.type, dropout: 0.3, unhealthy: 0 }
        : { ...base, type: e.type };
    }),
  } as ScenarioInput;
}

describe('random fleets, signal sources and events (issue 41: decisions that never stall)', () => {
  it('no scale-in is held for ever, and with fail-back a source with HPA figures ends on the clusters the load needs', () => {
    fc.assert(
      fc.property(params, (p) => {
        const { result, end } = run(scenarioOf(p), ['mco', 'mco-fail-back']);
        for (const policyRun of result.runs) {
          // evictionTimeoutSeconds (1800) bounds a scale-in that cannot show one replica; a drain adds minutes.
          const held = (policyRun.status.clusters ?? []).filter(
            (c) => c.state === 'SCALING_IN' && end - Date.parse(c.lastTransitionTime) > 2400 * 1000,
          );
          expect(held.map((c) => `${policyRun.policy}: ${c.name} SCALING_IN since ${c.lastTransitionTime}`)).toEqual(
            [],
          );
        }
        const failBack = result.runs.find((r) => r.policy === 'mco-fail-back')!;
        if (p.source !== 'verdicts only') {
          const last = failBack.samples.at(-1)!;
          const deployed = last.clusters.filter((c) => c.deployed).length;
          expect(deployed).toBeLessThanOrEqual(Math.max(p.minClusters, last.clustersNeeded));
        }
      }),
      { numRuns: 16, seed: 41 },
    );
  }, 300_000); // 16 eight-hour runs of two policies: about 8 s idle, 50 s beside a full test run
});

// The same question with what the first property holds fixed: each
// placement's own behavior (windows, drain clock, timeouts, staleness),
// fail-back, warm standbys and spread, two workloads sharing node pools,
// eligibility lost for a while or for good, control-plane health and a
// capacity source.
// Every run ends after four hours of almost no load: by then every listed
// cluster but a warm standby is ACTIVE, or on its way out within its bound.

const pickOne = <T>(...values: T[]) => fc.constantFrom(...values);

const workloadParams = fc.record({
  hpaMin: fc.integer({ min: 1, max: 3 }),
  hpaMax: pickOne(6, 16, 24),
  target: pickOne(60, 70, 80),
  peak: fc.integer({ min: 30, max: 180 }),
});

const wideParams = fc.record({
  clusters: fc.integer({ min: 2, max: 5 }),
  regions: fc.array(pickOne('r1', 'r2', 'r3'), { minLength: 5, maxLength: 5 }),
  maxNodes: fc.array(pickOne(4, 8, 12, 24), { minLength: 5, maxLength: 5 }),
  podsPerNode: fc.array(pickOne(1, 2, 4), { minLength: 5, maxLength: 5 }),
  source: fc.constantFrom(...SOURCES),
  workloads: fc.array(workloadParams, { minLength: 1, maxLength: 2 }),
  minClusters: fc.integer({ min: 1, max: 3 }),
  useDraining: fc.boolean(),
  failBack: fc.boolean(),
  warmStandby: fc.boolean(),
  spread: fc.boolean(),
  scaleIn: fc.option(fc.record({ stabilizationWindowSeconds: pickOne(0, 60, 900), cooldownSeconds: pickOne(0, 600) })),
  drain: fc.option(fc.record({ stepIntervalSeconds: pickOne(30, 120, 600), stepPercent: pickOne(10, 50, 100) })),
  evictionTimeoutSeconds: fc.option(pickOne(300, 1800)),
  unhealthyTimeoutSeconds: fc.option(pickOne(120, 900)),
  signalStaleAfterSeconds: fc.option(pickOne(60, 600)),
  events: fc.array(
    fc.record({
      type: pickOne('stockout', 'outage', 'signalNoise', 'controlPlaneHealthy', 'labels'),
      at: fc.integer({ min: 0, max: 3 * 3600 }),
      length: fc.integer({ min: 300, max: 3600 }),
      cluster: fc.integer({ min: 0, max: 4 }),
      status: pickOne('False', 'Unknown'),
      // A label removed for good: the cluster must leave by rule R3 (its count or its timeout).
      restore: fc.boolean(),
    }),
    { maxLength: 4 },
  ),
  capacitySource: fc.option(fc.record({ dropout: pickOne(0, 0.2), unknown: pickOne(0, 0.2), wrong: pickOne(0, 0.05) })),
  seed: fc.integer({ min: 1, max: 1000 }),
});

type WideParams = typeof wideParams extends fc.Arbitrary<infer T> ? T : never;

function wideScenarioOf(p: WideParams): ScenarioInput {
  const names = Array.from({ length: p.clusters }, (_, i) => `c${i}`);
  const minClusters = Math.min(p.minClusters, p.clusters);
  const behavior = {
    ...(p.scaleIn ? { scaleIn: p.scaleIn } : {}),
    ...(p.drain ? { drain: p.drain } : {}),
    ...(p.useDraining && p.failBack ? { failBack: { enabled: true } } : {}),
    ...(p.evictionTimeoutSeconds ? { evictionTimeoutSeconds: p.evictionTimeoutSeconds } : {}),
    ...(p.unhealthyTimeoutSeconds ? { unhealthyTimeoutSeconds: p.unhealthyTimeoutSeconds } : {}),
    ...(p.signalStaleAfterSeconds ? { signalStaleAfterSeconds: p.signalStaleAfterSeconds } : {}),
  };
  const placement = (name: string) =>
    placementOf(name, {
      minClustersBelowCapacityCeiling: minClusters,
      useDraining: p.useDraining,
      behavior,
      ...(p.useDraining && p.warmStandby ? { warmStandbyClusters: 1 } : {}),
      ...(p.spread && minClusters >= 2 ? { spread: { minGroups: 2 } } : {}),
    });
  const events = p.events.flatMap((e): object[] => {
    const cluster = names[e.cluster % p.clusters]!;
    const window = { at: e.at, until: e.at + e.length, cluster };
    if (e.type === 'signalNoise') return [{ ...window, type: e.type, dropout: 0.3, unhealthy: 0.05 }];
    if (e.type === 'controlPlaneHealthy') return [{ ...window, type: e.type, status: e.status }];
    if (e.type !== 'labels') return [{ ...window, type: e.type }];
    const lost = { type: e.type, at: e.at, cluster, labels: { accelerator: null } };
    return e.restore ? [lost, { type: e.type, at: e.at + e.length, cluster, labels: { accelerator: 'gpu' } }] : [lost];
  });
  return {
    name: 'never-stalls-wide',
    seed: p.seed,
    duration: '8h',
    tick: '30s',
    fleet: fleetOf(names, p.regions, (i) => ({ maxNodes: p.maxNodes[i]!, podsPerNode: p.podsPerNode[i]! })),
    signals: signalsOf(p.source),
    placements: p.workloads.map((w, i) => ({
      placement: placement(`w${i}`),
      workload: {
        capacityPerReplica: 10,
        podStartup: '2m',
        deployDelay: '1m',
        removeDelay: '1m',
        hpa: {
          minReplicas: w.hpaMin,
          maxReplicas: w.hpaMax,
          targetUtilization: w.target,
          scaleDownStabilization: '5m',
        },
      },
      demand: stepDemand(w.peak, 4 * 3600),
    })),
    events,
    ...(p.capacitySource ? { capacitySource: p.capacitySource } : {}),
  } as ScenarioInput;
}

/** After four quiet hours every listed cluster but a warm standby is ACTIVE, or leaving within its bound. */
function expectEndsSettled(p: WideParams): void {
  const capacity: PolicyName[] = p.capacitySource ? ['mco-capacity'] : [];
  const { result, end } = run(wideScenarioOf(p), ['mco', 'mco-fail-back', ...capacity]);
  for (const policyRun of result.runs) {
    for (const placement of policyRun.placements) {
      // The longest bound: evictionTimeoutSeconds (at most 1800 here) and a drain's last steps;
      // a cluster fail-back drained lingers for lingerSeconds (3600) on top.
      const held = (placement.status.clusters ?? []).filter(
        (c) =>
          c.state !== 'ACTIVE' &&
          c.reason !== 'WarmStandby' &&
          end - Date.parse(c.lastTransitionTime) > (c.reason === 'Lingering' ? 6000 : 2400) * 1000,
      );
      expect(
        held.map((c) => `${policyRun.policy}: ${c.name} ${c.state} (${c.reason}) since ${c.lastTransitionTime}`),
      ).toEqual([]);
    }
  }
}

describe('random placements, behaviors, workloads and events (issue 41: decisions that never stall)', () => {
  it('after four quiet hours every listed cluster but a warm standby is ACTIVE or leaving within its bound', () => {
    fc.assert(fc.property(wideParams, expectEndsSettled), { numRuns: 12, seed: 4141 });
  }, 300_000);

  // Found by this property over more runs: two workloads whose HPA minimums (2 + 3, 3 + 3) overfill node
  // pools of 4. A receiver's pod that no node takes (its floor, or the HPA, which counts a pending pod
  // as busy, holding at its current scale) made rule D1 wait for ever on a drain of the third cluster.
  it.each([
    [2, 3],
    [3, 3],
  ])('drains end when HPA minimums of %i and %i overfill the shared node pools', (min0, min1) => {
    expectEndsSettled({
      clusters: 3,
      regions: ['r1', 'r1', 'r1', 'r1', 'r1'],
      maxNodes: [4, 4, 4, 4, 4],
      podsPerNode: [1, 1, 1, 1, 1],
      source: 'complete',
      workloads: [min0, min1].map((hpaMin) => ({ hpaMin, hpaMax: 6, target: 60, peak: 30 })),
      minClusters: 1,
      useDraining: false,
      failBack: false,
      warmStandby: false,
      spread: false,
      scaleIn: null,
      drain: null,
      evictionTimeoutSeconds: null,
      unhealthyTimeoutSeconds: null,
      signalStaleAfterSeconds: null,
      events: [],
      capacitySource: null,
      seed: 1,
    });
  });
});
