import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, aSignal, anUnreachableSignal } from '@mco/core/testing';
import { decide, drainStepSize, type Decision, type PlacementSpec, type PlacementStatus, type Signal } from '@mco/core';
import {
  backoffLevelAt,
  failBackWindowSeconds,
  recordCycle,
  recordFailBack,
  type BackoffSettings,
} from '../src/scaling/fail-back.js';
import { isAtCapacityCeiling, wantsScaleIn } from '../src/scaling/signals.js';

// Properties of the rules of docs/placement-rules.md over random timelines:
// four clusters (priority c0 > c1 > c2 > c3), random observations, random
// time steps, each evaluation fed the previous status, as the controller does.

const KEYS = ['fleet/c0', 'fleet/c1', 'fleet/c2', 'fleet/c3'] as const;
const PROFILES = KEYS.map((k) => aClusterProfile(k));
const T0 = Date.UTC(2026, 0, 1);
const iso = (s: number) => new Date(T0 + s * 1000).toISOString().replace('.000Z', 'Z');

type Observation =
  | 'ceiling'
  | 'steady'
  | 'growing'
  | 'pending'
  | 'scale-in'
  | 'floor-pending'
  | 'stockout'
  | 'drained'
  | 'missing'
  | 'unreachable';
const OBSERVATIONS: Observation[] = [
  'ceiling',
  'steady',
  'growing',
  'pending',
  'scale-in',
  'floor-pending',
  'stockout',
  'drained',
  'missing',
  'unreachable',
];

interface Step {
  readonly advance: number;
  /** A calm stretch instead of this step: this many evaluations a minute apart, every cluster steady. */
  readonly calm: number;
  readonly observations: readonly { readonly o: Observation; readonly replicas: number; readonly ready: number }[];
}
interface Timeline {
  readonly min: number;
  readonly maxClusters: number;
  readonly failBack: boolean;
  readonly standby: number;
  readonly steps: readonly Step[];
}

const arbTimeline = (maxSteps: number): fc.Arbitrary<Timeline> =>
  fc.record({
    min: fc.integer({ min: 1, max: 2 }),
    maxClusters: fc.integer({ min: 0, max: 4 }),
    failBack: fc.boolean(),
    standby: fc.integer({ min: 0, max: 2 }),
    steps: fc.array(
      fc.record({
        advance: fc.integer({ min: 1, max: 900 }),
        // Fail-back and drains need stretches of room: some steps are a calm stretch of 3 to 25 minutes.
        calm: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, fc.integer({ min: 3, max: 25 })),
        observations: fc.tuple(
          ...KEYS.map(() =>
            fc.record({
              // Mostly calm: fail-back and drains need stretches of room.
              o: fc.oneof(
                { weight: 4, arbitrary: fc.constant<Observation>('steady') },
                fc.constantFrom(...OBSERVATIONS),
              ),
              replicas: fc.integer({ min: 1, max: 10 }),
              ready: fc.integer({ min: 0, max: 10 }),
            }),
          ),
        ),
      }),
      { minLength: 1, maxLength: maxSteps, size: 'max' },
    ),
  });

/**
 * A signal from a source that reports everything (HPA max 10, ready replicas, pending pods, FailedScaleUp).
 * `floor`: the desiredMinReplicas the previous decision gave the cluster; a steady cluster runs it, ready.
 */
