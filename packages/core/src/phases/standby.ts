import type { AutoscaleForCapacity } from '../api/placement.js';
import { parseTime, SECOND } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';
import { removeScaledIn } from './health.js';
import { isAddable } from './scale-out.js';

/*
 * The standby phase (docs/placement-rules.md §10.6 and §10.3, rules W1 and F3): which
 * SCALING_IN clusters are kept warm instead of drained away. Both kinds stay
 * SCALING_IN (MCO's consumers switch on the four states) with
 * `draining.desiredMaxReplicas` = their size, and neither counts toward
 * `minClustersBelowCapacityCeiling`:
 * - a warm standby (`warmStandbyClusters`), kept until it is reactivated or no
 *   longer needed, reason `WarmStandby`; it also gets `desiredMinReplicas` =
 *   its size, so its delivery runs that many whatever its HPA would choose;
 * - a cluster drained by fail-back, kept for `failBack.lingerSeconds` once at
 *   its size, reason `Lingering`.
 */

/** Reasons of a SCALING_IN cluster that may be kept warm. */
const WARM_REASONS: ReadonlySet<string | undefined> = new Set(['FailBack', 'Lingering', 'WarmStandby']);

/** Whether the health phase should leave a SCALING_IN cluster's R1 to this phase. */
export function mayKeepWarm(config: AutoscaleForCapacity): (entry: Entry) => boolean {
  const standby = (config.warmStandbyClusters ?? 0) > 0;
  return (entry) => standby || WARM_REASONS.has(entry.reason);
}

/**
 * The size of a warm cluster: `warmStandbyReplicas`, else the HPA's
 * minReplicas as an ACTIVE cluster without a replica floor of its own reports
 * it (a drained cluster's HPA shows the drain's bounds, a floored one its
 * floor), else its own, else 1.
 */
export function warmSize(run: Evaluation, config: AutoscaleForCapacity, entry: Entry): number {
  if (config.warmStandbyReplicas !== undefined) return config.warmStandbyReplicas;
  const active = run
    .byPriority(run.live())
    .find((e) => e.state === 'ACTIVE' && e.desiredMinReplicas === undefined && e.signal.minReplicas !== undefined);
  return Math.max(1, active?.signal.minReplicas ?? entry.signal.minReplicas ?? 1);
}

export function standby(run: Evaluation, config: AutoscaleForCapacity, max: number): void {
  const wanted = config.warmStandbyClusters ?? 0;
  const kept = new Set<Entry>();
  if (wanted > 0) {
    // The highest-priority SCALING_IN clusters that could take load again, outside the regions of
    // the ACTIVE clusters first (rule O2, docs/placement-rules.md §10.7): an outage of a region takes its standby with it.
    const active = run.regionsOf((e) => e.state === 'ACTIVE');
    for (const entry of run.outside(run.byPriority(run.live()), active)) {
      if (kept.size >= wanted) break;
      if (entry.state !== 'SCALING_IN' || run.selected.rankOf(entry.key) === undefined) continue;
      if (run.unhealthyBecause(entry.key, entry.signal) || entry.signal.unreachable) continue;
      kept.add(entry);
    }
    for (const cluster of run.outside(run.selected.eligible, active)) {
      if (kept.size >= wanted || (max > 0 && run.live().length >= max)) break;
      if (!isAddable(run, cluster)) continue;
      const message = `warmStandbyClusters ${wanted}: kept warm, ready to take load`;
      run.add(cluster, `added as a warm standby (${message})`);
      const entry = run.byKey.get(cluster.key)!;
      run.move(entry, 'P2', 'SCALING_IN', 'WarmStandby', message);
      kept.add(entry);
    }
  }

  const b = run.behavior;
  for (const entry of run.live()) {
    if (entry.state !== 'SCALING_IN') continue;
    const size = warmSize(run, config, entry);
    if (kept.has(entry)) {
      entry.keepWarm = {
        size,
        reason: 'WarmStandby',
        message: `warm standby at ${size} replica(s) (warmStandbyClusters ${wanted}); not counted toward minClustersBelowCapacityCeiling`,
      };
      run.note(
        entry.key,
        `kept as a warm standby at ${size} replica(s): warmStandbyClusters is ${wanted}; desiredMinReplicas ${size} keeps them running (rule W1)`,
      );
    } else if (b.failBackEnabled && (entry.reason === 'FailBack' || entry.reason === 'Lingering')) {
      // The linger clock runs only while the preferred clusters are calm: any pressure restarts it.
      const atSize = entry.draining !== undefined && entry.draining.desiredMaxReplicas <= size;
      const pressure = atSize ? preferredPressure(run, entry) : undefined;
      entry.lingerSince = atSize && !pressure ? (entry.lingerSince ?? run.now) : undefined;
      const since = parseTime(entry.lingerSince);
      const wantsOutSince = entry.reason === 'Lingering' ? allWantScaleInSince(run, entry) : undefined;
      const wantsOut =
        wantsOutSince !== undefined && run.nowMs - wantsOutSince >= b.scaleInStabilizationSeconds * SECOND;
      if (wantsOut) {
        entry.lingerSince = undefined;
        entry.scaleInCandidateSince = undefined;
        entry.reason = 'LingerEnded';
        entry.message = `it and the preferred clusters wanted scale-in for scaleIn.stabilizationWindowSeconds (${b.scaleInStabilizationSeconds}s) while it lingered: the load it was kept warm for is gone; draining on to removal`;
      } else if (since !== undefined && run.nowMs - since >= b.failBackLingerSeconds * SECOND) {
        entry.lingerSince = undefined;
        entry.reason = 'LingerEnded';
        entry.message = `lingered warm for failBack.lingerSeconds (${b.failBackLingerSeconds}s) while the preferred clusters were calm; draining on to removal`;
      } else {
        if (wantsOutSince !== undefined) {
          run.timer(wantsOutSince, b.scaleInStabilizationSeconds);
          run.note(
            entry.key,
            `it and the preferred clusters want scale-in: its linger ends at ${run.timeAfter(wantsOutSince, b.scaleInStabilizationSeconds)} (scaleIn.stabilizationWindowSeconds)`,
          );
        }
        entry.keepWarm = {
          size,
          reason: 'Lingering',
          message: `drained by fail-back; lingers warm at ${size} replica(s) until the preferred clusters have been calm for failBack.lingerSeconds (${b.failBackLingerSeconds}s)`,
        };
        if (since !== undefined) {
          run.timer(since, b.failBackLingerSeconds);
          run.note(
            entry.key,
            `lingering warm at ${size} replica(s) until ${run.timeAfter(since, b.failBackLingerSeconds)} (failBack.lingerSeconds of calm preferred clusters), then drained and removed`,
          );
        } else if (pressure) {
          run.note(entry.key, `lingering warm at ${size} replica(s): ${pressure}, so the linger clock restarts`);
        }
      }
    } else if (entry.reason === 'WarmStandby') {
      entry.reason = 'StandbyReleased';
      entry.message = `no longer needed as a warm standby (warmStandbyClusters ${wanted}); draining on to removal`;
    }
    if (entry.removalHeld && !entry.keepWarm) removeScaledIn(run, entry);
  }
  standbyFloors(run);
}

