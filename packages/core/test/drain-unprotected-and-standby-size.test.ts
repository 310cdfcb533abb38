import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, anUnreachableSignal, aScaleInSignal, aSignal } from '@mco/core/testing';
import {
  assessSignal,
  sourceReportsReadyReplicas,
  type Decision,
  type Draining,
  type PlacementCluster,
  type Signal,
} from '@mco/core';
import {
  at,
  B_WANTS_SCALE_IN,
  clusterOf,
  condition,
  explainOf,
  FRESH,
  listed,
  moves,
  NOW,
  run,
  type Case,
} from './helpers.js';

// A drain never stalls on a signal source that does not report
// readyReplicas (rule D1, docs/placement-rules.md §4), and a warm standby runs
// at least its size (rule W1, §10.6). fleet/a is preferred over fleet/b over fleet/c.

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const fresh = FRESH;
const stale = NOW - 600;

/** A receiver's fresh signal: its HPA settled at `desired`, `ready` ready (undefined: none in the signal). */
const receiver = (
  key: string,
  ready: number | undefined,
  reports: boolean | undefined,
  observedAt = at(fresh),
  desired = 5,
): Signal =>
  aSignal(key, observedAt, {
    hpa: { currentReplicas: desired, desiredReplicas: desired, minReplicas: 1, maxReplicas: 20 },
    pendingPods: 0,
    failedScaleUp: false,
    ...(ready !== undefined ? { readyReplicas: ready } : {}),
    ...(reports !== undefined ? { reportsReadyReplicas: reports } : {}),
  });
/** fleet/b has wanted scale-in for 1000 s beside fleet/a, with `signals`. */
const scaleInOfB = (spec: Case['spec'], signals: Signal[]): Decision =>
  run({ spec, status: B_WANTS_SCALE_IN, profiles: fleet, signals, now: NOW });
/** Prometheus with its readyReplicas query off: no readyReplicas, declared as a property of the source. */
const unreported = (key: string, observedAt = at(fresh)) => receiver(key, undefined, false, observedAt);

describe('sourceReportsReadyReplicas and declaresReadyReplicas: a property of the source, never of one missing value', () => {
  it.each<{
    name: string;
    signal: Signal | undefined;
    expected: { signal: boolean; assessed: boolean; promised: boolean };
  }>([
    {
      name: 'a signal that declares reportsReadyReplicas: false',
      signal: unreported('fleet/a'),
      expected: { signal: false, assessed: false, promised: false },
    },
    {
      name: 'a signal without the declaration (the default)',
      signal: receiver('fleet/a', undefined, undefined),
      expected: { signal: true, assessed: true, promised: false },
    },
    {
      name: 'a signal that declares reportsReadyReplicas: true',
      signal: receiver('fleet/a', 4, true),
      expected: { signal: true, assessed: true, promised: true },
    },
    {
      name: 'a stale signal that declares false: unknown, so as a source that reports it',
      signal: unreported('fleet/a', at(stale)),
      expected: { signal: false, assessed: true, promised: false },
    },
    {
      name: 'a transport error: unknown, so as a source that reports it',
      signal: anUnreachableSignal('fleet/a', at(fresh)),
      expected: { signal: true, assessed: true, promised: false },
    },
    { name: 'no signal at all', signal: undefined, expected: { signal: true, assessed: true, promised: false } },
  ])('$name', ({ signal, expected }) => {
    const assessed = assessSignal(signal, (Date.UTC(2026, 0, 1) / 1000 + NOW) * 1000, 180);
    expect({
      signal: sourceReportsReadyReplicas(signal),
      assessed: sourceReportsReadyReplicas(assessed),
      promised: assessed.declaresReadyReplicas,
    }).toEqual(expected);
  });
});