function signalOf(
  key: string,
  { o, replicas, ready }: Step['observations'][number],
  now: number,
  floor = 0,
): Signal | undefined {
  const at = iso(now - 5);
  const full = (current: number, desired: number, min: number, limited: string, pendingPods = 0) =>
    aSignal(key, at, {
      hpa: {
        currentReplicas: current,
        desiredReplicas: desired,
        minReplicas: min,
        maxReplicas: 10,
        scalingLimited: { status: limited === 'DesiredWithinRange' ? 'False' : 'True', reason: limited },
      },
      readyReplicas: Math.min(ready, current),
      pendingPods,
      failedScaleUp: pendingPods > 0 && limited === 'TooManyReplicas',
      workloadHealthy: true,
    });
  switch (o) {
    case 'ceiling':
      return full(10, 12, 1, 'TooManyReplicas');
    case 'steady': {
      const running = Math.max(replicas, floor);
      return {
        ...full(running, running, 1, 'DesiredWithinRange'),
        readyReplicas: Math.max(Math.min(ready, running), floor),
      };
    }
    case 'growing':
      return full(replicas, Math.min(10, replicas + 3), 1, 'DesiredWithinRange');
    case 'pending':
      return full(replicas, replicas, 1, 'DesiredWithinRange', 2);
    case 'scale-in':
      return full(2, 2, 2, 'TooFewReplicas');
    case 'floor-pending':
      // Held at its minimum of 3 by TooFewReplicas, one pod of that floor pending (a pool full of other workloads).
      return full(3, 3, 3, 'TooFewReplicas', 1);
    case 'stockout':
      // Two pods the node autoscaler failed to place: a ceiling that waiting does not lift.
      return { ...full(replicas, Math.min(10, replicas + 2), 1, 'DesiredWithinRange', 2), failedScaleUp: true };
    case 'drained':
      return full(1, 1, 1, 'TooFewReplicas');
    case 'unreachable':
      return anUnreachableSignal(key, at, 2);
    case 'missing':
      return undefined;
  }
}

const specOf = (t: Timeline): PlacementSpec =>
  anAutoscalingSpec(t.min, {
    maxClusters: t.maxClusters,
    useDraining: true,
    warmStandbyClusters: t.standby,
    behavior: {
      scaleIn: { stabilizationWindowSeconds: 120, cooldownSeconds: 120 },
      drain: { stepIntervalSeconds: 60, stepPercent: 50 },
      ...(t.failBack
        ? {
            failBack: {
              enabled: true,
              stabilizationWindowSeconds: 300,
              lingerSeconds: 600,
              backoffDecaySeconds: 3600,
              // Shorter than the default, so that random timelines (steps of up to 15 minutes) reach fail-back often.
              peakLookbackSeconds: 900,
            },
          }
        : {}),
    },
  });

interface Evaluated {
  readonly now: number;
  readonly signals: readonly Signal[];
  readonly before: PlacementStatus | undefined;
  readonly decision: Decision;
}

/** The steps with each calm stretch written out: every cluster steady at 1-3 replicas, all ready. */
const expand = (steps: readonly Step[]): Step[] =>
  steps.flatMap((step) =>
    step.calm === 0
      ? [step]
      : Array.from({ length: step.calm }, () => ({
          advance: 60,
          calm: 0,
          observations: step.observations.map((o) => ({
            o: 'steady' as const,
            replicas: 1 + (o.replicas % 3),
            ready: 10,
          })),
        })),
  );

function runTimeline(t: Timeline): Evaluated[] {
  const spec = specOf(t);
  const out: Evaluated[] = [];
  let status: PlacementStatus | undefined;
  let now = 0;
  const first: Step = { advance: 0, calm: 0, observations: KEYS.map(() => ({ o: 'steady', replicas: 3, ready: 3 })) };
  for (const step of [first, ...expand(t.steps)]) {
    now += step.advance;
    const floorOf = (k: string) => status?.clusters?.find((c) => `${c.namespace}/${c.name}` === k)?.desiredMinReplicas;
    const signals = KEYS.flatMap((k, i) => signalOf(k, step.observations[i]!, now, floorOf(k)) ?? []);
    const decision = decide({
      now: new Date(T0 + now * 1000),
      placement: { metadata: { name: 'p', namespace: 'default', generation: 1 }, spec, status },
      clusterProfiles: PROFILES,
      signals,
    });
    out.push({ now, signals, before: status, decision });
    status = decision.status;
  }
  return out;
}

const keyOf = (c: { namespace?: string | undefined; name: string }) => `${c.namespace}/${c.name}`;
const isFailBack = (t: Decision['transitions'][number]) => t.id === 'P2' && t.reason.startsWith('fail-back:');

/** ACTIVE clusters below their ceiling and reachable, as the engine counts headroom. */
function headroomOf(e: Evaluated): number {
  const byKey = new Map(e.signals.map((s) => [s.cluster, s]));
  return (e.decision.status.clusters ?? []).filter(
    (c) =>
      c.state === 'ACTIVE' &&
      c.atCapacityCeiling !== true &&
      (byKey.get(keyOf(c))?.transportError?.consecutivePolls ?? 0) < 2,
  ).length;
}

