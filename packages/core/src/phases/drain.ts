import { clusterKey } from '../api/common.js';
import type { Draining } from '../api/placement.js';
import {
  drainPause,
  nextDrainStepAt,
  nextStepSize,
  startDraining,
  startDrainingAt,
  stepDraining,
  UNPROTECTED_REASON,
  type ReceiverCheck,
} from '../scaling/draining.js';
import { sourceReportsReadyReplicas, type SignalAssessment } from '../scaling/signals.js';
import { formatTime, parseTime, SECOND } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';

/**
 * What rule D1 knows of the receiving clusters (the ACTIVE ones). A receiver
 * without a fresh signal, or whose source promises ready replicas
 * (`reportsReadyReplicas: true`) but whose signal has none, makes them unknown
 * (no step). A receiver whose source declares it never reports them leaves the
 * drain unprotected (it steps on the clock); so does one whose source declares
 * neither and sent none, when `learn` is set: a drain that has never counted
 * its receivers (no `receiversReadyReplicas`) has no sign that the source
 * reports them, and missing data must not stall it forever. Else every
 * receiver is counted.
 */
function receivers(run: Evaluation, learn: boolean): ReceiverCheck {
  let ready = 0;
  let counted = 0;
  const onCapacity: string[] = [];
  const short: string[] = [];
  const unknown: string[] = [];
  const unreported: string[] = [];
  const silent: string[] = [];
  for (const e of run.live()) {
    if (e.state !== 'ACTIVE') continue;
    const s = e.signal;
    if (!s.fresh) unknown.push(`${e.key} has no fresh signal`);
    else if (s.readyReplicas !== undefined) {
      ready += s.readyReplicas;
      counted++;
      // Pods the node autoscaler cannot place wait on capacity, not on time: waiting for them protects nothing.
      if (waitsOnCapacity(s)) {
        onCapacity.push(e.key);
        continue;
      }
      if (servesAtFloor(s)) continue;
      // Without the HPA's desiredReplicas its currentReplicas (the scale it set) stands in: a source that
      // reports neither cannot show a receiver short by it, and must not stall the drain on that.
      const wanted = s.desiredReplicas ?? s.currentReplicas;
      if (wanted !== undefined && s.readyReplicas < wanted)
        short.push(
          `${e.key} has ${s.readyReplicas} of ${wanted} ${s.desiredReplicas === undefined ? 'current' : 'desired'} replicas ready`,
        );
      else if ((s.pendingPods ?? 0) > 0) short.push(`${e.key} has ${s.pendingPods} pending pod(s)`);
    } else if (!sourceReportsReadyReplicas(s)) unreported.push(e.key);
    else if (learn && !s.declaresReadyReplicas) silent.push(e.key);
    else unknown.push(`${e.key}'s signal has no readyReplicas`);
  }
  if (unknown.length > 0) return { kind: 'unknown', why: unknown.join(', ') };
  const why: string[] = [];
  if (unreported.length > 0) why.push(`the signal source of ${unreported.join(', ')} does not report readyReplicas`);
  if (silent.length > 0)
    why.push(
      `the signal source of ${silent.join(', ')} has sent no readyReplicas during this drain and does not declare reportsReadyReplicas`,
    );
  if (why.length > 0) return { kind: 'unprotected', why: why.join('; ') };
  if (counted > 0 && onCapacity.length === counted)
    short.push(`every receiver has pods the node autoscaler cannot place (${onCapacity.join(', ')})`);
  return { kind: 'checked', receivers: { ready, short: short.length > 0 ? short.join(', ') : undefined } };
}

/** Pending pods that the node autoscaler failed to place, or that wait on a node pool at its size limit. */
function waitsOnCapacity(s: SignalAssessment): boolean {
  return (s.pendingPods ?? 0) > 0 && (s.failedScaleUp === true || s.nodeLimitReached);
}

/**
 * A receiver held at its HPA's minimum because its load asks for fewer
 * (wantsScaleIn: TooFewReplicas) asks at most minReplicas − 1 for its load, so
 * that many ready serve it: what it lacks is its floor, which a node pool
 * full of other workloads may never place. It is settled (rule D1), or a
 * drain would wait on it for ever.
 */