describe('D1 on a source without readyReplicas: the drain steps on the clock, unprotected, and says so', () => {
  /** b drains (SCALING_IN) from 8, at `desired`, its last step `ago` seconds back; a (and c) receive. */
  const draining = (desired: number, ago = 60, extra: Partial<Draining> = {}, receivers = ['fleet/a']) => ({
    clusters: [
      ...receivers.filter((k) => k !== 'fleet/c').map((k) => listed(k, 'ACTIVE', 0)),
      listed('fleet/b', 'SCALING_IN', NOW - 600, {
        reason: 'ScaleIn',
        draining: { desiredMaxReplicas: desired, lastReplicaCountDecrease: at(NOW - ago), ...extra },
      }),
      ...(receivers.includes('fleet/c') ? [listed('fleet/c', 'ACTIVE', 0)] : []),
    ],
  });
  const b = (replicas: number) => aSignal('fleet/b', at(fresh), { hpa: { currentReplicas: replicas, maxReplicas: 8 } });
  const input = (status: Case['status'], signals: Signal[]): Case => ({
    spec: anAutoscalingSpec(1, { useDraining: true }),
    status,
    profiles: fleet,
    signals,
    now: NOW,
  });
  /** What a row checks: the transitions, b's drain, the requeue, and what the Satisfied message adds. */
  const outcome = (d: Decision) => ({
    moves: moves(d),
    draining: clusterOf(d, 'fleet/b')?.draining,
    requeue: d.requeueAfterSeconds,
    satisfied: condition(d, 'Satisfied')?.message?.split('; ').slice(1),
  });
  const CLOCK =
    'it steps on the clock of behavior.drain.stepIntervalSeconds (60s) with no ready-replica check (rule D1)';
  const UNPROTECTED = `the signal source of fleet/a does not report readyReplicas: ${CLOCK}`;
  const LEARNED = `the signal source of fleet/a has sent no readyReplicas during this drain and does not declare reportsReadyReplicas: ${CLOCK}`;

  it.each<{ name: string; input: Case; expected: ReturnType<typeof outcome> }>([
    {
      name: "a receiver's source declares it reports no readyReplicas: a due step is taken (8 → 6), marked unprotected",
      input: input(draining(8), [unreported('fleet/a'), b(8)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
          unprotectedReason: 'ReadyReplicasNotReported',
        },
        requeue: 60,
        satisfied: [`fleet/b drains unprotected: ${UNPROTECTED}`],
      },
    },
    {
      name: 'within the interval nothing steps, and the drain still shows it is unprotected',
      input: input(draining(6, 30), [unreported('fleet/a'), b(6)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW - 30),
          currentReplicaCount: 6,
          initialDesiredMaxReplicas: 6,
          unprotectedReason: 'ReadyReplicasNotReported',
        },
        requeue: 30,
        satisfied: [`fleet/b drains unprotected: ${UNPROTECTED}`],
      },
    },
    {
      name: 'the last step reaches 1 and R1 removes b once it runs 1 replica, as MCO does',
      input: input(draining(1, 60, { unprotectedReason: 'ReadyReplicasNotReported' }), [unreported('fleet/a'), b(1)]),
      expected: { moves: ['R1 fleet/b SCALING_IN->-'], draining: undefined, requeue: 170, satisfied: [] },
    },
    {
      name: 'the source declares false but the receiver’s signal is stale: doubt, so no step (ReadyReplicasUnknown)',
      input: input(draining(6), [unreported('fleet/a', at(stale)), b(6)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW - 60),
          currentReplicaCount: 6,
          initialDesiredMaxReplicas: 6,
          pausedReason: 'ReadyReplicasUnknown',
        },
        requeue: 60,
        satisfied: [],
      },
    },
    {
      name: 'a source that declares neither and has sent no readyReplicas during the drain: learned, a due step is taken, unprotected',
      input: input(draining(8), [receiver('fleet/a', undefined, undefined), b(8)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
          unprotectedReason: 'ReadyReplicasNotReported',
        },
        requeue: 60,
        satisfied: [`fleet/b drains unprotected: ${LEARNED}`],
      },
    },
    {
      name: 'a source that declares neither but sent readyReplicas earlier in the drain: a missing value is doubt (ReadyReplicasUnknown)',
      input: input(draining(6, 60, { receiversReadyReplicas: 5 }), [receiver('fleet/a', undefined, undefined), b(6)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW - 60),
          currentReplicaCount: 6,
          initialDesiredMaxReplicas: 6,
          receiversReadyReplicas: 5,
          pausedReason: 'ReadyReplicasUnknown',
        },
        requeue: 60,
        satisfied: [],
      },
    },
    {
      name: 'a source that declares reportsReadyReplicas: true but sent none: paused',
      input: input(draining(6), [receiver('fleet/a', undefined, true), b(6)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW - 60),
          currentReplicaCount: 6,
          initialDesiredMaxReplicas: 6,
          pausedReason: 'ReadyReplicasUnknown',
        },
        requeue: 60,
        satisfied: [],
      },
    },
    {
      name: 'a value sent despite reportsReadyReplicas: false is a value: D1 checks it (settled receivers: one step)',
      input: input(draining(8), [receiver('fleet/a', 5, false), b(8)]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
          receiversReadyReplicas: 5,
        },
        requeue: 60,
        satisfied: [],
      },
    },
    {
      name: 'one receiver reports its ready replicas, the other’s source does not: the drain is unprotected',
      input: input(draining(8, 60, {}, ['fleet/a', 'fleet/c']), [
        receiver('fleet/a', 5, undefined),
        unreported('fleet/c'),
        b(8),
      ]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
          unprotectedReason: 'ReadyReplicasNotReported',
        },
        requeue: 60,
        satisfied: [`fleet/b drains unprotected: ${UNPROTECTED.replace('fleet/a', 'fleet/c')}`],
      },
    },
    {
      name: 'one receiver’s promised value is missing while the other’s source reports none: doubt wins, no step',
      input: input(draining(8, 60, {}, ['fleet/a', 'fleet/c']), [
        receiver('fleet/a', undefined, true),
        unreported('fleet/c'),
        b(8),
      ]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 8,
          lastReplicaCountDecrease: at(NOW - 60),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
          pausedReason: 'ReadyReplicasUnknown',
        },
        requeue: 60,
        satisfied: [],
      },
    },
    {
      name: 'an unprotected drain whose receivers start to report readyReplicas counts D1 from there (its first step is free)',
      input: input(draining(6, 60, { unprotectedReason: 'ReadyReplicasNotReported' }), [
        receiver('fleet/a', 4, undefined, at(fresh), 9),
        b(6),
      ]),
      expected: {
        moves: [],
        draining: {
          desiredMaxReplicas: 4,
          lastReplicaCountDecrease: at(NOW),
          currentReplicaCount: 6,
          initialDesiredMaxReplicas: 6,
          receiversReadyReplicas: 4,
        },
        requeue: 60,
        satisfied: [],
      },
    },
  ])('$name', ({ input: i, expected }) => {
    expect(outcome(run(i))).toEqual(expected);
  });

  describe('a receiver whose source reports no HPA desiredReplicas: settled by its currentReplicas, or by its pending pods alone', () => {
    /** a: 5 ready, its HPA fields as given; b drains at 6 of 8, the receivers counted at 5 (growth 0, drop 2). */
    const receiverWith = (hpa: Signal['hpa']) =>
      aSignal('fleet/a', at(fresh), {
        ...(hpa ? { hpa } : {}),
        pendingPods: 0,
        failedScaleUp: false,
        readyReplicas: 5,
      });
    const counted = { initialDesiredMaxReplicas: 8, receiversReadyReplicas: 5 };
    const held = { desiredMaxReplicas: 6, lastReplicaCountDecrease: at(NOW - 60), currentReplicaCount: 6, ...counted };
    const stepped = { desiredMaxReplicas: 4, lastReplicaCountDecrease: at(NOW), currentReplicaCount: 6, ...counted };
    it.each([
      {
        name: 'currentReplicas 5, all ready: settled, the due step is taken',
        hpa: { currentReplicas: 5, maxReplicas: 20 },
        draining: stepped,
      },
      {
        name: 'currentReplicas 7, 5 ready: short, the drain waits (ReceiversNotReady)',
        hpa: { currentReplicas: 7, maxReplicas: 20 },
        draining: { ...held, pausedReason: 'ReceiversNotReady' },
      },
      { name: 'no HPA at all and no pending pods: settled, the due step is taken', hpa: undefined, draining: stepped },
    ])('$name', ({ hpa, draining: want }) => {
      const d = run(input(draining(6, 60, counted), [receiverWith(hpa), b(6)]));
      expect(clusterOf(d, 'fleet/b')?.draining).toEqual(want);
    });
  });

  it('a scale-in with receivers whose source reports no readyReplicas starts its drain unprotected', () => {
    const d = scaleInOfB(anAutoscalingSpec(1, { useDraining: true, behavior: { scaleIn: { cooldownSeconds: 300 } } }), [
      unreported('fleet/a'),
      { ...aScaleInSignal('fleet/b', at(fresh), 4), reportsReadyReplicas: false },
    ]);
    expect(outcome(d)).toEqual({
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
      draining: {
        desiredMaxReplicas: 4,
        lastReplicaCountDecrease: at(NOW),
        currentReplicaCount: 4,
        initialDesiredMaxReplicas: 4,
        unprotectedReason: 'ReadyReplicasNotReported',
      },
      requeue: 60,
      satisfied: [`fleet/b drains unprotected: ${UNPROTECTED}`],
    });
  });

  it.each<{ name: string; input: Case; note: string }>([
    {
      name: 'mco explain says the drain proceeds unprotected, and why',
      input: input(draining(8), [unreported('fleet/a'), b(8)]),
      note: `drain unprotected (ReadyReplicasNotReported): ${UNPROTECTED}`,
    },
    {
      name: 'mco explain names the receiver whose ready replicas are unknown',
      input: input(draining(6), [receiver('fleet/a', undefined, true), b(6)]),
      note: "drain paused (ReadyReplicasUnknown): a receiving cluster's ready replicas are unknown: fleet/a's signal has no readyReplicas",
    },
    {
      name: 'mco explain says the drain learned that the source reports no readyReplicas',
      input: input(draining(8), [receiver('fleet/a', undefined, undefined), b(8)]),
      note: `drain unprotected (ReadyReplicasNotReported): ${LEARNED}`,
    },
    {
      name: 'mco explain names a receiver without a fresh signal',
      input: input(draining(6), [unreported('fleet/a', at(stale)), b(6)]),
      note: "drain paused (ReadyReplicasUnknown): a receiving cluster's ready replicas are unknown: fleet/a has no fresh signal",
    },
  ])('$name', ({ input: i, note }) => {
    expect(explainOf(i).clusters.find((c) => c.cluster === 'fleet/b')?.notes).toContain(note);
  });
});

