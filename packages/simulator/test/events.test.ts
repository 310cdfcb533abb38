import { describe, expect, it } from 'vitest';
import { expandEvents, initialConditions, type ClusterConditions } from '../src/events.js';
import { parseScenario, simulate, type Scenario, type ScenarioInput } from '../src/index.js';

// Overlapping events compose: a cluster is back only when the last event
// over it ends (before, the first event to end set it back, so a cluster in
// its own outage was reachable again when its region's outage ended).

function scenario(events: ScenarioInput['events']): Scenario {
  const parsed = parseScenario({
    name: 'overlaps',
    duration: '4h',
    fleet: {
      clusters: [
        { name: 'c0', region: 'r1' },
        { name: 'c1', region: 'r1' },
      ],
    },
    workload: { capacityPerReplica: 10, hpa: { minReplicas: 1, maxReplicas: 4, targetUtilization: 70 } },
    placement: {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'w', namespace: 'default' },
      spec: {},
    },
    demand: { piecewise: [{ at: 0, value: 10 }] },
    events,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
  return parsed.value;
}

/** The conditions of each cluster after every action up to `t` (seconds). */
function conditionsAt(s: Scenario, t: number): Record<string, ClusterConditions> {
  const conditions = Object.fromEntries(s.fleet.clusters.map((c) => [c.name, initialConditions(c.labels)]));
  for (const action of expandEvents(s)) {
    if (action.t > t) break;
    for (const name of action.clusters) action.apply(conditions[name]!);
  }
  return conditions;
}

describe('overlapping events', () => {
  it('a cluster in its own outage stays unreachable when its region’s outage ends', () => {
    const s = scenario([
      { type: 'outage', at: '1h', until: '2h', region: 'r1' },
      { type: 'outage', at: '1h30m', until: '3h', cluster: 'c0' },
    ]);
    const at = (t: number) => {
      const c = conditionsAt(s, t);
      return [c.c0!.reachable, c.c0!.controlPlaneHealthy, c.c1!.reachable, c.c1!.controlPlaneHealthy];
    };
    expect(at(3600 + 121)).toEqual([false, 'False', false, 'False']);
    expect(at(7200 + 121)).toEqual([false, 'False', true, 'True']);
    expect(at(3 * 3600)).toEqual([true, 'False', true, 'True']);
    expect(at(3 * 3600 + 120)).toEqual([true, 'True', true, 'True']);
  });

  it('stockouts count; a recovery ends every one in force', () => {
    const s = scenario([
      { type: 'stockout', at: 0, until: '2h', cluster: 'c0' },
      { type: 'stockout', at: '1h', until: '1h30m', region: 'r1' },
      { type: 'stockout', at: '2h10m', cluster: 'c1' },
      { type: 'stockout', at: '2h20m', region: 'r1' },
      { type: 'recovery', at: '3h', region: 'r1' },
    ]);
    const at = (t: number) => {
      const c = conditionsAt(s, t);
      return [c.c0!.stockedOut, c.c1!.stockedOut];
    };
    expect(at(5400)).toEqual([true, false]);
    expect(at(7200)).toEqual([false, false]);
    expect(at(2.5 * 3600)).toEqual([true, true]);
    expect(at(3 * 3600)).toEqual([false, false]);
  });

  it('ControlPlaneHealthy: False over Unknown, True when the last ends; signal noise: the worst in force', () => {
    const s = scenario([
      { type: 'controlPlaneHealthy', at: 0, until: '1h', cluster: 'c0', status: 'Unknown' },
      { type: 'controlPlaneHealthy', at: '30m', until: '45m', cluster: 'c0', status: 'False' },
      { type: 'signalNoise', at: 0, until: '2h', cluster: 'c0', dropout: 0.1, unhealthy: 0.3 },
      { type: 'signalNoise', at: '1h', until: '1h30m', cluster: 'c0', dropout: 0.5, unhealthy: 0 },
    ]);
    const at = (t: number) => {
      const { controlPlaneHealthy, dropout, unhealthy } = conditionsAt(s, t).c0!;
      return [controlPlaneHealthy, dropout, unhealthy];
    };
    expect(at(0)).toEqual(['Unknown', 0.1, 0.3]);
    expect(at(1800)).toEqual(['False', 0.1, 0.3]);
    expect(at(2700)).toEqual(['Unknown', 0.1, 0.3]);
    expect(at(3600)).toEqual(['True', 0.5, 0.3]);
    expect(at(5400)).toEqual(['True', 0.1, 0.3]);
    expect(at(7200)).toEqual(['True', 0, 0]);
  });

  it('the timeline says when an event changes nothing, and whether another is in force', () => {
    const s = scenario([
      { type: 'outage', at: '1h', until: '2h', region: 'r1' },
      { type: 'outage', at: '1h30m', until: '3h', cluster: 'c0' },
      { type: 'recovery', at: '3h30m', cluster: 'c1' },
    ]);
    const texts = simulate(s, { policies: ['always-on'] })
      .runs[0]!.timeline.filter((e) => e.kind === 'event')
      .map((e) => `${e.t / 60}m ${e.kind === 'event' ? e.text : ''}`);
    expect(texts).toEqual([
      '60m outage: region r1 (fleet/c0, fleet/c1) unreachable',
      '62m ClusterProfile ControlPlaneHealthy=False for region r1 (fleet/c0, fleet/c1)',
      '90m outage: fleet/c0 unreachable (no change: another event is in force)',
      '92m ClusterProfile ControlPlaneHealthy=False for fleet/c0 (no change: another event is in force)',
      '120m outage over: region r1 (fleet/c0, fleet/c1) reachable again',
      '122m ClusterProfile ControlPlaneHealthy=True for region r1 (fleet/c0, fleet/c1)',
      '180m outage over: fleet/c0 reachable again',
      '182m ClusterProfile ControlPlaneHealthy=True for fleet/c0',
      '210m capacity recovered: nodes can be provisioned again in fleet/c1 (no change)',
    ]);
  });
});