function servesAtFloor(s: SignalAssessment): boolean {
  return s.wantsScaleIn && (s.readyReplicas ?? 0) >= Math.max(1, (s.minReplicas ?? 1) - 1);
}

/**
 * The drain phase, section 4 step 4 with rule D1 (make-before-break):
 * `draining` of every SCALING_IN and EVICTING cluster.
 */
export function drain(run: Evaluation, useDraining: boolean): void {
  const b = run.behavior;
  const strict = receivers(run, false);
  // Only a drain that has never counted its receivers may learn that their source reports no ready replicas.
  const learned = strict.kind === 'unknown' ? receivers(run, true) : strict;
  rebaseDrains(run);
  for (const entry of run.live()) {
    if (!useDraining || (entry.state !== 'SCALING_IN' && entry.state !== 'EVICTING')) {
      entry.draining = undefined;
      continue;
    }
    const floor = entry.keepWarm?.size ?? 1;
    const before = entry.enteredDrain ? undefined : entry.draining?.desiredMaxReplicas;
    // A fail-back is voluntary: it never steps on a value it has not seen (rule F6).
    const learns =
      entry.reason !== FAIL_BACK && (entry.enteredDrain || entry.draining?.receiversReadyReplicas === undefined);
    const ready = learns ? learned : strict;
    if (entry.enteredDrain || !entry.draining) {
      entry.draining = startDraining(entry.signal, run.nowMs, ready);
      // Rule F7: the receivers already started the first step; their growth counts from before they were asked.
      if (entry.draining && entry.probedFrom !== undefined)
        entry.draining = { ...entry.draining, receiversReadyReplicas: entry.probedFrom };
      // A warm cluster is never started below its size, nor left without a size when its replicas are unknown.
      if (entry.keepWarm && (entry.draining?.desiredMaxReplicas ?? 0) < floor)
        entry.draining = startDrainingAt(floor, run.nowMs, entry.signal.currentReplicas, ready);
    } else {
      const step = stepDraining(entry.draining, entry.signal, run.nowMs, {
        stepIntervalSeconds: b.drainStepIntervalSeconds,
        stepPercent: b.drainStepPercent,
        floor,
        receivers: ready,
        // A fail-back never steps ahead of its receivers; it is abandoned instead (rule F6).
        ...(entry.reason === FAIL_BACK
          ? { lead: nextStepSize(entry.draining, b.drainStepPercent, floor) }
          : { waitAtMostSeconds: b.evictionTimeoutSeconds }),
      });
      entry.draining = step.draining;
      if (step.waitedOut)
        run.note(
          entry.key,
          `drain stepped after waiting behavior.evictionTimeoutSeconds (${b.evictionTimeoutSeconds}s) since its last step for receivers that did not catch up (rule D1): ${step.waitedOut}`,
        );
      // A standby is kept at its size (rule W1): its size grows when the HPA's
      // minReplicas becomes known (a standby added before any signal) or
      // warmStandbyReplicas is raised, and its cap follows at once. A lingering
      // cluster is still a drain: its cap never rises.
      if (entry.keepWarm?.reason === 'WarmStandby' && entry.draining.desiredMaxReplicas < floor)
        entry.draining = { ...entry.draining, desiredMaxReplicas: floor };
      if (step.paused) {
        // New signals usually come first; this bounds the wait for them.
        run.timer(run.nowMs, b.drainStepIntervalSeconds);
        run.note(entry.key, `drain paused (${step.paused.reason}): ${step.paused.message}`);
        const giveUp = entry.reason === FAIL_BACK ? failBackGiveUpAt(run, entry.draining) : undefined;
        if (giveUp !== undefined) {
          run.timers.push(giveUp);
          run.note(
            entry.key,
            `fail-back is abandoned at ${formatTime(giveUp)} if the receivers are not ready by then (rule F6)`,
          );
        }
      }
    }
    // Only a drain that can still step is unprotected: a cluster kept warm at its size steps no further.
    if (ready.kind === 'unprotected' && entry.draining && (before ?? entry.draining.desiredMaxReplicas) > floor) {
      entry.draining = { ...entry.draining, unprotectedReason: UNPROTECTED_REASON };
      const why = `${ready.why}: it steps on the clock of behavior.drain.stepIntervalSeconds (${b.drainStepIntervalSeconds}s) with no ready-replica check (rule D1)`;
      run.note(entry.key, `drain unprotected (${UNPROTECTED_REASON}): ${why}`);
      run.unprotectedDrains.push(`${entry.key} drains unprotected: ${why}`);
    }
    warmAtSize(entry);
    const next = entry.draining && nextDrainStepAt(entry.draining, b.drainStepIntervalSeconds, floor);
    if (next) {
      run.timers.push(next);
      run.note(
        entry.key,
        `draining: desiredMaxReplicas ${entry.draining!.desiredMaxReplicas}, next step at ${formatTime(next)}`,
      );
    }
  }
  if (useDraining) failBackFloors(run, strict, b.drainStepPercent);
}