describe('a draining cluster whose source reports no HPA: its ready replicas are its observed replicas (R1, R3, the drain start)', () => {
  /** b's signal: `ready` ready replicas and no HPA; a receives, settled with 5 ready. */
  const signals = (ready: number) => [
    receiver('fleet/a', 5, undefined),
    aSignal('fleet/b', at(fresh), { readyReplicas: ready, pendingPods: 0 }),
  ];
  const spec = anAutoscalingSpec(1, { useDraining: true });
  const drainingAt = (cap: number): Partial<PlacementCluster> => ({
    reason: 'ScaleIn',
    draining: { desiredMaxReplicas: cap, lastReplicaCountDecrease: at(NOW - 30), receiversReadyReplicas: 5 },
  });
  it.each([
    {
      name: 'SCALING_IN at 1 ready: R1 removes it',
      state: 'SCALING_IN' as const,
      ready: 1,
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    { name: 'SCALING_IN at 3 ready: it stays, draining', state: 'SCALING_IN' as const, ready: 3, moves: [] },
    {
      name: 'EVICTING at 1 ready: R3 removes it',
      state: 'EVICTING' as const,
      ready: 1,
      moves: ['R3 fleet/b EVICTING->-'],
    },
  ])('$name', ({ state, ready, moves: want }) => {
    const d = run({
      spec,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', state, NOW - 600, drainingAt(3))] },
      profiles: state === 'EVICTING' ? [fleet[0]!, fleet[2]!] : fleet,
      signals: signals(ready),
      now: NOW,
    });
    expect(moves(d)).toEqual(want);
  });

  it('a scale-in starts the drain at its ready replicas when neither HPA figure is known', () => {
    const d = scaleInOfB(spec, [
      receiver('fleet/a', 5, undefined),
      aSignal('fleet/b', at(fresh), { readyReplicas: 4, wantsScaleIn: true }),
    ]);
    expect({ moves: moves(d), cap: clusterOf(d, 'fleet/b')?.draining?.desiredMaxReplicas }).toEqual({
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
      cap: 4,
    });
  });
});

describe("a scaling-in cluster whose source reports no replica count is removed on R3's clock, never held for ever (R1)", () => {
  // A verdict-only source: wantsScaleIn and atCapacityCeiling, no HPA figure and no readyReplicas.
  const verdictOnly = (observedAt = at(fresh)) => aSignal('fleet/b', observedAt, { wantsScaleIn: true });
  const entered = NOW - 1800; // evictionTimeoutSeconds (default 1800) ago
  const b = (since: number, extra: Partial<PlacementCluster> = {}) =>
    listed('fleet/b', 'SCALING_IN', since, { reason: 'ScaleIn', ...extra });
  const drainingAt = (cap: number): Partial<PlacementCluster> => ({
    draining: {
      desiredMaxReplicas: cap,
      lastReplicaCountDecrease: at(NOW - 30),
      unprotectedReason: 'ReadyReplicasNotReported',
    },
  });
  it.each<{ name: string; useDraining: boolean; b: PlacementCluster; signal: Signal; moves: string[] }>([
    {
      name: 'no count, SCALING_IN for evictionTimeoutSeconds: R1 removes it',
      useDraining: true,
      b: b(entered),
      signal: verdictOnly(),
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    {
      name: 'the same without useDraining',
      useDraining: false,
      b: b(entered),
      signal: verdictOnly(),
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    {
      name: 'no count, no drain, and its source no longer says it wants scale-in (its load came back): it stays',
      useDraining: true,
      b: b(entered),
      signal: aSignal('fleet/b', at(fresh), { wantsScaleIn: false }),
      moves: [],
    },
    {
      name: 'no count, one second short of it: it stays',
      useDraining: true,
      b: b(entered + 1),
      signal: verdictOnly(),
      moves: [],
    },
    {
      name: 'a stale signal says nothing of its source: it stays (fail static)',
      useDraining: true,
      b: b(entered),
      signal: verdictOnly(at(stale)),
      moves: [],
    },
    {
      name: 'a drain that started from the HPA maximum and is not at 1 yet: it stays',
      useDraining: true,
      b: b(entered, drainingAt(3)),
      signal: aSignal('fleet/b', at(fresh), { hpa: { maxReplicas: 10 }, wantsScaleIn: true }),
      moves: [],
    },
    {
      name: 'the same drain at 1: R1 removes it',
      useDraining: true,
      b: b(entered, drainingAt(1)),
      signal: aSignal('fleet/b', at(fresh), { hpa: { maxReplicas: 10 }, wantsScaleIn: true }),
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    {
      name: 'a count of 3 replicas: it stays, as R1 says',
      useDraining: true,
      b: b(entered, drainingAt(3)),
      signal: aSignal('fleet/b', at(fresh), { readyReplicas: 3, wantsScaleIn: true }),
      moves: [],
    },
  ])('$name', ({ useDraining, b: entry, signal, moves: want }) => {
    const d = run({
      spec: anAutoscalingSpec(1, { useDraining }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), entry] },
      profiles: fleet,
      signals: [receiver('fleet/a', 5, undefined), signal],
      now: NOW,
    });
    expect(moves(d)).toEqual(want);
  });

  it('says why and when, and the removal names the clock', () => {
    const c = (since: number): Case => ({
      spec: anAutoscalingSpec(1, { useDraining: true }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), b(since)] },
      profiles: fleet,
      signals: [receiver('fleet/a', 5, undefined), verdictOnly()],
      now: NOW,
    });
    const waiting = explainOf(c(NOW - 600));
    const removed = run(c(entered));
    expect({
      note: waiting.clusters.find((x) => x.cluster === 'fleet/b')?.notes,
      removal: removed.transitions.map((t) => t.reason),
    }).toEqual({
      note: expect.arrayContaining([
        `SCALING_IN: its signal reports no replica count (hpa.currentReplicas, readyReplicas), so it is removed at ${at(NOW + 1200)} (evictionTimeoutSeconds) unless one arrives`,
      ]),
      removal: ['scaled in: SCALING_IN for evictionTimeoutSeconds (1800s) with no replica count reported'],
    });
  });

  it('says why a cluster whose load came back stays', () => {
    const c: Case = {
      spec: anAutoscalingSpec(1, { useDraining: true }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), b(NOW - 600)] },
      profiles: fleet,
      signals: [receiver('fleet/a', 5, undefined), aSignal('fleet/b', at(fresh), { wantsScaleIn: false })],
      now: NOW,
    };
    expect(explainOf(c).clusters.find((x) => x.cluster === 'fleet/b')?.notes).toEqual(
      expect.arrayContaining([
        `SCALING_IN: its signal reports no replica count (hpa.currentReplicas, readyReplicas) and no longer says it wants scale-in (its load came back): it stays until it does again, at the earliest ${at(NOW + 1200)} (evictionTimeoutSeconds)`,
      ]),
    );
  });

  it('a verdict-only source ends a scale-in from start to removal: P2, then R1 after evictionTimeoutSeconds', () => {
    const spec = anAutoscalingSpec(1, { useDraining: true });
    const states: string[] = [];
    let status = B_WANTS_SCALE_IN;
    for (const t of [NOW, NOW + 600, NOW + 1799, NOW + 1800]) {
      const d = run({
        spec,
        status,
        profiles: fleet,
        signals: [receiver('fleet/a', 5, undefined, at(t - 10)), verdictOnly(at(t - 10))],
        now: t,
      });
      status = d.status;
      states.push(`${t - NOW}: ${clusterOf(d, 'fleet/b')?.state ?? 'removed'} ${moves(d).join(' ')}`.trim());
    }
    expect(states).toEqual([
      '0: SCALING_IN P2 fleet/b ACTIVE->SCALING_IN',
      '600: SCALING_IN',
      '1799: SCALING_IN',
      '1800: removed R1 fleet/b SCALING_IN->-',
    ]);
  });
});

