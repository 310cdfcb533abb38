import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { longView, NodePoolModel, parseScenarioText, simulate, type PolicyRun, type Scenario } from '../src/index.js';
import { autoscalerEventsRead } from '../src/simulate.js';
import { lineChart } from '../src/svg.js';

// Issue 41's simulator details: the long view, a source without readyReplicas,
// the node pool through an outage, and MCO v0.2's FailedScaleUp-only reading.

const SCENARIOS = new URL('../../../examples/scenarios/', import.meta.url);
function loadScenario(name: string): Scenario {
  const parsed = parseScenarioText(readFileSync(new URL(`${name}.yaml`, SCENARIOS), 'utf8'));
  if (!parsed.ok) throw new Error(`${name}: ${JSON.stringify(parsed.error)}`);
  return parsed.value;
}

describe('longView', () => {
  it('every region-outage scenario also runs over 72 hours, the same events and the calm after them', () => {
    for (const name of [
      'region-outage',
      'region-outage-shared-region',
      'region-outage-min-two',
      'region-outage-min-two-spread',
    ]) {
      const scenario = loadScenario(name);
      const long = longView(scenario)!;
      expect(long.duration).toBe(72 * 3600);
      expect(long.events).toEqual(scenario.events);
      expect(long.longView).toBeUndefined();
    }
    expect(longView(loadScenario('gpu-stockout'))).toBeUndefined();
  });

  it('must be longer than the duration', () => {
    const text = readFileSync(new URL('region-outage.yaml', SCENARIOS), 'utf8').replace(
      'longView: 72h',
      'longView: 4h',
    );
    const parsed = parseScenarioText(text);
    expect(parsed.ok ? [] : parsed.error).toEqual([{ field: 'longView', message: 'must be longer than duration' }]);
  });
});

describe('signals.omitReadyReplicas', () => {
  it('a source without readyReplicas: no signal of mco carries it', () => {
    const seen: boolean[] = [];
    simulate(loadScenario('no-ready-replicas'), {
      policies: ['mco'],
      onEvaluation: ({ input }) => seen.push(...(input.signals ?? []).map((s) => s.readyReplicas === undefined)),
    });
    expect(seen.length).toBeGreaterThan(100);
    expect(seen.every(Boolean)).toBe(true);
  });

  it('declareOmission: false (a source written for MCO, no reportsReadyReplicas): rule D1 learns it, and every figure is the same', () => {
    const declared = loadScenario('no-ready-replicas');
    const undeclared: Scenario = { ...declared, signals: { ...declared.signals, declareOmission: false } };
    const declarations: (boolean | undefined)[] = [];
    const summaries = [declared, undeclared].map((scenario, i) =>
      simulate(scenario, {
        policies: ['mco', 'mco-fail-back'],
        onEvaluation: ({ input }) => {
          if (i === 1) declarations.push(...(input.signals ?? []).map((s) => s.reportsReadyReplicas));
        },
      }).runs.map((r) => ({
        policy: r.policy,
        summary: r.summary,
        transitions: r.timeline.flatMap((e) => (e.kind === 'transition' ? [`${e.t} ${e.id} ${e.cluster}`] : [])),
      })),
    );
    expect(declarations.length).toBeGreaterThan(100);
    expect(declarations.every((d) => d === undefined)).toBe(true);
    expect(summaries[1]).toEqual(summaries[0]);
    // A drain ran on those signals and ended: the fallback was scaled in (P2) and removed (R1).
    expect(summaries[1]![0]!.transitions.map((t) => t.split(' ')[1])).toEqual(expect.arrayContaining(['P2', 'R1']));
  });

  it('names only clusters of the fleet', () => {
    const text = readFileSync(new URL('no-ready-replicas.yaml', SCENARIOS), 'utf8').replace(
      'omitReadyReplicas: true',
      'omitReadyReplicas: [us-central1, nowhere]',
    );
    const parsed = parseScenarioText(text);
    expect(parsed.ok ? [] : parsed.error).toEqual([
      { field: 'signals.omitReadyReplicas[1]', message: 'no cluster named nowhere in fleet.clusters' },
    ]);
  });
});