const RUNS = { numRuns: 100 };

describe('rules of docs/placement-rules.md over random timelines', () => {
  it('fail-back, drain and standby never leave fewer ACTIVE-and-below-ceiling clusters than the minimum', () => {
    let seen = { failBack: 0, standby: 0 };
    fc.assert(
      fc.property(arbTimeline(40), (t) => {
        for (const e of runTimeline(t)) {
          const d = e.decision;
          const added = new Set(d.transitions.filter((x) => x.id === 'P1').map((x) => x.cluster));
          for (const tr of d.transitions) {
            if (isFailBack(tr)) {
              seen.failBack++;
              // A fail-back happens only with headroom to spare: without the cluster it is still >= min.
              expect(headroomOf(e)).toBeGreaterThanOrEqual(t.min);
              // And only when it moves load (rule F5): the cluster ran more than its warm size, the HPA
              // minReplicas of the highest-priority ACTIVE cluster, so more than the least of them.
              const signals = new Map(e.signals.map((x) => [x.cluster, x]));
              const mins = (d.status.clusters ?? [])
                .filter((c) => c.state === 'ACTIVE')
                .map((c) => signals.get(keyOf(c))?.hpa?.minReplicas ?? Infinity);
              expect(signals.get(tr.cluster)?.hpa?.currentReplicas).toBeGreaterThan(Math.min(...mins));
            } else if (tr.id === 'P2' && added.has(tr.cluster)) {
              // A standby is a cluster added for it: it never takes an ACTIVE cluster out of the count.
              seen.standby++;
              expect(tr.reason).toMatch(/^warmStandbyClusters \d+: kept warm/);
            }
          }
          // Drain and standby never move an ACTIVE cluster: every ACTIVE -> SCALING_IN is a scale-in,
          // a fail-back, or a standby added in the same evaluation.
          for (const tr of d.transitions.filter((x) => x.id === 'P2')) {
            expect(isFailBack(tr) || tr.reason.startsWith('wanted scale-in') || added.has(tr.cluster)).toBe(true);
          }
          // The standby count is at most what is asked for.
          const standbys = (d.status.clusters ?? []).filter((c) => c.reason === 'WarmStandby').length;
          expect(standbys).toBeLessThanOrEqual(t.standby);
        }
      }),
      // Fail-back needs room for the recent peak (rule F2), which few random timelines give: more runs keep it reached.
      { numRuns: 300 },
    );
    expect(seen.failBack).toBeGreaterThan(5); // the generator does reach fail-back
    expect(seen.standby).toBeGreaterThan(1); // and standby additions
    seen = { failBack: 0, standby: 0 };
  });

  it('the drain inequality holds at every step: the drop so far is covered by the receivers, and a step is one step', () => {
    let steps = 0;
    let paused = 0;
    fc.assert(
      fc.property(arbTimeline(40), (t) => {
        for (const e of runTimeline(t)) {
          const signals = new Map(e.signals.map((s) => [s.cluster, s]));
          const after = e.decision.status.clusters ?? [];
          const receivers = after.filter((c) => c.state === 'ACTIVE').map((c) => signals.get(keyOf(c)));
          for (const c of after) {
            const before = e.before?.clusters?.find((b) => keyOf(b) === keyOf(c));
            const was = before?.draining;
            const now = c.draining;
            if (!was || !now || before!.state !== c.state || before!.lastTransitionTime !== c.lastTransitionTime)
              continue;
            if (now.pausedReason) paused++;
            if (now.desiredMaxReplicas >= was.desiredMaxReplicas) continue;
            steps++;
            // One step of at most stepPercent (50), never below 1.
            expect(was.desiredMaxReplicas - now.desiredMaxReplicas).toBeLessThanOrEqual(
              drainStepSize(was.desiredMaxReplicas, 50),
            );
            expect(now.desiredMaxReplicas).toBeGreaterThanOrEqual(1);
            // Every receiver reports its ready replicas.
            expect(receivers.every((s) => s?.readyReplicas !== undefined)).toBe(true);
            if (was.receiversReadyReplicas === undefined) continue; // counted from this step on
            // The baseline follows the receivers (D1): one that left in this step takes its ready replicas
            // out; one reactivated in this step served its ready replicas before, so they are no growth.
            const stateBefore = (r: { namespace?: string | undefined; name: string }) =>
              e.before?.clusters?.find((b) => keyOf(b) === keyOf(r))?.state;
            const readyOf = (r: { namespace?: string | undefined; name: string }) => {
              const s = signals.get(keyOf(r));
              return s && s.transportError === undefined ? (s.readyReplicas ?? 0) : 0;
            };
            const left = after
              .filter((r) => stateBefore(r) === 'ACTIVE' && (r.state === 'SCALING_IN' || r.state === 'EVICTING'))
              .reduce((sum, r) => sum + readyOf(r), 0);
            const baseline = Math.max(0, was.receiversReadyReplicas - left);
            const ready = after
              .filter((r) => r.state === 'ACTIVE' && stateBefore(r) !== 'SCALING_IN' && stateBefore(r) !== 'EVICTING')
              .reduce((sum, r) => sum + readyOf(r), 0);
            const drop = (was.initialDesiredMaxReplicas ?? was.desiredMaxReplicas) - was.desiredMaxReplicas;
            // Settled: ready for all the HPA wants, nothing pending; or held at its minimum by TooFewReplicas
            // (its load asks at most minReplicas − 1) with that many ready; or waiting on capacity, not on
            // time (pods the node autoscaler failed to place), so long as not every receiver is.
            const onCapacity = (s: Signal) => (s.pendingPods ?? 0) > 0 && s.failedScaleUp === true;
            const settled =
              !(receivers.length > 0 && receivers.every((s) => onCapacity(s!))) &&
              receivers.every(
                (s) =>
                  onCapacity(s!) ||
                  (s!.readyReplicas! >= (s!.hpa?.desiredReplicas ?? Infinity) && (s!.pendingPods ?? 1) === 0) ||
                  (wantsScaleIn(s!) && s!.readyReplicas! >= Math.max(1, (s!.hpa?.minReplicas ?? 1) - 1)),
              );
            // D1's bound: a drain that is not a fail-back steps once it has waited evictionTimeoutSeconds (1800).
            const waitedOut =
              c.reason !== 'FailBack' && e.now - (Date.parse(was.lastReplicaCountDecrease) - T0) / 1000 >= 1800;
            expect(drop <= ready - baseline || settled || waitedOut).toBe(true);
          }
        }
      }),
      RUNS,
    );
    expect(steps).toBeGreaterThan(20); // drains do step
    expect(paused).toBeGreaterThan(5); // and do pause
  });
});

