import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, aSteadySignal } from '@mco/core/testing';
import { type PlacementSpec } from '@mco/core';
import {
  nextProvenReplicas,
  nextRecentPeaks,
  PEAK_PERIODS,
  unprovenBecause,
  type FailBackCluster,
} from '../src/scaling/fail-back.js';
import { UNKNOWN_SIGNAL } from '../src/scaling/signals.js';
import { MAX_PROVEN_REPLICAS } from '../src/api/placement.js';
import {
  afterStockout,
  at,
  explainOf,
  listed,
  moves,
  NOW,
  run,
  runThroughProbe,
  states,
  steady,
  type Case,
} from './helpers.js';

// Rule F2's recent peak and rising load, F4 during a fail-back drain, and
// rule M1 (docs/placement-rules.md §10.3 and §10.10). fleet/a (HPA max 10) is
// preferred over fleet/b.

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const WINDOW = 600;
const LOOKBACK = 7200;

const spec = (failBack = true): PlacementSpec =>
  anAutoscalingSpec(1, {
    useDraining: true,
    behavior: { scaleIn: { cooldownSeconds: 300 }, ...(failBack ? { failBack: { enabled: true } } : {}) },
  });
const peakOf = (replicas: number, ago: number) => ({ since: at(NOW - ago), replicas });

/** A table row: the moves after the probe, and what `mco explain` says on fleet/b. */
function checkRow({ input, moves: expected, why }: { input: Case; moves: string[]; why?: RegExp }): void {
  const d = runThroughProbe(input);
  expect(moves(d)).toEqual(expected);
  if (why)
    expect(
      explainOf(input)
        .clusters.find((c) => c.cluster === 'fleet/b')
        ?.notes.join('\n'),
    ).toMatch(why);
}

describe('nextRecentPeaks: the most and fewest replicas needed per eighth of the lookback, bounded', () => {
  const ms = (s: number) => Date.parse(at(s));
  const period = (replicas: number, ago: number, fewest = replicas) => ({ ...peakOf(replicas, ago), fewest });
  it.each([
    {
      name: 'the first evaluation starts a period',
      previous: undefined,
      needed: 7,
      expected: [period(7, 0)],
    },
    {
      name: 'within the newest period it keeps the most and the fewest seen',
      previous: [period(9, 300)],
      needed: 7,
      expected: [period(9, 300, 7)],
    },
    {
      name: 'a higher need raises the newest period',
      previous: [period(5, 300)],
      needed: 7,
      expected: [period(7, 300, 5)],
    },
    {
      name: 'a period kept before mco kept the fewest takes it from then',
      previous: [peakOf(9, 300)],
      needed: 10,
      expected: [period(10, 300, 9)],
    },
    {
      name: 'after an eighth of the lookback a new period starts',
      previous: [period(9, LOOKBACK / PEAK_PERIODS)],
      needed: 4,
      expected: [period(9, LOOKBACK / PEAK_PERIODS), period(4, 0)],
    },
    {
      name: 'a period that ended before the lookback is dropped',
      previous: [period(20, LOOKBACK + LOOKBACK / PEAK_PERIODS), period(9, 1000)],
      needed: 4,
      expected: [period(9, 1000), period(4, 0)],
    },
    {
      name: 'a missing signal records nothing and keeps what was',
      previous: [period(9, 1000)],
      needed: undefined,
      expected: [period(9, 1000)],
    },
  ])('$name', ({ previous, needed, expected }) => {
    expect(nextRecentPeaks(previous, needed, ms(NOW), LOOKBACK)).toEqual(expected);
  });

  it('never keeps more than PEAK_PERIODS + 1 periods, however often it is called', () => {
    let peaks: { since: string; replicas: number }[] = [];
    for (let t = 0; t < 3 * LOOKBACK; t += 30) peaks = nextRecentPeaks(peaks, t % 97, ms(NOW + t), LOOKBACK);
    expect(peaks.length).toBeLessThanOrEqual(PEAK_PERIODS + 1);
    expect(peaks.length).toBeGreaterThanOrEqual(PEAK_PERIODS);
  });
});

