import { readFileSync, readdirSync } from 'node:fs';
import {
  ClusterProfileSchema,
  CONTROL_PLANE_HEALTHY,
  decide,
  SignalSchema,
  type AutoscaleForCapacity,
  type ClusterProfile,
} from '@mco/core';
import { describe, expect, it } from 'vitest';
import {
  formatConsole,
  formatSeedsConsole,
  formatTimeline,
  formatTimelineEntry,
  parseScenarioText,
  renderReport,
  simulate,
  defaultPolicies,
  type Evaluation,
  type PolicyName,
  type PolicyRun,
  atCeilingV02,
  type Scenario,
  type SimulationResult,
  type Summary,
  type TickSample,
  type TimelineEntry,
} from '../src/index.js';

const SCENARIOS = new URL('../../../examples/scenarios/', import.meta.url);

function loadScenario(name: string): Scenario {
  const parsed = parseScenarioText(readFileSync(new URL(`${name}.yaml`, SCENARIOS), 'utf8'));
  if (!parsed.ok) throw new Error(`${name}: ${JSON.stringify(parsed.error)}`);
  return parsed.value;
}

const run = (result: SimulationResult, policy: PolicyName): PolicyRun => result.runs.find((r) => r.policy === policy)!;
const transitions = (r: PolicyRun) =>
  r.timeline.filter((e): e is Extract<TimelineEntry, { kind: 'transition' }> => e.kind === 'transition');
/** `[time, id, cluster]` of every transition: the shape of a run's decisions. */
const moves = (r: PolicyRun) => transitions(r).map((e) => [e.t, e.id, e.cluster]);
const signalOf = (e: Evaluation, cluster: string) => e.input.signals?.find((s) => s.cluster === cluster);
const listed = (r: PolicyRun) => (r.status.clusters ?? []).map((c) => `${c.namespace}/${c.name}:${c.state}`);

describe('determinism', () => {
  it('gives a byte-identical timeline and report for the same seed', () => {
    const scenario = loadScenario('noisy-signals');
    const a = simulate(scenario);
    const b = simulate(scenario);
    expect(formatConsole(b)).toBe(formatConsole(a));
    expect(renderReport(b)).toBe(renderReport(a));
  });

  it('draws other noise for another seed, so the results may differ', () => {
    const scenario = loadScenario('noisy-signals');
    const a = simulate(scenario, { seed: 1 });
    const b = simulate(scenario, { seed: 2 });
    expect(a.seed).toBe(1);
    expect(b.runs[0]!.samples.map((s) => s.demand)).not.toEqual(a.runs[0]!.samples.map((s) => s.demand));
    expect(renderReport(b)).not.toBe(renderReport(a));
  });
});

