import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, aSignal } from '@mco/core/testing';
import { decide, drainStepSize, type PlacementStatus, type Signal } from '@mco/core';

// Rule D1 over random timelines (docs/placement-rules.md §4): fleet/b drains
// while fleet/a and fleet/c receive, each evaluation fed the previous status.

const PROFILES = ['fleet/a', 'fleet/b', 'fleet/c'].map((k) => aClusterProfile(k));
const T0 = Date.UTC(2026, 0, 1);
const iso = (s: number) => new Date(T0 + s * 1000).toISOString().replace('.000Z', 'Z');
const STALE_AFTER = 180;
const INTERVAL = 60;

/**
 * What a receiver's source tells in one evaluation. `ready` and `unreported`
 * leave nothing in doubt; `declaredMissing`, `stale`, `transport` and
 * `absent` are doubt about a source that reports readyReplicas (or about a
 * source we cannot see at all). `missing` (a source that declares neither)
 * is doubt once the drain has counted its receivers, and before that a
 * source that does not report them (learned).
 */
type Kind = 'ready' | 'unreported' | 'missing' | 'declaredMissing' | 'stale' | 'transport' | 'absent';
const DOUBT: ReadonlySet<Kind> = new Set(['declaredMissing', 'stale', 'transport', 'absent']);

function receiverSignal(key: string, kind: Kind, now: number, ready: number, desired: number): Signal[] {
  const hpa = { currentReplicas: desired, desiredReplicas: desired, minReplicas: 1, maxReplicas: 30 };
  const base = { hpa, pendingPods: 0, failedScaleUp: false };
  switch (kind) {
    case 'ready':
      return [aSignal(key, iso(now - 5), { ...base, readyReplicas: ready })];
    case 'unreported':
      return [aSignal(key, iso(now - 5), { ...base, reportsReadyReplicas: false })];
    case 'missing':
      return [aSignal(key, iso(now - 5), base)];
    case 'declaredMissing':
      return [aSignal(key, iso(now - 5), { ...base, reportsReadyReplicas: true })];
    case 'stale':
      // Even a source that declared it reports no readyReplicas: a stale signal is doubt.
      return [aSignal(key, iso(now - STALE_AFTER - 1), { ...base, reportsReadyReplicas: false })];
    case 'transport':
      return [aSignal(key, iso(now - 5), { transportError: { reason: 'timeout', consecutivePolls: 1 } })];
    case 'absent':
      return [];
  }
}

interface Step {
  readonly advance: number;
  readonly a: Kind;
  readonly c: Kind;
  readonly ready: readonly [number, number];
  readonly desired: readonly [number, number];
}
const arbStep = (kinds: fc.Arbitrary<Kind>): fc.Arbitrary<Step> =>
  fc.record({
    advance: fc.integer({ min: 1, max: 240 }),
    a: kinds,
    c: kinds,
    ready: fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 20 })),
    desired: fc.tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 20 })),
  });

/** Runs a timeline and hands each evaluation's before/after of b's drain to `check`. */
function runTimeline(
  start: number,
  steps: readonly Step[],
  check: (
    before: { desired: number; last: number; counted: boolean },
    after: PlacementStatus,
    step: Step,
    now: number,
  ) => void,
): void {
  let now = 10_000;
  let status: PlacementStatus = {
    clusters: [
      { name: 'a', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: iso(0) },
      {
        name: 'b',
        namespace: 'fleet',
        state: 'SCALING_IN',
        lastTransitionTime: iso(now),
        reason: 'ScaleIn',
        draining: { desiredMaxReplicas: start, lastReplicaCountDecrease: iso(now), initialDesiredMaxReplicas: start },
      },
      { name: 'c', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: iso(0) },
    ],
  };
  const spec = anAutoscalingSpec(1, {
    useDraining: true,
    behavior: { drain: { stepIntervalSeconds: INTERVAL }, signalStaleAfterSeconds: STALE_AFTER },
  });
  for (const step of steps) {
    now += step.advance;
    const b = status.clusters!.find((x) => x.name === 'b');
    if (b?.state !== 'SCALING_IN' || !b.draining) return;
    const desired = b.draining.desiredMaxReplicas;
    const signals = [
      ...receiverSignal('fleet/a', step.a, now, step.ready[0], step.desired[0]),
      ...receiverSignal('fleet/c', step.c, now, step.ready[1], step.desired[1]),
      // b's HPA follows its cap, never below 2, so R1 never ends the timeline early.
      aSignal('fleet/b', iso(now - 5), { hpa: { currentReplicas: Math.max(2, desired), maxReplicas: desired } }),
    ];
    const d = decide({
      now: new Date(T0 + now * 1000),
      placement: { metadata: { name: 'web', namespace: 'default' }, spec, status },
      clusterProfiles: PROFILES,
      signals,
    });
    const last = Date.parse(b.draining.lastReplicaCountDecrease) / 1000 - T0 / 1000;
    check({ desired, last, counted: b.draining.receiversReadyReplicas !== undefined }, d.status, step, now);
    status = d.status;
  }
}

const drainOf = (status: PlacementStatus) =>
  status.clusters?.find((x) => x.name === 'b' && x.state === 'SCALING_IN')?.draining;

describe('D1 over random timelines', () => {
  it('a receiver whose source reports readyReplicas but whose value is missing or stale never lets a drain step', () => {
    const kinds = fc.constantFrom<Kind>(
      'ready',
      'unreported',
      'missing',
      'declaredMissing',
      'stale',
      'transport',
      'absent',
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 30 }),
        fc.array(arbStep(kinds), { minLength: 1, maxLength: 25 }),
        (start, steps) => {
          runTimeline(start, steps, (before, after, step, now) => {
            const missing = step.a === 'missing' || step.c === 'missing';
            if (!DOUBT.has(step.a) && !DOUBT.has(step.c) && !(missing && before.counted)) return;
            const draining = drainOf(after);
            if (!draining) return; // b left SCALING_IN (reactivated, say): no drain to hold
            expect(draining.desiredMaxReplicas).toBe(before.desired);
            const due = now - before.last >= INTERVAL && before.desired > 1;
            expect(draining.pausedReason).toBe(due ? 'ReadyReplicasUnknown' : undefined);
            expect(draining.unprotectedReason).toBeUndefined();
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('receivers whose source reports no readyReplicas (declared, or never sent) let the drain step on the clock: one step whenever one is due', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 30 }),
        fc.array(arbStep(fc.constantFrom<Kind>('unreported', 'missing')), { minLength: 1, maxLength: 25 }),
        (start, steps) => {
          runTimeline(start, steps, (before, after, _step, now) => {
            const draining = drainOf(after)!;
            const due = now - before.last >= INTERVAL && before.desired > 1;
            expect({ desired: draining.desiredMaxReplicas, paused: draining.pausedReason }).toEqual({
              desired: due ? Math.max(1, before.desired - drainStepSize(before.desired, 25)) : before.desired,
              paused: undefined,
            });
            expect(draining.unprotectedReason).toBe(before.desired > 1 ? 'ReadyReplicasNotReported' : undefined);
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});