describe('F2: fail-back waits for room for the recent peak, and while load rises', () => {
  it.each<{ name: string; input: Case; moves: string[]; why?: RegExp }>([
    {
      name: 'room for the replicas moved but not for the recent peak (a holds 10, the workload needed 13): waits',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(13, 1800)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: the preferred clusters hold 10 replica\(s\) at their HPA maximum, and the workload needed 13 within the last 7200s/,
    },
    {
      name: 'a peak that fits (10 in 10): moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(10, 1800)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'a peak older than the lookback no longer counts: moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(13, LOOKBACK + 1000)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: "load rising (a's HPA asks for 5, runs 2): waits, and the room window restarts",
      input: {
        spec: spec(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [
          steady('fleet/a', 2, { hpa: { ...aSteadySignal('a', '').hpa!, currentReplicas: 2, desiredReplicas: 5 } }),
          steady('fleet/b', 3),
        ],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: load is rising: fleet\/a's HPA asks for 5 replica\(s\), it runs 2/,
    },
    {
      name: "the fallback's own load rising (b's HPA asks for 5, runs 3, below its maximum): waits, and the room window restarts",
      input: {
        spec: spec(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [
          steady('fleet/a', 2),
          steady('fleet/b', 3, { hpa: { ...aSteadySignal('b', '').hpa!, currentReplicas: 3, desiredReplicas: 5 } }),
        ],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: load is rising: fleet\/b's HPA asks for 5 replica\(s\), it runs 3/,
    },
    {
      name: 'the fallback asking for more at its capacity ceiling (pods pending on a FailedScaleUp): load a can take, moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [
          steady('fleet/a', 2),
          steady('fleet/b', 3, {
            hpa: { ...aSteadySignal('b', '').hpa!, currentReplicas: 3, desiredReplicas: 5 },
            pendingPods: 2,
            failedScaleUp: true,
          }),
        ],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'a fallback whose signal has no readyReplicas: the HPA tells its need, and fail-back still moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(9, 1800)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3, { readyReplicas: undefined })],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'a preferred cluster whose source declares it never reports readyReplicas: fail-back does not start, and says why',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(9, 1800)] }),
        profiles: fleet,
        signals: [
          steady('fleet/a', 2, { readyReplicas: undefined, reportsReadyReplicas: false }),
          steady('fleet/b', 3, { readyReplicas: undefined, reportsReadyReplicas: false }),
        ],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: fleet\/a's signal source does not report readyReplicas: a fail-back drain could not check that it serves before each step/,
    },
    {
      name: 'no readyReplicas from a source that declares nothing: no fail-back either (a voluntary move never learns), and it says so',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(9, 1800)] }),
        profiles: fleet,
        signals: [
          steady('fleet/a', 2, { readyReplicas: undefined }),
          steady('fleet/b', 3, { readyReplicas: undefined }),
        ],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: fleet\/a's signal has no readyReplicas: a fail-back drain could not check that it serves before each step/,
    },
  ])('$name', checkRow);

  it('records the workload replicas of every evaluation in status.failBack.recentPeaks', () => {
    const d = run({
      spec: spec(),
      status: afterStockout(WINDOW, { recentPeaks: [peakOf(13, 1800)] }),
      profiles: fleet,
      signals: [steady('fleet/a', 4), steady('fleet/b', 3)],
      now: NOW,
    });
    expect(d.status.failBack?.recentPeaks).toEqual([peakOf(13, 1800), { ...peakOf(7, 0), fewest: 7 }]);
  });
});