describe('the engine sees what a real fleet would show', () => {
  const evaluations: Evaluation[] = [];
  const result = simulate(loadScenario('gpu-stockout'), { onEvaluation: (e) => evaluations.push(e) });

  it('calls the engine once per tick per engine policy, plus once at the start; the baselines with code of their own are not reported', () => {
    const ticks = result.runs[0]!.samples.length;
    expect(ticks).toBe(12 * 120);
    expect(result.runs.map((r) => r.policy)).toEqual(['mco', 'mco-fail-back', 'mco-v0.2', 'pick-n', 'always-on']);
    expect(new Set(evaluations.map((e) => e.policy))).toEqual(new Set(['mco', 'mco-fail-back', 'always-on']));
    expect(evaluations.length).toBe(3 * (ticks + 1));
  });

  it('hands it valid Signals and ClusterProfiles, and its decision replays from the logged input', () => {
    for (const e of evaluations.filter((_, i) => i % 37 === 0)) {
      for (const signal of e.input.signals ?? []) expect(SignalSchema.safeParse(signal).success).toBe(true);
      for (const profile of e.input.clusterProfiles as readonly ClusterProfile[]) {
        expect(ClusterProfileSchema.safeParse(profile).success).toBe(true);
      }
      expect(decide(e.input)).toEqual(e.decision);
    }
  });

  it('reports the stocked-out cluster at its ceiling: pending pods and a FailedScaleUp within the window', () => {
    const atScaleOut = evaluations.find(
      (e) => e.policy === 'mco' && e.decision.transitions.some((t) => t.id === 'P1') && e.t > 0,
    )!;
    const signal = atScaleOut.input.signals!.find((s) => s.cluster === 'fleet/us-central1')!;
    expect({ t: atScaleOut.t, pending: signal.pendingPods! > 0, failedScaleUp: signal.failedScaleUp }).toEqual({
      t: 76 * 60,
      pending: true,
      failedScaleUp: true,
    });
    expect(atScaleOut.decision.transitions).toEqual([
      {
        cluster: 'fleet/us-east4',
        id: 'P1',
        from: null,
        to: 'ACTIVE',
        reason: 'headroom 0 < min 1: added the highest-priority eligible cluster',
      },
    ]);
  });

  it('shows an HPA status like a real one: ScalingLimited TooFewReplicas at the minimum before scale-in', () => {
    const p2 = evaluations.find((e) => e.policy === 'mco' && e.decision.transitions.some((t) => t.id === 'P2'))!;
    const signal = p2.input.signals!.find((s) => s.cluster === 'fleet/us-east4')!;
    expect(signal.hpa).toEqual({
      currentReplicas: 2,
      desiredReplicas: 2,
      minReplicas: 2,
      maxReplicas: 24,
      scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
    });
  });

  it('gives "mco without hysteresis or health" no stabilization, no cooldown, no fail-back and no health; always-on no scaling', () => {
    const ablation: Evaluation[] = [];
    simulate(loadScenario('gpu-stockout'), {
      policies: ['mco-without-hysteresis'],
      onEvaluation: (e) => ablation.push(e),
    });
    const documented = ablation.find((e) => e.t > 3600)!;
    const spec = documented.input.placement.spec as { scaling: { autoscaleForCapacity: { behavior: unknown } } };
    expect(spec.scaling.autoscaleForCapacity.behavior).toEqual({
      scaleOut: { stabilizationWindowSeconds: 0 },
      scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
    });
    const profiles = documented.input.clusterProfiles as readonly ClusterProfile[];
    expect(profiles.some((p) => p.status?.conditions !== undefined)).toBe(false);
    expect(documented.input.signals!.some((s) => 'workloadHealthy' in s)).toBe(false);

    const mco = evaluations.find((e) => e.policy === 'mco' && e.t > 3600)!;
    const mcoProfiles = mco.input.clusterProfiles as readonly ClusterProfile[];
    expect(mcoProfiles.every((p) => p.status?.conditions?.[0]?.type === CONTROL_PLANE_HEALTHY)).toBe(true);
    expect(mco.input.signals!.every((s) => s.workloadHealthy === true)).toBe(true);

    const alwaysOn = evaluations.find((e) => e.policy === 'always-on')!;
    expect((alwaysOn.input.placement.spec as { scaling?: unknown }).scaling).toBeUndefined();
  });
});