/** mco's first scale-in: the cluster it moved to SCALING_IN (P2), and how long after and why R1 removed it. */
function firstScaleIn(timeline: PolicyRun['timeline']) {
  const list = timeline.flatMap((e) => (e.kind === 'transition' ? [e] : []));
  const p2 = list.find((x) => x.id === 'P2');
  const r1 = list.find((x) => x.id === 'R1' && x.cluster === p2?.cluster);
  return { cluster: p2?.cluster, removedAfter: r1 && p2 ? r1.t - p2.t : undefined, reason: r1?.reason };
}

describe('signals.verdictsOnly', () => {
  const full = loadScenario('gpu-stockout');
  const verdicts: Scenario = { ...full, signals: { ...full.signals, verdictsOnly: true } };

  it("mco's signals carry the two verdicts and nothing it could count", () => {
    const seen = new Set<string>();
    simulate(verdicts, {
      policies: ['mco'],
      onEvaluation: ({ input }) => (input.signals ?? []).forEach((s) => seen.add(Object.keys(s).sort().join(','))),
    });
    expect([...seen].sort()).toEqual([
      'atCapacityCeiling,cluster,observedAt,wantsScaleIn',
      'atCapacityCeiling,cluster,observedAt,wantsScaleIn,workloadHealthy',
    ]);
  });

  it('a scale-in still ends: the fallback is removed evictionTimeoutSeconds after its P2 (rule R1), where full signals drain it', () => {
    const [withCounts, withoutCounts] = [full, verdicts].map((s) =>
      firstScaleIn(simulate(s, { policies: ['mco'] }).runs[0]!.timeline),
    );
    expect({ withCounts: withCounts!.cluster, withoutCounts }).toEqual({
      withCounts: 'fleet/us-east4',
      withoutCounts: {
        cluster: 'fleet/us-east4',
        removedAfter: 1800,
        reason: 'scaled in: SCALING_IN for evictionTimeoutSeconds (1800s) with no replica count reported',
      },
    });
    expect(withCounts!.removedAfter).toBeLessThan(1800);
  });
});

describe('a scale-in without draining, at an HPA minimum above 1', () => {
  it('still ends: the fallback is removed evictionTimeoutSeconds after its P2 (rule R1), where it used to stay to the end', () => {
    // gpu-stockout as an MCO user without useDraining writes it, with HPAs that keep 3 replicas.
    const text = readFileSync(new URL('gpu-stockout.yaml', SCENARIOS), 'utf8')
      .replace('useDraining: true', 'useDraining: false')
      .replace('minReplicas: 2,', 'minReplicas: 3,');
    const parsed = parseScenarioText(text);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    const run = simulate(parsed.value, { policies: ['mco'] }).runs[0]!;
    expect({
      ...firstScaleIn(run.timeline),
      listedAtTheEnd: run.status.clusters?.map((c) => `${c.name} ${c.state}`),
    }).toEqual({
      cluster: 'fleet/us-east4',
      removedAfter: 1800,
      reason:
        'scaled in: SCALING_IN for evictionTimeoutSeconds (1800s) at its HPA minimum (3 replica(s)) without draining',
      listedAtTheEnd: ['us-central1 ACTIVE'],
    });
  });
});

describe('the node pool through an outage', () => {
  it('the scale-down clock stops while the cluster is unreachable: its nodes do not vanish the instant it is back', () => {
    const pool = new NodePoolModel({ ...loadScenario('region-outage').fleet.clusters[0]!.nodePool, minNodes: 0 }, 10);
    pool.autoscale(0, 0, 2); // 8 nodes unneeded from t = 0
    for (let t = 30; t < 7200; t += 30) pool.holdScaleDown(); // unreachable for two hours
    pool.autoscale(7200, 0, 2);
    expect(pool.nodes).toBe(10);
    pool.autoscale(7200 + 600, 0, 2); // scaleDownDelay (10 min) after it is back
    expect(pool.nodes).toBe(2);
  });
});