describe('F2: room seen, not assumed: a preferred cluster counts at most its proven size toward the recent peak', () => {
  // The recent peak of 9 an hour and a half ago, then a trough: the periods kept cover the lookback.
  const trough = [peakOf(9, 6600), peakOf(9, 5400), peakOf(4, 3600), peakOf(5, 1800), peakOf(5, 900)].map((p) => ({
    ...p,
    fewest: p.replicas,
  }));
  const proven = (replicas: number) => [{ cluster: 'fleet/a', replicas }];
  it.each<{ name: string; input: Case; moves: string[]; why?: RegExp }>([
    {
      name: 'a was seen running 6 ready at most and the load fell since the peak of 9: waits, though its HPA holds 10',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: trough, provenReplicas: proven(6) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: the preferred clusters have been seen running 6 ready replica\(s\) at most \(status\.failBack\.provenReplicas\), short of the 9 the workload needed within the last 7200s, and its load fell to 4 in that time: fail-back counts only room seen serving/,
    },
    {
      name: 'a was seen running 9: moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: trough, provenReplicas: proven(9) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'never seen (no proven size, e.g. listed after the stockout) with the load steady at its peak for the whole lookback: moves (rule F6 shows the room as it moves)',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, {
          recentPeaks: trough.map((p) => ({ ...p, replicas: 5, fewest: 5 })),
          provenReplicas: [],
        }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'the periods kept reach back only half the lookback (fail-back just turned on): the load over them counts',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, {
          recentPeaks: trough.slice(3).map((p) => ({ ...p, fewest: 5 })),
          provenReplicas: [],
        }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'a peak kept before mco kept the fewest counts as a dip (no fewest): waits for the proven size',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, {
          recentPeaks: trough.map(({ fewest: _, ...p }) => ({ ...p, replicas: 5 })),
          provenReplicas: proven(2),
        }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: [],
      why: /and its load fell to 0 in that time/,
    },
  ])('$name', checkRow);

  it.each([
    { proven: 10, low: 2, peak: 11, waits: false },
    { proven: 10, low: 2, peak: 12, waits: true },
    { proven: 2, low: 10, peak: 11, waits: false },
    { proven: 2, low: 10, peak: 12, waits: true },
  ])(
    'within the HPA tolerance (10%): seen $proven, the load at least $low, a peak of $peak: waits $waits',
    ({ proven, low, peak, waits }) => {
      const a: FailBackCluster = {
        key: 'fleet/a',
        state: 'ACTIVE',
        eligible: true,
        signal: { ...UNKNOWN_SIGNAL, fresh: true, maxReplicas: 20 },
        belowCeilingSince: undefined,
        reason: undefined,
        lastTransitionTime: at(0),
        proven,
      };
      expect(unprovenBecause([a], { replicas: peak, low, lookbackSeconds: LOOKBACK }) !== undefined).toBe(waits);
    },
  );

  it("records each listed cluster's most ready replicas in status.failBack.provenReplicas, and drops a cluster no longer listed", () => {
    const status = afterStockout(WINDOW, {
      provenReplicas: [
        { cluster: 'fleet/a', replicas: 10 },
        { cluster: 'fleet/b', replicas: 2 },
        { cluster: 'fleet/gone', replicas: 7 },
      ],
    });
    const d = run({
      spec: spec(),
      status,
      profiles: fleet,
      signals: [steady('fleet/a', 4), steady('fleet/b', 3)],
      now: NOW,
    });
    expect(d.status.failBack?.provenReplicas).toEqual([
      { cluster: 'fleet/a', replicas: 10 },
      { cluster: 'fleet/b', replicas: 3 },
    ]);
    // Past 64 listed clusters the smallest go (the CRD's bound): they count 0, and fail-back waits longer.
    const many = Array.from({ length: 70 }, (_, i) => ({ key: `fleet/m${String(i).padStart(2, '0')}`, replicas: i }));
    const kept = nextProvenReplicas(
      undefined,
      many.map((m) => ({ key: m.key, signal: { ...UNKNOWN_SIGNAL, fresh: true, readyReplicas: m.replicas } })),
    );
    expect(kept).toHaveLength(MAX_PROVEN_REPLICAS);
    expect(kept[0]).toEqual({ cluster: 'fleet/m06', replicas: 6 });
    // A stale signal raises nothing.
    const stale = run({
      spec: spec(),
      status,
      profiles: fleet,
      signals: [steady('fleet/a', 4), { ...steady('fleet/b', 9), observedAt: at(NOW - 3600) }],
      now: NOW,
    });
    expect(stale.status.failBack?.provenReplicas).toContainEqual({ cluster: 'fleet/b', replicas: 2 });
  });
});