describe('shipped scenarios', () => {
  it('are the twenty documented ones', () => {
    expect(readdirSync(SCENARIOS).sort()).toEqual([
      'alternating-stockouts.yaml',
      'burst-during-drain.yaml',
      'bursty-slow-nodes.yaml',
      'bursty-stockouts-slow-preferred.yaml',
      'cyclic-short-troughs.yaml',
      'diurnal.yaml',
      'fail-back-flapping.yaml',
      'flapping-ceiling-dropout.yaml',
      'gpu-stockout.yaml',
      'lose-eligibility.yaml',
      'multi-region-stockout-deep.yaml',
      'multi-region-stockout.yaml',
      'no-ready-replicas.yaml',
      'noisy-signals.yaml',
      'region-outage-min-two-spread.yaml',
      'region-outage-min-two.yaml',
      'region-outage-shared-region.yaml',
      'region-outage.yaml',
      'shared-gpu-quota.yaml',
      'stockout-every-50m.yaml',
    ]);
  });

  // Hostile scenarios of issues 31 and 41 where fail-back used to flap and lose requests: with only
  // failBack.enabled: true it now loses no more than without it and cycles at most 0.2 times an hour.
  // flapping-ceiling-dropout and cyclic-short-troughs swing above what the preferred cluster holds
  // within the peak lookback: fail-back waits for room for the recent peak, and never moves back.
  it.each([
    ['gpu-stockout', true],
    // On its seed (11) the one probe ends as the load climbs to a peak (rule F2 reads the fallback's HPA
    // too): no move, where a fail-back at 6h19m30 used to be undone by the 6h30 stockout.
    ['stockout-every-50m', false],
    ['flapping-ceiling-dropout', false],
    ['cyclic-short-troughs', false],
  ])(
    '%s: fail-back (only enabled: true) loses at most 0.05 pp more than mco and cycles at most 0.2 times an hour',
    (name, failsBack) => {
      const scenario = loadScenario(name);
      const result = simulate(scenario, { policies: ['mco', 'mco-fail-back'] });
      const mco = run(result, 'mco').summary;
      const failBack = run(result, 'mco-fail-back').summary;
      expect(failBack.failBack!.failBacks > 0).toBe(failsBack);
      expect(failBack.unservedPercent - mco.unservedPercent).toBeLessThanOrEqual(0.05);
      expect(failBack.failBack!.cycles / (scenario.duration / 3600)).toBeLessThanOrEqual(0.2);
    },
  );

  it('gpu-stockout: mco scales out on the first FailedScaleUp, serves the ramp, and keeps us-east4 until load falls', () => {
    const result = simulate(loadScenario('gpu-stockout'));
    const mco = run(result, 'mco');
    const documented = run(result, 'mco-v0.2');
    const pickN = run(result, 'pick-n');
    const alwaysOn = run(result, 'always-on');
    expect(moves(mco)).toEqual([
      [0, 'P1', 'fleet/us-central1'],
      [4560, 'P1', 'fleet/us-east4'],
      [36_090, 'P2', 'fleet/us-east4'],
      [36_210, 'R1', 'fleet/us-east4'],
    ]);
    // MCO v0.2 scales out on the same evidence; it scales in as soon as the HPA wants fewer than its minimum.
    expect(moves(documented).slice(0, 2)).toEqual(moves(mco).slice(0, 2));
    expect(moves(documented)[2]![0]).toBeLessThan(36_090);
    // pick-N, sized for the peak on the preferred cluster alone, has nowhere to go during the stockout.
    expect(pickN.label).toBe('pick-N (n=1)');
    expect(moves(pickN)).toEqual([[0, 'P1', 'fleet/us-central1']]);
    expect(pickN.summary.unservedPercent).toBeGreaterThan(20);
    expect(mco.timeline.filter((e) => e.kind !== 'transition' && e.t === 4560).map((e) => e.kind)).toEqual(['fleet']);
    expect(listed(mco)).toEqual(['fleet/us-central1:ACTIVE']);
    expect(mco.summary.stockouts).toEqual([
      { at: 4500, scope: 'region us-central1', firstFailedScaleUp: 4560, restoredAfter: 420 },
    ]);
    expect(mco.summary.unservedPercent).toBeLessThan(0.5);
    expect(mco.summary.clusterHoursAboveNeed).toBeLessThan(alwaysOn.summary.clusterHoursAboveNeed / 2);
    expect(mco.summary.replicaHoursAboveNeed).toBeLessThan(alwaysOn.summary.replicaHoursAboveNeed / 2);
    expect(mco.summary.nodeHours).toBeLessThan(alwaysOn.summary.nodeHours);
  });

  it('diurnal: mco adds a cluster for each daily peak and drains it at night; always-on idles all day', () => {
    const result = simulate(loadScenario('diurnal'));
    const mco = run(result, 'mco');
    const alwaysOn = run(result, 'always-on');
    expect(moves(mco).map(([, id, cluster]) => `${id} ${cluster}`)).toEqual([
      'P1 fleet/us-central1',
      'P1 fleet/us-east4',
      'P2 fleet/us-east4',
      'R1 fleet/us-east4',
      'P1 fleet/us-east4',
    ]);
    expect(mco.summary.clusterHours).toBeLessThan(alwaysOn.summary.clusterHours * 0.6);
    expect(mco.summary.clusterHoursAboveNeed).toBeLessThan(alwaysOn.summary.clusterHoursAboveNeed / 4);
    expect(mco.summary.unservedPercent).toBeLessThan(0.5);
  });

  it('noisy-signals: stabilization keeps mco steady where MCO v0.2 flaps, and it serves more', () => {
    const result = simulate(loadScenario('noisy-signals'));
    const mco = run(result, 'mco');
    const documented = run(result, 'mco-v0.2');
    expect(mco.summary.transitions).toBeLessThanOrEqual(6);
    expect(documented.summary.transitions).toBeGreaterThan(3 * mco.summary.transitions);
    expect(mco.summary.unservedPercent).toBeLessThan(documented.summary.unservedPercent);
    // The short ControlPlaneHealthy blip is seen by mco only, and undone.
    expect(moves(mco).filter(([, id]) => id === 'H1' || id === 'H2')).toEqual([
      [14_400, 'H1', 'fleet/us-central1'],
      [14_700, 'H2', 'fleet/us-central1'],
    ]);
  });

  it('warmUp: every policy is measured after the same first minutes, which are still simulated and shown', () => {
    const scenario = loadScenario('noisy-signals');
    expect(scenario.warmUp).toBe(900);
    const result = simulate(scenario, { seed: 14 });
    const { warmUp: _, ...whole } = scenario;
    const unmeasured = simulate(whole, { seed: 14 });
    for (const policy of ['mco', 'pick-n'] as const) {
      const r = run(result, policy);
      const lost = (from: number) =>
        r.samples.filter((s) => s.t >= from).reduce((a, s) => [a[0]! + s.demand - s.served, a[1]! + s.demand], [0, 0]);
      const [after, demand] = lost(900);
      expect(r.samples[0]!.t).toBe(0);
      expect(r.summary.unservedPercent).toBeCloseTo((100 * after!) / demand!, 9);
      expect(run(unmeasured, policy).samples).toEqual(r.samples);
    }
    // Seed 14 opens with a burst one cluster cannot hold: mco, which started on one, loses in the first minutes.
    expect(run(unmeasured, 'mco').summary.unservedPercent).toBeGreaterThan(run(result, 'mco').summary.unservedPercent);
  });

  it('region-outage: mco replaces the unreachable cluster; without health checking MCO v0.2 never does', () => {
    const result = simulate(loadScenario('region-outage'));
    const mco = run(result, 'mco');
    const documented = run(result, 'mco-v0.2');
    // The outage starts at 2h; ControlPlaneHealthy turns False 2 min later. The replacement comes by
    // then at the latest (an engine that reads transport errors may add it sooner), the lost cluster goes.
    const replaced = moves(mco).find(([, id, c]) => id === 'P1' && c === 'fleet/us-east4')!;
    expect(replaced[0]).toBeGreaterThanOrEqual(7200);
    expect(replaced[0]).toBeLessThanOrEqual(7320);
    expect(moves(mco).filter(([, id]) => id === 'H1' || id === 'R2')).toEqual([
      [7320, 'H1', 'fleet/us-central1'],
      [8220, 'R2', 'fleet/us-central1'],
    ]);
    expect(moves(documented)).toEqual([[0, 'P1', 'fleet/us-central1']]);
    expect(mco.summary.unservedPercent).toBeLessThan(5);
    expect(documented.summary.unservedPercent).toBeGreaterThan(20);
  });

  it('region-outage-shared-region: the replacement comes from another region, not the dead region’s other cluster', () => {
    const mco = run(simulate(loadScenario('region-outage-shared-region'), { policies: ['mco'] }), 'mco');
    // Two polls after the outage (rule O1), outside the region of the unreachable cluster (rule O2).
    expect(moves(mco).filter(([, id]) => id === 'P1')).toEqual([
      [0, 'P1', 'fleet/us-central1'],
      [7230, 'P1', 'fleet/us-east4'],
    ]);
  });

  it('lose-eligibility: mco evicts and drains the relabelled cluster and adds the next one in the same evaluation', () => {
    const result = simulate(loadScenario('lose-eligibility'));
    const mco = run(result, 'mco');
    const alwaysOn = run(result, 'always-on');
    const evicted = moves(mco).filter(([t]) => t === 10_800);
    expect(evicted).toEqual([
      [10_800, 'E1', 'fleet/us-central1'],
      [10_800, 'P1', 'fleet/us-east4'],
    ]);
    expect(moves(mco).find(([, id]) => id === 'R3')?.[2]).toBe('fleet/us-central1');
    expect(listed(mco)).toEqual(['fleet/us-east4:ACTIVE']);
    // Always-on removes it at once (nothing to drain) and adds it back when the label returns.
    expect(moves(alwaysOn).filter(([, , c]) => c === 'fleet/us-central1')).toEqual([
      [0, 'P1', 'fleet/us-central1'],
      [10_800, 'E1', 'fleet/us-central1'],
      [10_800, 'R3', 'fleet/us-central1'],
      [21_600, 'P1', 'fleet/us-central1'],
    ]);
    expect(mco.summary.unservedPercent).toBeLessThan(2);
  });
});