describe('rule T1: a cluster with its ceiling in sight is not headroom', () => {
  // fleet/c0 with any HPA fields, fleet/c1 wanting scale-in for long with min 1: c1 is scaled in exactly
  // when c0 counts as headroom, that is not at its ceiling and without its ceiling in sight (§10.9).
  const arbHpa = fc.record({
    currentReplicas: fc.integer({ min: 0, max: 12 }),
    desiredReplicas: fc.integer({ min: 0, max: 12 }),
    maxReplicas: fc.integer({ min: 1, max: 10 }),
    limited: fc.boolean(),
    ready: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    pending: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    failedScaleUp: fc.boolean(),
  });

  it('scale-in of the other cluster happens exactly when the ceiling is neither reached nor in sight', () => {
    let inSight = 0;
    fc.assert(
      fc.property(arbHpa, (h) => {
        const now = 100_000;
        const c0 = aSignal('fleet/c0', iso(now - 5), {
          hpa: {
            currentReplicas: h.currentReplicas,
            desiredReplicas: h.desiredReplicas,
            minReplicas: 0,
            maxReplicas: h.maxReplicas,
            scalingLimited: { status: h.limited ? 'True' : 'False', reason: 'TooManyReplicas' },
          },
          ...(h.ready !== undefined ? { readyReplicas: h.ready } : {}),
          ...(h.pending !== undefined ? { pendingPods: h.pending } : {}),
          failedScaleUp: h.failedScaleUp,
        });
        const c1 = aSignal('fleet/c1', iso(now - 5), {
          hpa: {
            currentReplicas: 2,
            desiredReplicas: 2,
            minReplicas: 2,
            maxReplicas: 10,
            scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
          },
          readyReplicas: 2,
        });
        const listed = (name: string) => ({
          name,
          namespace: 'fleet',
          state: 'ACTIVE' as const,
          lastTransitionTime: iso(0),
        });
        const d = decide({
          now: new Date(T0 + now * 1000),
          placement: {
            metadata: { name: 'p', namespace: 'default', generation: 1 },
            spec: anAutoscalingSpec(1, { maxClusters: 2 }),
            status: {
              clusters: [{ ...listed('c0') }, { ...listed('c1'), scaleInCandidateSince: iso(0) }],
              lastAdditionTime: iso(0),
            },
          },
          clusterProfiles: PROFILES,
          signals: [c0, c1],
        });
        const sight =
          h.desiredReplicas >= h.maxReplicas &&
          ((h.ready !== undefined && h.ready < h.desiredReplicas) || (h.pending ?? 0) > 0);
        const headroom = !isAtCapacityCeiling(c0) && !sight;
        if (!isAtCapacityCeiling(c0) && sight) inSight++;
        expect(d.transitions.some((x) => x.id === 'P2' && x.cluster === 'fleet/c1')).toBe(headroom);
      }),
      { numRuns: 300 },
    );
    expect(inSight).toBeGreaterThan(1); // the generator does reach rule T1
  });
});