/**
 * Rule W1's size as a floor: a standby gets `desiredMinReplicas` = its size,
 * read by its delivery as the HPA's minReplicas (as rule O3's floor is), so it
 * runs that many replicas and not only at most that many. Any other cluster
 * loses such a floor: a floor without `replacesCluster` is a standby's.
 */
function standbyFloors(run: Evaluation): void {
  for (const entry of run.live()) {
    if (entry.keepWarm?.reason === 'WarmStandby') entry.desiredMinReplicas = entry.keepWarm.size;
    else if (entry.replacesCluster === undefined) entry.desiredMinReplicas = undefined;
  }
}

/**
 * Rule F3's early end: since when the lingering `entry` and every ACTIVE
 * cluster of higher priority have all wanted scale-in (section 4), or
 * undefined. Demand is then below what the preferred clusters' minimum
 * replicas serve, so the linger guards against nothing. The preferred
 * clusters must agree: a load balancer that sends a lingering cluster little
 * traffic leaves its own HPA at its minimum whatever the demand.
 */
function allWantScaleInSince(run: Evaluation, entry: Entry): number | undefined {
  let since = parseTime(entry.scaleInCandidateSince);
  for (const e of run.activeAbove(entry)) {
    if (since === undefined) break;
    const t = parseTime(e.scaleInCandidateSince);
    since = t === undefined ? undefined : Math.max(since, t);
  }
  return since;
}

/**
 * Why a higher-priority ACTIVE cluster than `entry` is under pressure (no
 * fresh signal, HPA at its maximum, pending pods, a FailedScaleUp), or undefined.
 */
function preferredPressure(run: Evaluation, entry: Entry): string | undefined {
  for (const e of run.activeAbove(entry)) {
    const s = e.signal;
    if (!s.fresh) return `${e.key} has no fresh signal`;
    if (s.currentReplicas !== undefined && s.maxReplicas !== undefined && s.currentReplicas >= s.maxReplicas)
      return `${e.key} is at its HPA maximum (${s.currentReplicas}/${s.maxReplicas})`;
    if ((s.pendingPods ?? 0) > 0) return `${e.key} has ${s.pendingPods} pending pod(s)`;
    if (s.failedScaleUp === true) return `${e.key} saw a FailedScaleUp`;
  }
  return undefined;
}