describe('an unreachable region', () => {
  const evaluations: Evaluation[] = [];
  const result = simulate(loadScenario('region-outage'), { onEvaluation: (e) => evaluations.push(e) });
  const signalAt = (t: number) =>
    evaluations
      .find((e) => e.policy === 'mco' && e.t === t)!
      .input.signals!.find((s) => s.cluster === 'fleet/us-central1');

  it('reports a transport error, counting consecutive polls, while the region is down; then data again', () => {
    // The outage runs from 2h to 4h; the first poll after it fails at 2h.
    expect(signalAt(7200 - 30)?.transportError).toBeUndefined();
    expect([0, 1, 2].map((k) => signalAt(7200 + 30 * k))).toEqual(
      [1, 2, 3].map((n, k) => ({
        cluster: 'fleet/us-central1',
        observedAt: `2026-01-01T02:0${k === 2 ? '1' : '0'}:${k === 1 ? '30' : '00'}Z`,
        transportError: { reason: 'timeout', consecutivePolls: n },
      })),
    );
    expect(SignalSchema.safeParse(signalAt(7200)).success).toBe(true);
    const after = evaluations.filter((e) => e.policy === 'mco-fail-back' && e.t >= 4 * 3600 + 600);
    expect(after.flatMap((e) => e.input.signals!).some((s) => s.transportError)).toBe(false);
  });

  it("fills readyReplicas, the workload's ready pods on that cluster, in every signal with data", () => {
    const signals = evaluations.flatMap((e) => e.input.signals!).filter((s) => !s.transportError);
    expect(signals.length).toBeGreaterThan(1000);
    expect(signals.every((s) => s.readyReplicas! >= 0 && s.readyReplicas! <= s.hpa!.currentReplicas!)).toBe(true);
    expect(signals.some((s) => s.readyReplicas! < s.hpa!.currentReplicas!)).toBe(true);
  });

  it("starts the replacement at the lost cluster's replicas (rule O3): its HPA minimum is the floor while it is set", () => {
    const mco = evaluations.filter((e) => e.policy === 'mco');
    const replacement = (e: Evaluation) => e.decision.status.clusters?.find((c) => c.name === 'us-east4');
    const floored = mco.filter((e) => replacement(e)?.desiredMinReplicas !== undefined);
    const lost = mco
      .find((e) => e.t === floored[0]!.t)!
      .decision.status.clusters!.find((c) => c.name === 'us-central1');
    // The floor is us-central1's last ready replicas, more than the HPA's minReplicas (2).
    expect(replacement(floored[0]!)).toMatchObject({
      desiredMinReplicas: lost!.lastReadyReplicas,
      replacesCluster: 'fleet/us-central1',
    });
    expect(lost!.lastReadyReplicas).toBeGreaterThan(2);
    // Delivery applies it: the replacement's HPA reports it as its minimum while it is set, then 2 again.
    const minOf = (e: Evaluation) => e.input.signals!.find((s) => s.cluster === 'fleet/us-east4')?.hpa?.minReplicas;
    const whileSet = floored.slice(1).flatMap((e) => (minOf(e) !== undefined ? [minOf(e)] : []));
    expect(whileSet.length).toBeGreaterThan(0);
    expect(new Set(whileSet)).toEqual(new Set([lost!.lastReadyReplicas]));
    // Bounded: cleared within unhealthyTimeoutSeconds (900 s), before the outage ends.
    const last = floored.at(-1)!.t;
    expect(last - floored[0]!.t).toBeLessThan(900);
    expect(minOf(mco.find((e) => e.t === last + 60)!)).toBe(2);
  });

  it('counts a deployed cluster in cluster-hours, node-hours and cost whether or not it is reachable', () => {
    // MCO v0.2 keeps us-central1 through the outage: 8 cluster-hours out of 8, its nodes billed throughout.
    const documented = run(result, 'mco-v0.2');
    expect(documented.summary.clusterHours).toBe(8);
    const nodeTicks = documented.samples.reduce((a, s) => a + s.clusters.reduce((b, c) => b + c.nodes, 0), 0);
    expect(documented.summary.nodeHours).toBeCloseTo((nodeTicks * 30) / 3600, 9);
    const unreachable = documented.samples.filter((s) => !s.clusters[0]!.reachable);
    expect(unreachable.length).toBe(240);
    expect(unreachable.every((s) => s.clusters[0]!.deployed && s.clusters[0]!.nodes > 0)).toBe(true);
  });
});