describe('the fail-back backoff', () => {
  const settings: fc.Arbitrary<BackoffSettings> = fc.record({
    stabilizationSeconds: fc.integer({ min: 1, max: 3600 }),
    maxStabilizationSeconds: fc.integer({ min: 0, max: 86_400 }),
    decaySeconds: fc.integer({ min: 1, max: 86_400 }),
  });
  const arbStatus = fc.record(
    { backoffLevel: fc.integer({ min: 0, max: 12 }), lastCycleTime: fc.integer({ min: 0, max: 200_000 }).map(iso) },
    { requiredKeys: [] },
  );
  const window = (s: Parameters<typeof backoffLevelAt>[0], ms: number, b: BackoffSettings) =>
    failBackWindowSeconds(backoffLevelAt(s, ms, b), b);

  it('never shortens within a quiet period: the window is constant between two decays, and never below the base or above the cap', () => {
    fc.assert(
      fc.property(
        settings,
        arbStatus,
        fc.integer({ min: 0, max: 400_000 }),
        fc.integer({ min: 0, max: 400_000 }),
        (b, s, x, y) => {
          const [t1, t2] = [Math.min(x, y), Math.max(x, y)].map((t) => T0 + t * 1000) as [number, number];
          const last = s.lastCycleTime ? Date.parse(s.lastCycleTime) : undefined;
          const period = (t: number) =>
            last === undefined ? 0 : Math.floor(Math.max(0, t - last) / (b.decaySeconds * 1000));
          const [w1, w2] = [window(s, t1, b), window(s, t2, b)];
          if (period(t1) === period(t2)) expect(w2).toBe(w1);
          else expect(w2).toBeLessThanOrEqual(w1); // it decays only across a quiet period
          expect(w1).toBeGreaterThanOrEqual(b.stabilizationSeconds);
          expect(w1).toBeLessThanOrEqual(Math.max(b.stabilizationSeconds, b.maxStabilizationSeconds));
        },
      ),
    );
  });

  it('a cycle never shortens the wait: after it the window is at least what it was, and grows unless capped', () => {
    fc.assert(
      fc.property(settings, arbStatus, fc.integer({ min: 0, max: 400_000 }), (b, s, t) => {
        const ms = T0 + t * 1000;
        const before = window(s, ms, b);
        const failedBack = recordFailBack(s, 'fleet/b', ms, b);
        expect(window(failedBack, ms, b)).toBe(before); // a fail-back itself changes no wait
        const cycled = recordCycle(failedBack, 'fleet/b', ms, b);
        const after = window(cycled, ms, b);
        expect(after).toBeGreaterThanOrEqual(before);
        if (before < Math.max(b.stabilizationSeconds, b.maxStabilizationSeconds)) expect(after).toBeGreaterThan(before);
        expect(recordCycle(failedBack, 'fleet/c', ms, b)).toBe(failedBack); // another cluster: no cycle
      }),
    );
  });
});