describe('F2: a node size limit caps the room fail-back counts on, for the peak lookback', () => {
  const limitOf = (cluster: string, replicas: number, ago: number) => ({
    cluster,
    replicas,
    observedAt: at(NOW - ago),
  });
  it.each<{ name: string; input: Case; moves: string[]; why?: RegExp }>([
    {
      name: "a's node pool held 8 at a size limit an hour ago, the workload needed 9: waits, though its HPA holds 10",
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(9, 1800)], nodeLimits: [limitOf('fleet/a', 8, 3600)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: the preferred clusters hold 8 replica\(s\) at their HPA maximum or node limit, and the workload needed 9 within the last 7200s .*\(fleet\/a's node pool held 8 at a node size limit at /,
    },
    {
      name: 'the same limit with a peak that fits (8 in 8): moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { recentPeaks: [peakOf(8, 1800)], nodeLimits: [limitOf('fleet/a', 8, 3600)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'a limit older than the lookback no longer counts: moves',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, {
          recentPeaks: [peakOf(9, 1800)],
          nodeLimits: [limitOf('fleet/a', 8, LOOKBACK + 60)],
        }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
    {
      name: 'the limit also caps the room for the replicas moved (a runs 6, held 8): waits',
      input: {
        spec: spec(),
        status: afterStockout(WINDOW, { nodeLimits: [limitOf('fleet/a', 8, 600)] }),
        profiles: fleet,
        signals: [steady('fleet/a', 6), steady('fleet/b', 3)],
        now: NOW,
      },
      moves: [],
      why: /fail-back waits for room: the preferred clusters have room for 2 replica\(s\), 3 would move/,
    },
  ])('$name', checkRow);

  it.each([
    {
      name: 'pods waiting on a size limit record what the pool holds: current less pending',
      previous: [],
      signal: steady('fleet/a', 10, { pendingPods: 3, failedScaleUp: true, nodeLimitReached: true, readyReplicas: 7 }),
      expected: [limitOf('fleet/a', 7, 0)],
    },
    {
      name: 'a stockout (a failed scale-up that is not a size limit) records nothing',
      previous: [],
      signal: steady('fleet/a', 10, { pendingPods: 3, failedScaleUp: true, readyReplicas: 7 }),
      expected: [],
    },
    {
      name: 'a size limit with no pod waiting records nothing',
      previous: [],
      signal: steady('fleet/a', 10, { pendingPods: 0, nodeLimitReached: true }),
      expected: [],
    },
    {
      name: 'a pool later seen holding more than its record raises it, and keeps its time',
      previous: [limitOf('fleet/a', 7, 900)],
      signal: steady('fleet/a', 9),
      expected: [limitOf('fleet/a', 9, 900)],
    },
    {
      name: 'a record past the lookback is dropped',
      previous: [limitOf('fleet/a', 7, LOOKBACK + 30)],
      signal: steady('fleet/a', 2),
      expected: [],
    },
  ])('status.failBack.nodeLimits: $name', ({ previous, signal, expected }) => {
    const d = run({
      spec: spec(),
      status: afterStockout(undefined, { recentPeaks: [peakOf(13, 1800)], nodeLimits: previous }),
      profiles: fleet,
      signals: [signal, steady('fleet/b', 3)],
      now: NOW,
    });
    expect(d.status.failBack?.nodeLimits ?? []).toEqual(expected);
  });
});

describe('F4 during a fail-back drain: a burst beyond the recent peak reactivates the cluster', () => {
  const draining = (peak: number): Case => ({
    spec: spec(),
    status: {
      clusters: [
        listed('fleet/a', 'ACTIVE', 0),
        listed('fleet/b', 'SCALING_IN', NOW - 300, {
          reason: 'FailBack',
          draining: { desiredMaxReplicas: 2, lastReplicaCountDecrease: at(NOW - 60) },
        }),
      ],
      failBack: { lastFailBackCluster: 'fleet/b', lastFailBackTime: at(NOW - 300), recentPeaks: [peakOf(peak, 600)] },
    },
    profiles: fleet,
    // a: 8 replicas, 4 ready, 4 pending: a burst (pending ≥ half the ready ones); b drained to 2.
    signals: [steady('fleet/a', 8, { readyReplicas: 4, pendingPods: 4 }), steady('fleet/b', 2)],
    now: NOW,
  });

  it('needs 10 where the peak was 8: reactivated (a cycle)', () => {
    const d = run(draining(8));
    expect(states(d)).toEqual(['fleet/a ACTIVE', 'fleet/b ACTIVE']);
    expect(d.transitions[0]?.reason).toMatch(/above its recent peak of 8: reactivated to take the burst/);
    expect(d.status.failBack?.backoffLevel).toBe(1);
  });

  it('needs 10 where the peak was 10: the handed-over load, not a burst: the drain goes on', () => {
    expect(states(run(draining(10)))).toEqual(['fleet/a ACTIVE', 'fleet/b SCALING_IN']);
  });
});

describe('M1: a fallback at its HPA minimum is scaled in when the preferred clusters hold the recent peak', () => {
  /**
   * b runs its HPA minimum (2), asking for no more, since `since` seconds ago;
   * a has been below its ceiling (no pending pods, no FailedScaleUp) for `calm` seconds (null: never seen so).
   */
  const atMinimum = (
    failBack: boolean,
    since: number,
    peak?: number,
    calm: number | null = LOOKBACK,
    ready: 'reported' | 'declared absent' | 'absent' = 'reported',
  ): Case => ({
    spec: spec(failBack),
    status: {
      clusters: [
        listed('fleet/a', 'ACTIVE', 0, calm === null ? {} : { belowCeilingSince: at(NOW - calm) }),
        listed('fleet/b', 'ACTIVE', 3000, { reason: 'Added', scaleInCandidateSince: at(NOW - since) }),
      ],
      lastAdditionTime: at(3000),
      ...(peak !== undefined ? { failBack: { recentPeaks: [peakOf(peak, 1800)] } } : {}),
    },
    profiles: fleet,
    signals: [
      steady('fleet/a', 3),
      steady('fleet/b', 2, {
        hpa: { ...aSteadySignal('b', '').hpa!, currentReplicas: 2, desiredReplicas: 2, minReplicas: 2 },
      }),
    ].map(({ readyReplicas, ...s }) =>
      ready === 'reported'
        ? { ...s, readyReplicas }
        : ready === 'declared absent'
          ? { ...s, reportsReadyReplicas: false }
          : s,
    ),
    now: NOW,
  });
  const notesOnB = (c: Case) =>
    explainOf(c)
      .clusters.find((x) => x.cluster === 'fleet/b')
      ?.notes.join('\n');

  it.each([
    { name: 'for the scale-in window, the peak fitting: scaled in (P2)', c: atMinimum(true, 300, 8), moved: true },
    { name: 'the recent peak does not fit (13 > 10): kept', c: atMinimum(true, 300, 13), moved: false },
    { name: 'not yet for the scale-in window: kept', c: atMinimum(true, 100, 8), moved: false },
    { name: 'fail-back off (no recent peak kept): §4 alone decides, kept', c: atMinimum(false, 300), moved: false },
    {
      name: 'a met its ceiling (or had pods pending) within the lookback: its HPA maximum may not be what it can run, kept',
      c: atMinimum(true, 300, 8, LOOKBACK - 60),
      moved: false,
    },
    { name: 'a has never been seen below its ceiling: kept', c: atMinimum(true, 300, 8, null), moved: false },
    // Unlike fail-back (rule F2), M1 moves only a minimum, and its drain is any scale-in's (rule D1).
    {
      name: 'a source that declares it reports no readyReplicas: scaled in all the same',
      c: atMinimum(true, 300, 8, LOOKBACK, 'declared absent'),
      moved: true,
    },
    {
      name: 'a source that sends no readyReplicas and says nothing of it: scaled in all the same',
      c: atMinimum(true, 300, 8, LOOKBACK, 'absent'),
      moved: true,
    },
  ])('$name', ({ c, moved }) => {
    expect(moves(run(c))).toEqual(moved ? ['P2 fleet/b ACTIVE->SCALING_IN'] : []);
  });

  it('mco explain says why rule M1 counts the fallback, or what keeps it', () => {
    expect({
      counted: notesOnB(atMinimum(true, 100, 8)),
      noRoom: notesOnB(atMinimum(true, 300, 13)),
      notCalm: notesOnB(atMinimum(true, 300, 8, LOOKBACK - 60)),
      never: notesOnB(atMinimum(true, 300, 8, null)),
      off: notesOnB(atMinimum(false, 300)),
    }).toEqual({
      counted: expect.stringContaining(
        'counts as wanting scale-in: fleet/b runs its HPA minimum (2) and the preferred clusters have room for it (rule M1)',
      ),
      noRoom: expect.stringContaining(
        'not scaled in at its HPA minimum (rule M1): the preferred clusters hold 10 replica(s) at their HPA maximum, and the workload needed 13 within the last 7200s',
      ),
      notCalm: expect.stringContaining(
        `not scaled in at its HPA minimum (rule M1): fleet/a has been below its ceiling only since ${at(NOW - LOOKBACK + 60)}, not for the whole lookback (7200s, failBack.peakLookbackSeconds)`,
      ),
      never: expect.stringContaining(
        'not scaled in at its HPA minimum (rule M1): fleet/a is not recorded below its ceiling (status.clusters[].belowCeilingSince)',
      ),
      off: expect.not.stringContaining('rule M1'),
    });
  });
});