describe('placements sharing a node pool (shared-gpu-quota)', () => {
  const evaluations: Evaluation[] = [];
  const scenario = loadScenario('shared-gpu-quota');
  const result = simulate(scenario, { policies: ['mco'], onEvaluation: (e) => evaluations.push(e) });
  const mco = run(result, 'mco');
  const [chat, embeddings] = mco.placements;
  const QUOTA = 12; // us-central1's nodePool.maxNodes × podsPerNode
  const scheduledOn = (samples: readonly TickSample[], k: number, cluster: number) =>
    samples[k]!.clusters[cluster]!.replicas - samples[k]!.clusters[cluster]!.pending;

  it('never schedules more pods on the shared pool than its quota, and never grows it beyond', () => {
    expect(scenario.placements.map((p) => p.placement.metadata.name)).toEqual(['chat', 'embeddings']);
    const totals = chat!.samples.map(
      (_, k) => scheduledOn(chat!.samples, k, 0) + scheduledOn(embeddings!.samples, k, 0),
    );
    expect(Math.max(...totals)).toBe(QUOTA);
    expect(Math.max(...chat!.samples.map((s) => s.clusters[0]!.nodes))).toBe(QUOTA);
  });

  it("when chat fills the pool, embeddings' new pods stay pending and its signal is at its ceiling; it scales out", () => {
    // The first tick at which embeddings has pods pending on us-central1 while the pool is full.
    const k = embeddings!.samples.findIndex(
      (s, i) =>
        s.clusters[0]!.pending > 0 &&
        scheduledOn(chat!.samples, i, 0) + scheduledOn(embeddings!.samples, i, 0) === QUOTA,
    );
    expect(k).toBeGreaterThan(0);
    expect(scheduledOn(chat!.samples, k, 0)).toBeGreaterThan(scheduledOn(embeddings!.samples, k, 0));
    const t = embeddings!.samples[k]!.t;
    // Within the next few ticks the cluster-autoscaler reports it cannot add a node (max node group size reached).
    const ceiling = evaluations.find(
      (e) =>
        e.t >= t && e.input.placement.metadata.name === 'embeddings' && atCeilingV02(signalOf(e, 'fleet/us-central1')),
    )!;
    const signal = signalOf(ceiling, 'fleet/us-central1')!;
    expect(signal.pendingPods).toBeGreaterThan(0);
    expect(signal.failedScaleUp).toBe(true);
    expect(ceiling.t - t).toBeLessThanOrEqual(120);
    expect(ceiling.decision.transitions.map((tr) => [tr.id, tr.cluster])).toEqual([['P1', 'fleet/us-east4']]);
  });

  it('reports metrics per placement and fleet-wide: the pools counted once, split by pods', () => {
    const sum = (f: (s: Summary) => number) => f(chat!.summary) + f(embeddings!.summary);
    expect(mco.summary.clusterHours).toBeCloseTo(
      sum((s) => s.clusterHours),
      9,
    );
    expect(mco.summary.pendingPodMinutes).toBeCloseTo(
      sum((s) => s.pendingPodMinutes),
      9,
    );
    // Every node of every pool, once.
    const nodeTicks = chat!.samples.reduce((a, s) => a + s.clusters.reduce((b, c) => b + c.nodes, 0), 0);
    expect(mco.summary.nodeHours).toBeCloseTo((nodeTicks * 30) / 3600, 6);
    expect(sum((s) => s.nodeHours)).toBeCloseTo(mco.summary.nodeHours, 6);
    expect(chat!.summary.nodeHours).toBeGreaterThan(embeddings!.summary.nodeHours);
    expect(mco.timeline.filter((e) => e.kind === 'transition').every((e) => 'placement' in e)).toBe(true);
  });

  it('prints and reports the comparison fleet-wide, then per placement', () => {
    const text = formatSeedsConsole({ scenario, seeds: [result.seed], results: [result] }, { timeline: false });
    expect(text.split('\n').filter((l) => /^(Summary|Placement)/.test(l))).toEqual([
      'Summary, fleet-wide:',
      'Placement default/chat:',
      'Placement default/embeddings:',
    ]);
    const html = renderReport(result);
    expect(html.match(/<table class="summary">/g)?.length).toBe(3);
    expect(html).toContain('<h3>Placement default/embeddings</h3>');
  });
});