const FAIL_BACK = 'FailBack';

/**
 * Rule F6's bound: when a fail-back drain's step, due since the last
 * decrease plus one step interval, gives up waiting for its receivers —
 * `failBack.stabilizationWindowSeconds` later, the time fail-back gave the
 * room to prove itself.
 */
function failBackGiveUpAt(run: Evaluation, draining: Draining): number | undefined {
  const last = parseTime(draining.lastReplicaCountDecrease);
  const b = run.behavior;
  return last === undefined ? undefined : last + (b.drainStepIntervalSeconds + b.failBackStabilizationSeconds) * SECOND;
}

/**
 * Rule F6, bounded: a fail-back drain whose receivers have not made its due
 * step ready (a delivery that ignores `desiredMinReplicas`, a preferred
 * cluster that silently cannot start pods) by `failBackGiveUpAt` never waits
 * on: the fail-back is abandoned and the cluster returns to ACTIVE (P3, reason
 * `Reactivated`: a cycle, backed off by rule F1) with every pod it still runs.
 * No load moves onto pods that are not ready. Runs after scale-out, before
 * rule F1 counts the cycle. Returns whether it abandoned one.
 */
export function abandonStalledFailBack(run: Evaluation, warmSizeOf: (entry: Entry) => number): boolean {
  const b = run.behavior;
  let check: ReceiverCheck | undefined;
  let abandoned = false;
  for (const entry of run.byPriority(run.live())) {
    const d = entry.draining;
    if (entry.state !== 'SCALING_IN' || entry.reason !== FAIL_BACK || !d) continue;
    const giveUp = failBackGiveUpAt(run, d);
    if (giveUp === undefined || run.nowMs < giveUp) continue;
    const lead = nextStepSize(d, b.drainStepPercent, warmSizeOf(entry));
    if (lead <= 0) continue;
    check ??= receivers(run, false);
    const drop = (d.initialDesiredMaxReplicas ?? d.desiredMaxReplicas) - d.desiredMaxReplicas;
    const paused = drainPause(drop, d.receiversReadyReplicas, check, lead);
    if (!paused || !run.mayReactivate(entry)) continue;
    run.reactivate(
      entry,
      `fail-back abandoned: the receivers did not become ready within ${b.drainStepIntervalSeconds + b.failBackStabilizationSeconds}s of the drain's last step (behavior.drain.stepIntervalSeconds + failBack.stabilizationWindowSeconds; rule F6): ${paused.message}`,
    );
    abandoned = true;
  }
  // The room fail-back saw was not real: it must hold a whole window again from now (rule F2).
  if (abandoned && run.failBackStatus?.roomSince) {
    const { roomSince: _, ...rest } = run.failBackStatus;
    run.failBackStatus = rest;
  }
  return abandoned;
}

/**
 * Rule F6, make-before-break fail-back: while a fail-back drain is above its
 * warm size, the receivers (ACTIVE clusters) must run, ready, what they ran
 * when it began plus the drop so far and its next step. The missing replicas
 * go, as `desiredMinReplicas` (a floor delivery applies as the HPA's
 * minReplicas, as rule O3's), to the receivers in priority order, each up to
 * its HPA maximum; the drain's next step waits for them (`lead`). So a
 * voluntary move never lowers the fleet's ready replicas: a burst during the
 * drain meets at least the replicas it would have met without fail-back.
 * Clusters with rule O3's floor keep theirs.
 */