describe("a scaling-in cluster without draining, held at an HPA minimum above 1, is removed on R3's clock (R1)", () => {
  const entered = NOW - 1800; // evictionTimeoutSeconds (default 1800) ago
  const b = (since: number, extra: Partial<PlacementCluster> = {}) =>
    listed('fleet/b', 'SCALING_IN', since, { reason: 'ScaleIn', ...extra });
  /** fleet/b's HPA runs `current` of its `min`..10, wanting fewer. */
  const hpaAt = (current: number, min: number, observedAt = at(fresh)): Signal =>
    aSignal('fleet/b', observedAt, {
      hpa: {
        currentReplicas: current,
        desiredReplicas: Math.max(current - 1, 1),
        minReplicas: min,
        maxReplicas: 10,
        scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
      },
      pendingPods: 0,
      failedScaleUp: false,
      readyReplicas: current,
    });
  const c = (useDraining: boolean, entry: PlacementCluster, signal: Signal): Case => ({
    spec: anAutoscalingSpec(1, { useDraining }),
    status: { clusters: [listed('fleet/a', 'ACTIVE', 0), entry] },
    profiles: fleet,
    signals: [receiver('fleet/a', 5, undefined), signal],
    now: NOW,
  });
  it.each<{ name: string; c: Case; moves: string[] }>([
    {
      name: 'at its minimum of 3 for evictionTimeoutSeconds: R1 removes it',
      c: c(false, b(entered), hpaAt(3, 3)),
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    { name: 'one second short of it: it stays', c: c(false, b(entered + 1), hpaAt(3, 3)), moves: [] },
    {
      name: 'above its minimum (its load keeps it there): it stays',
      c: c(false, b(entered), hpaAt(4, 3)),
      moves: [],
    },
    { name: 'a stale signal: it stays (fail static)', c: c(false, b(entered), hpaAt(3, 3, at(stale))), moves: [] },
    {
      name: 'at a minimum of 1, R1 as ever: removed at once',
      c: c(false, b(NOW - 60), hpaAt(1, 1)),
      moves: ['R1 fleet/b SCALING_IN->-'],
    },
    {
      name: 'with a drain (which lowers the minimum to 1 as it steps): the drain decides, it stays',
      c: c(
        true,
        b(entered, { draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: at(NOW - 30) } }),
        hpaAt(3, 3),
      ),
      moves: [],
    },
  ])('$name', ({ c: input, moves: want }) => {
    expect(moves(run(input))).toEqual(want);
  });

  it('says why and when, and the removal names the clock', () => {
    const waiting = explainOf(c(false, b(NOW - 600), hpaAt(2, 2)));
    const removed = run(c(false, b(entered), hpaAt(2, 2)));
    expect({
      note: waiting.clusters.find((x) => x.cluster === 'fleet/b')?.notes,
      removal: removed.transitions.map((t) => t.reason),
    }).toEqual({
      note: expect.arrayContaining([
        `SCALING_IN without draining at its HPA minimum (2): nothing takes it lower, so it is removed at ${at(NOW + 1200)} (evictionTimeoutSeconds) unless its load comes back`,
      ]),
      removal: [
        'scaled in: SCALING_IN for evictionTimeoutSeconds (1800s) at its HPA minimum (2 replica(s)) without draining',
      ],
    });
  });
});