describe('fail-back (docs/placement-rules.md §10.3)', () => {
  /** A shipped scenario whose placement gets another `behavior`. */
  const withBehavior = (name: string, behavior: AutoscaleForCapacity['behavior']): Scenario => {
    const scenario = loadScenario(name);
    const autoscale = scenario.placement.spec!.scaling!.autoscaleForCapacity!;
    return {
      ...scenario,
      placement: {
        ...scenario.placement,
        spec: { ...scenario.placement.spec, scaling: { autoscaleForCapacity: { ...autoscale, behavior } } },
      },
    };
  };

  it("publishes each cluster's gpuHourCost as the ClusterProfile property gpu-hour-cost", () => {
    const evaluations: Evaluation[] = [];
    simulate(loadScenario('gpu-stockout'), { policies: ['mco'], onEvaluation: (e) => evaluations.push(e) });
    const profiles = evaluations[0]!.input.clusterProfiles as readonly ClusterProfile[];
    const property = (p: ClusterProfile, name: string) => p.status?.properties?.find((x) => x.name === name)?.value;
    expect(profiles.map((p) => [p.metadata.name, property(p, 'region'), property(p, 'gpu-hour-cost')])).toEqual([
      ['us-central1', 'us-central1', '0.71'],
      ['us-east4', 'us-east4', '0.76'],
      ['europe-west4', 'europe-west4', '0.8'],
      ['asia-east1', 'asia-east1', '0.35'],
    ]);
  });

  it('adds "mco with fail-back" to a placement that does not enable it: asks at 06:22:30, fails back once ready, at the price of pending pods', () => {
    const result = simulate(loadScenario('gpu-stockout'), { policies: ['mco', 'mco-fail-back'] });
    const mco = run(result, 'mco');
    const failBack = run(result, 'mco-fail-back');
    expect(moves(mco).slice(2)).toEqual([
      [36_090, 'P2', 'fleet/us-east4'],
      [36_210, 'R1', 'fleet/us-east4'],
    ]);
    expect(
      moves(failBack)
        .slice(2)
        .map(([, id, cluster]) => `${id} ${cluster}`),
    ).toEqual(['P2 fleet/us-east4', 'R1 fleet/us-east4']);
    // us-central1's pending pods have nodes at 06:07, but its signal still reports the FailedScaleUp
    // of 06:02:30 until 06:12:30 (the signal window). Fail-back room (rule F2) needs no pending pods
    // and no FailedScaleUp, so room holds from 06:12:30; the default 600 s window later, us-east4
    // asks us-central1 for the first step (rule F7), and moves once it runs it ready, within F7's bound.
    const asked = 6 * 3600 + 12 * 60 + 30 + 600;
    expect(transitions(failBack)[2]!.t).toBeGreaterThan(asked);
    expect(transitions(failBack)[2]!.t).toBeLessThan(asked + 660);
    expect(transitions(failBack)[2]!.reason).toMatch(/4 more replica\(s\) ready for the first step of 4 \(rule F7\)/);
    expect(mco.summary.failBack).toBeNull();
    expect(failBack.summary.failBack).toEqual({ windowSeconds: 600, failBacks: 1, cycles: 0, maxCyclesPerWindow: 0 });
    expect(failBack.summary.cost!).toBeLessThan(mco.summary.cost!);
    // About half of mco's hours on us-east4, no longer a quarter: drained to its warm size, us-east4
    // lingers there (rule F3) until 08:05, ready to take load back should us-central1 stock out again.
    expect(failBack.summary.nonPreferredClusterHours).toBeLessThan(mco.summary.nonPreferredClusterHours * 0.6);
    // The honest price of draining at the peak with the default 25% a minute: replicas wait for new nodes.
    expect(failBack.summary.pendingPodMinutes).toBeGreaterThan(mco.summary.pendingPodMinutes);
  });

  it("with a delivery that ignores desiredMinReplicas, fail-back never moves: rule F7's probe ends at its bound, no P2, no cycle", () => {
    const scenario = loadScenario('gpu-stockout');
    const ignoring: Scenario = { ...scenario, workload: { ...scenario.workload!, ignoresDesiredMinReplicas: true } };
    const evaluations: Evaluation[] = [];
    const failBack = run(
      simulate(ignoring, { policies: ['mco-fail-back'], onEvaluation: (e) => evaluations.push(e) }),
      'mco-fail-back',
    );
    // The floor F7 asks of us-central1 never reaches its HPA.
    const floored = evaluations.filter((e) =>
      e.decision.status.clusters?.some((c) => c.name === 'us-central1' && c.desiredMinReplicas !== undefined),
    );
    expect(floored.length).toBeGreaterThan(0);
    expect(evaluations.every((e) => (signalOf(e, 'fleet/us-central1')?.hpa?.minReplicas ?? 2) === 2)).toBe(true);
    // Each probe ends within its bound (drain.stepIntervalSeconds + failBack.stabilizationWindowSeconds).
    const probes = evaluations.flatMap((e) => {
      const p = e.decision.status.failBack?.probe;
      return p ? [[Date.parse(p.since), e.input.now.getTime()] as const] : [];
    });
    expect(probes.length).toBeGreaterThan(0);
    for (const [since, at] of probes) expect(at - since).toBeLessThan(660_000);
    expect(transitions(failBack).some((t) => t.reason.startsWith('fail-back:'))).toBe(false);
    expect(failBack.summary.failBack).toMatchObject({ failBacks: 0, cycles: 0 });
  });

  it('runs "mco with fail-back" by default only when the placement autoscales and does not enable fail-back itself', () => {
    const failBack = withBehavior('gpu-stockout', { failBack: { enabled: true } });
    expect(defaultPolicies(failBack)).toEqual(['mco', 'mco-v0.2', 'pick-n', 'always-on']);
    const scenario = loadScenario('lose-eligibility');
    expect(defaultPolicies(scenario)).toEqual(['mco', 'mco-fail-back', 'mco-v0.2', 'pick-n', 'always-on']);
    const noScaling: Scenario = {
      ...scenario,
      placement: { ...scenario.placement, spec: { ...scenario.placement.spec, scaling: undefined } },
    };
    expect(defaultPolicies(noScaling)).toEqual(['mco', 'mco-v0.2', 'pick-n', 'always-on']);
  });

  // Each dip of the hourly swing is shorter than 1800 s of continuous room (rule F2) below the
  // ceiling, so with that window fail-back never starts: no cycle at all, the safest outcome.
  it.each([
    [0, 4, true],
    [600, 2, true],
    [1800, 1.1, false],
  ])(
    'fail-back-flapping with a %is window: at most one fail-back/reactivation cycle starts within any window, and fewer per hour as it grows',
    (window, maxPerHour, cycles) => {
      // A one-minute peak lookback: the recent peak no longer holds fail-back back, the window alone bounds it.
      const scenario = withBehavior('fail-back-flapping', {
        failBack: { enabled: true, stabilizationWindowSeconds: window, peakLookbackSeconds: 60 },
      });
      const result = simulate(scenario, { policies: ['mco'] });
      const outcome = run(result, 'mco').summary.failBack!;
      const hours = scenario.duration / 3600;
      expect(outcome.windowSeconds).toBe(window);
      expect(outcome.cycles > 0).toBe(cycles);
      expect(outcome.maxCyclesPerWindow).toBe(cycles ? 1 : 0);
      expect(outcome.cycles / hours).toBeLessThanOrEqual(maxPerHour);
      if (window > 0) expect(outcome.cycles / hours).toBeLessThanOrEqual(3600 / window);
    },
  );
});