function failBackFloors(run: Evaluation, ready: ReceiverCheck, stepPercent: number): void {
  if (ready.kind !== 'checked') return;
  let deficit = 0;
  let draining: string | undefined;
  for (const e of run.live()) {
    if (e.state !== 'SCALING_IN' || e.reason !== FAIL_BACK || !e.draining) continue;
    const d = e.draining;
    const baseline = d.receiversReadyReplicas ?? ready.receivers.ready;
    const moving =
      (d.initialDesiredMaxReplicas ?? d.desiredMaxReplicas) -
      d.desiredMaxReplicas +
      nextStepSize(d, stepPercent, e.keepWarm?.size ?? 1);
    // Never more than fail-back moves: what the receivers lose otherwise is not its to make up.
    const missing = Math.min(moving, baseline + moving - ready.receivers.ready);
    if (missing > deficit) {
      deficit = missing;
      draining = e.key;
    }
  }
  if (!draining) return;
  const from = draining;
  giveFailBackFloors(
    run,
    run.byPriority(run.live().filter((e) => e.state === 'ACTIVE')),
    deficit,
    (floor) =>
      `desiredMinReplicas ${floor} while ${from} fails back: its replicas are ready here before ${from} hands their load over (fail-back rule F6)`,
  );
}

/**
 * Gives `deficit` replicas to `receivers` (in priority order) as
 * `desiredMinReplicas`, each at its ready replicas plus what is still
 * missing, up to its HPA maximum (rules F6 and F7). A cluster with rule O3's
 * floor keeps its own.
 */
export function giveFailBackFloors(
  run: Evaluation,
  receivers: readonly Entry[],
  deficit: number,
  note: (floor: number) => string,
): void {
  for (const e of receivers) {
    if (deficit <= 0) return;
    const s = e.signal;
    if (e.state !== 'ACTIVE' || e.replacesCluster !== undefined || !s.fresh) continue;
    if (s.readyReplicas === undefined || s.maxReplicas === undefined) continue;
    const floor = Math.min(s.maxReplicas, s.readyReplicas + deficit);
    if (floor <= s.readyReplicas) continue;
    deficit -= floor - s.readyReplicas;
    e.desiredMinReplicas = Math.max(e.desiredMinReplicas ?? 0, floor);
    run.note(e.key, note(e.desiredMinReplicas));
  }
}

/**
 * A drain counts its receivers' growth (rules D1 and F6) from a baseline of
 * the clusters that were receivers then. A receiver that leaves ACTIVE in this
 * evaluation (a scale-in, an eviction) takes its ready replicas out of it; a
 * draining cluster that returns to ACTIVE (P3) brings its ready replicas in:
 * they served before, so they are no growth. A cluster that was not ACTIVE
 * before and enters a drain now (a warm standby added and parked in one
 * evaluation) was never a receiver and changes nothing.
 */
function rebaseDrains(run: Evaluation): void {
  // Built only when a cluster entered a drain: most evaluations change nothing, and this runs on every one.
  let wasActive: Set<string> | undefined;
  let change = 0;
  for (const e of run.live()) {
    if (!e.signal.fresh) continue;
    if (e.enteredDrain) {
      wasActive ??= new Set(
        (run.previous.clusters ?? []).filter((c) => c.state === 'ACTIVE').map((c) => clusterKey(c.namespace, c.name)),
      );
      if (wasActive.has(e.key)) change -= e.signal.readyReplicas ?? 0;
    } else if (e.reactivated && e.state === 'ACTIVE') change += e.signal.readyReplicas ?? 0;
  }
  if (change === 0) return;
  for (const e of run.live()) {
    const base = e.draining?.receiversReadyReplicas;
    if (e.enteredDrain || base === undefined) continue;
    e.draining = { ...e.draining!, receiversReadyReplicas: Math.max(0, base + change) };
  }
}

/** A warm cluster whose drain has reached its size takes its reason (WarmStandby, Lingering). */
function warmAtSize(entry: Entry): void {
  const warm = entry.keepWarm;
  if (!warm || !entry.draining || entry.draining.desiredMaxReplicas > warm.size) return;
  entry.reason = warm.reason;
  entry.message = warm.message;
}
