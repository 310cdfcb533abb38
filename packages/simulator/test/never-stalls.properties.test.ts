import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseScenario, simulate, type ScenarioInput } from '../src/index.js';

// Issue 41, "decisions that never stall": random fleets, signal sources
// (complete, without readyReplicas, verdicts only), HPA minimums, draining on
// or off and stockouts, outages and flaky signals, under load that rises and
// then falls to almost nothing for the last 4.5 hours. Whatever the mix, no
// scale-in is held for ever, and with fail-back on a source that reports HPA
// figures ends on the clusters the load needs. Found this way: a SCALING_IN
// cluster without draining at an HPA minimum of 2 or more was held to the end
// (rule R1), a countless one was removed while its load had come back, and
// rule M1 refused sources without readyReplicas (docs/placement-rules.md §3, §10.10).

const SOURCES = ['complete', 'no readyReplicas', 'undeclared', 'verdicts only'] as const;

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

function scenarioOf(p: Params): ScenarioInput {
  const names = Array.from({ length: p.clusters }, (_, i) => `c${i}`);
  const signals =
    p.source === 'no readyReplicas'
      ? { omitReadyReplicas: true }
      : p.source === 'undeclared'
        ? { omitReadyReplicas: true, declareOmission: false }
        : p.source === 'verdicts only'
          ? { verdictsOnly: true }
          : {};
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
    fleet: {
      nodePool: { podsPerNode: 1, minNodes: 0, maxNodes: 24, scaleUpDelay: '4m', scaleDownDelay: '10m' },
      clusters: names.map((name, i) => ({
        name,
        region: p.regions[i]!,
        labels: { accelerator: 'gpu' },
        gpuHourCost: 0.7 + i * 0.05,
        nodePool: { maxNodes: p.maxNodes[i]! },
      })),
    },
    signals,
    placement: {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'w', namespace: 'default' },
      spec: {
        affinity: {
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
        },
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: p.minClusters,
            useDraining: p.useDraining,
            workloadDetails: { namespace: 'ml', deploymentName: 'w', hpaName: 'w' },
          },
        },
      },
    },
    demand: {
      piecewise: [
        { at: 0, value: 20 },
        { at: 1800, value: p.peak },
        { at: 3 * 3600, value: p.peak },
        { at: 3.5 * 3600, value: 5 },
      ],
      noise: { stddev: 0.05, correlation: 0.9 },
    },
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
        const parsed = parseScenario(scenarioOf(p));
        if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
        const result = simulate(parsed.value, { policies: ['mco', 'mco-fail-back'] });
        const end = Date.parse(parsed.value.start) + parsed.value.duration * 1000;
        for (const run of result.runs) {
          // evictionTimeoutSeconds (1800) bounds a scale-in that cannot show one replica; a drain adds minutes.
          const held = (run.status.clusters ?? []).filter(
            (c) => c.state === 'SCALING_IN' && end - Date.parse(c.lastTransitionTime) > 2400 * 1000,
          );
          expect(held.map((c) => `${run.policy}: ${c.name} SCALING_IN since ${c.lastTransitionTime}`)).toEqual([]);
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