describe('output', () => {
  const result = simulate(loadScenario('gpu-stockout'));

  it('prints every decision of mco with its time, transition id and reason, and the scenario events', () => {
    const text = formatConsole(result);
    for (const entry of result.runs[0]!.timeline) expect(text).toContain(formatTimelineEntry(entry));
    expect(formatTimeline(result.runs[0]!).split('\n').slice(0, 5)).toEqual([
      '00:00:00  P1  fleet/us-central1  (none) -> ACTIVE: headroom 0 < min 1: added the highest-priority eligible cluster',
      '01:15:00  --  stockout: no new nodes can be provisioned in region us-central1 (fleet/us-central1)',
      '01:16:00  ..  fleet/us-central1: cluster-autoscaler FailedScaleUp (failed to increase node pool size by 1: out of resources (stockout)); 1 pod(s) pending',
      '01:16:00  P1  fleet/us-east4  (none) -> ACTIVE: headroom 0 < min 1: added the highest-priority eligible cluster',
      '06:00:00  --  capacity recovered: nodes can be provisioned again in region us-central1 (fleet/us-central1)',
    ]);
  });

  it('prints the comparison with one column per policy and one row per metric, and can leave out the timeline', () => {
    const text = formatConsole(result, { timeline: false });
    expect(text).not.toContain('P1');
    const lines = text.split('\n');
    expect(lines[0]).toMatch(
      /^Simulating gpu-stockout \(seed 7\): 12h00m at 30s ticks, 4 clusters, placement default\/gemma-inference$/,
    );
    expect(
      lines
        .slice(4)
        .filter(Boolean)
        .map((l) => l.replace(/\s{2,}.*/, '')),
    ).toEqual([
      'unserved requests (%)',
      'unserved demand (pending-pod-minutes)',
      'cluster-hours (workload deployed)',
      'idle cluster-hours (above need)',
      'idle replica-hours (above need)',
      'GPU node-hours',
      'GPU cost (node-hours × gpuHourCost)',
      'hours on non-preferred clusters',
      'transitions',
      'fail-backs',
      'fail-back/reactivation cycles per hour (most in one window)',
      'stockout at 01:15:00 (region us-central1): time to restored headroom',
    ]);
    expect(lines.slice(1, 4)).toEqual([
      '',
      'Summary:',
      expect.stringMatching(
        /^\s+mco\s+mco with fail-back\s+MCO v0.2 as documented\s+pick-N \(n=1\)\s+all eligible clusters always on$/,
      ),
    ]);
  });

  it('writes a self-contained report: no script, no external resource', () => {
    const html = renderReport(result);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|src=|url\(|@import/i);
    // Two cumulative charts, then per policy: lanes, demand and served, replicas, pending pods.
    expect(html.match(/<svg class="chart"/g)?.length).toBe(2 + 5 * 4);
  });
});