describe('MCO v0.2 reads FailedScaleUp only, as MCO documents its metric', () => {
  it('a pool at maxNodes (NotTriggerScaleUp) is a ceiling for mco, not for MCO v0.2', () => {
    const pool = new NodePoolModel({ ...loadScenario('gpu-stockout').fleet.clusters[0]!.nodePool, maxNodes: 1 }, 1);
    pool.autoscale(0, 3, 1);
    expect(pool.events.map((e) => e.reason)).toEqual(['NotTriggerScaleUp']);
    expect(pool.failedScaleUpWithin(30, 600)).toBe(true);
    expect(pool.failedScaleUpWithin(30, 600, ['FailedScaleUp'])).toBe(false);
  });

  it("mco's Kubernetes source sees a stockout only as the backoff on its pods: upstream writes no FailedScaleUp Event", () => {
    const pool = new NodePoolModel(loadScenario('gpu-stockout').fleet.clusters[0]!.nodePool, 1);
    pool.autoscale(0, 1, 1); // one node requested
    pool.advance(60, true); // the stockout fails it: FailedScaleUp (the autoscaler's status, MCO's log metric)
    const mco = autoscalerEventsRead('mco');
    expect(pool.failedScaleUpWithin(90, 600, autoscalerEventsRead('mco-v0.2'))).toBe(true);
    expect(pool.failedScaleUpWithin(90, 600, mco)).toBe(false); // no pod was told yet
    pool.autoscale(90, 1, 1); // the pod still waits: NotTriggerScaleUp, in backoff after failed scale-up
    expect(pool.events.at(-1)?.message).toContain('in backoff after failed scale-up');
    expect(pool.failedScaleUpWithin(120, 600, mco)).toBe(true);
    expect(autoscalerEventsRead('mco-fail-back')).toEqual(mco);
  });

  it("a source of the autoscaler's metrics (signals.autoscalerMetrics) sees failed scale-ups, never a size limit", () => {
    expect(autoscalerEventsRead('mco', true)).toEqual(['FailedScaleUp']);
    // shared-gpu-quota: the preferred pool reaches its maximum with pods pending, and no scale-up fails.
    const base = loadScenario('shared-gpu-quota');
    const run = (autoscalerMetrics: boolean) => {
      const scenario = { ...base, signals: { ...base.signals, autoscalerMetrics } };
      const signals: { nodeLimitReached?: boolean }[] = [];
      const result = simulate(scenario, {
        seed: 1,
        policies: ['mco'],
        onEvaluation: (e) => signals.push(...(e.input.signals ?? [])),
      });
      return { lost: result.runs[0]!.summary.unservedPercent, limits: signals.some((s) => s.nodeLimitReached) };
    };
    const events = run(false);
    const metrics = run(true);
    expect(events.limits).toBe(true);
    expect(events.lost).toBeLessThan(0.01);
    // No ceiling at the limit: mco stays on the full pool and loses requests there (docs/signals.md).
    expect(metrics.limits).toBe(false);
    expect(metrics.lost).toBeGreaterThan(5);
  });
});

describe('report charts', () => {
  it('identical policies do not hide each other: the later line is dashed and says which it equals', () => {
    const svg = lineChart({
      id: 'c',
      title: 't',
      times: [0, 30],
      duration: 60,
      yLabel: 'y',
      series: [
        { label: 'mco', color: '#000', values: [1, 2] },
        { label: 'mco with fail-back', color: '#111', values: [1, 2] },
      ],
    });
    expect(svg).toContain('mco with fail-back (identical to mco)');
    expect(svg).toMatch(/data-series="mco with fail-back"[^>]*stroke-dasharray/);
  });

  it('markers two minutes apart do not overlap: the second label goes a row lower', () => {
    const svg = lineChart({
      id: 'c',
      title: 't',
      times: [0, 30],
      duration: 8 * 3600,
      yLabel: 'y',
      series: [{ label: 'a', color: '#000', values: [1, 2] }],
      markers: [
        { t: 3600, label: 'one' },
        { t: 3720, label: 'two' },
      ],
    });
    const ys = [...svg.matchAll(/<g class="marker">.*?<text x="[\d.]+" y="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(ys).toHaveLength(2);
    expect(ys[1]! - ys[0]!).toBe(10);
  });
});