describe('W1: a warm standby runs at least its size (desiredMinReplicas), not only at most', () => {
  const spec = (standbyReplicas?: number, standby = 1) =>
    anAutoscalingSpec(1, {
      useDraining: true,
      warmStandbyClusters: standby,
      ...(standbyReplicas !== undefined ? { warmStandbyReplicas: standbyReplicas } : {}),
    });
  const a5 = receiver('fleet/a', 5, undefined);
  /** b listed SCALING_IN as a standby (or `reason`), its cap at `desired`, and the floor fields given. */
  const bListed = (reason: string, desired: number, extra: Partial<PlacementCluster> = {}) =>
    listed('fleet/b', 'SCALING_IN', NOW - 600, {
      reason,
      draining: { desiredMaxReplicas: desired, lastReplicaCountDecrease: at(NOW - 30), receiversReadyReplicas: 5 },
      ...extra,
    });
  /** The fields a delivery reads of each listed cluster. */
  const view = (d: Decision) =>
    (d.status.clusters ?? []).map((c) => ({
      cluster: `${c.namespace}/${c.name}`,
      state: c.state,
      reason: c.reason,
      desiredMaxReplicas: c.draining?.desiredMaxReplicas,
      desiredMinReplicas: c.desiredMinReplicas,
      replacesCluster: c.replacesCluster,
    }));
  const row = (
    cluster: string,
    state: PlacementCluster['state'],
    reason?: string,
    desiredMaxReplicas?: number,
    desiredMinReplicas?: number,
    replacesCluster?: string,
  ) => ({ cluster, state, reason, desiredMaxReplicas, desiredMinReplicas, replacesCluster });
  const A = row('fleet/a', 'ACTIVE');
  /** fleet/a ACTIVE with 5 ready, then `others` listed, with b's signal (if any) beside a's. */
  const withA = (spec: Case['spec'], others: PlacementCluster[], bSignal?: Signal): Case => ({
    spec,
    status: { clusters: [listed('fleet/a', 'ACTIVE', 0), ...others] },
    profiles: fleet,
    signals: [a5, ...(bSignal ? [bSignal] : [])],
    now: NOW,
  });

  it.each<{ name: string; input: Case; moves: string[]; clusters: ReturnType<typeof view> }>([
    {
      name: 'a standby added with warmStandbyReplicas 13 gets desiredMinReplicas 13 beside its cap of 13',
      input: withA(spec(13), []),
      moves: ['P1 fleet/b -->ACTIVE', 'P2 fleet/b ACTIVE->SCALING_IN'],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 13, 13)],
    },
    {
      name: 'a standby kept: its floor stays at its size while its HPA runs 2',
      input: withA(
        spec(13),
        [bListed('WarmStandby', 13, { desiredMinReplicas: 13 })],
        aScaleInSignal('fleet/b', at(fresh), 2),
      ),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 13, 13)],
    },
    {
      name: "without warmStandbyReplicas the size, and the floor, is the HPA's minReplicas (1)",
      input: withA(spec(), [bListed('WarmStandby', 1)], aScaleInSignal('fleet/b', at(fresh), 1)),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 1, 1)],
    },
    {
      name: 'a scaled-in cluster still draining down to the standby size gets the floor at once (6 ≥ 3)',
      input: withA(spec(3), [bListed('ScaleIn', 6)], aScaleInSignal('fleet/b', at(fresh), 6)),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'ScaleIn', 6, 3)],
    },
    {
      name: 'raising warmStandbyReplicas raises the floor and the cap in the same evaluation',
      input: withA(
        spec(4),
        [bListed('WarmStandby', 2, { desiredMinReplicas: 2 })],
        aScaleInSignal('fleet/b', at(fresh), 2),
      ),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 4, 4)],
    },
    {
      name: 'a standby reactivated to take load (a unreachable) loses its floor; the new standby gets one',
      input: {
        spec: spec(3),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0), bListed('WarmStandby', 3, { desiredMinReplicas: 3 })] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(fresh)), receiver('fleet/b', 3, undefined, at(fresh), 3)],
        now: NOW,
      },
      moves: ['P3 fleet/b SCALING_IN->ACTIVE', 'P1 fleet/c -->ACTIVE', 'P2 fleet/c ACTIVE->SCALING_IN'],
      clusters: [A, row('fleet/b', 'ACTIVE', 'Reactivated'), row('fleet/c', 'SCALING_IN', 'WarmStandby', 3, 3)],
    },
    {
      name: 'a standby no longer wanted (warmStandbyClusters 0) is released without a floor, and drains on',
      input: withA(
        spec(3, 0),
        [bListed('WarmStandby', 3, { desiredMinReplicas: 3 })],
        aScaleInSignal('fleet/b', at(fresh), 3),
      ),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'StandbyReleased', 3)],
    },
    {
      name: "without warmStandbyReplicas the size is the HPA's minReplicas of an ACTIVE cluster without a floor (d: 1), not a replacement's floor (a: 6)",
      input: {
        spec: spec(),
        status: {
          clusters: [
            listed('fleet/a', 'ACTIVE', NOW - 60, {
              reason: 'Added',
              desiredMinReplicas: 6,
              replacesCluster: 'fleet/c',
            }),
            bListed('WarmStandby', 3, { desiredMinReplicas: 3 }),
            listed('fleet/c', 'ACTIVE', 0),
            listed('fleet/d', 'ACTIVE', 0),
          ],
        },
        profiles: [...fleet, aClusterProfile('fleet/d')],
        signals: [
          aSignal('fleet/a', at(fresh), {
            hpa: { currentReplicas: 6, desiredReplicas: 6, minReplicas: 6, maxReplicas: 20 },
            readyReplicas: 3,
          }),
          aScaleInSignal('fleet/b', at(fresh), 3),
          anUnreachableSignal('fleet/c', at(fresh)),
          receiver('fleet/d', 4, undefined, at(fresh), 4),
        ],
        now: NOW,
      },
      moves: [],
      clusters: [
        row('fleet/a', 'ACTIVE', 'Added', undefined, 6, 'fleet/c'),
        row('fleet/b', 'SCALING_IN', 'WarmStandby', 3, 1),
        row('fleet/c', 'ACTIVE'),
        row('fleet/d', 'ACTIVE'),
      ],
    },
    {
      name: "a replacement's floor (rule O3) is its own: the standby phase leaves it",
      input: {
        spec: spec(2),
        status: {
          clusters: [
            listed('fleet/a', 'ACTIVE', 0),
            listed('fleet/b', 'ACTIVE', NOW - 60, {
              reason: 'Added',
              desiredMinReplicas: 6,
              replacesCluster: 'fleet/c',
            }),
            listed('fleet/c', 'ACTIVE', 0),
          ],
        },
        profiles: fleet,
        signals: [a5, receiver('fleet/b', 2, undefined, at(fresh), 6), anUnreachableSignal('fleet/c', at(fresh))],
        now: NOW,
      },
      moves: [],
      clusters: [A, row('fleet/b', 'ACTIVE', 'Added', undefined, 6, 'fleet/c'), row('fleet/c', 'ACTIVE')],
    },
  ])('$name', ({ input, moves: expectedMoves, clusters }) => {
    const d = run(input);
    expect({ moves: moves(d), clusters: view(d) }).toEqual({ moves: expectedMoves, clusters });
  });
});
