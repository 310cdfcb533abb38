import type { Condition } from '../api/common.js';
import type { CapacityAnswer } from '../api/capacity.js';
import type { InventoryCluster } from '../selection/inventory.js';
import { parseTime, SECOND } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';
import { uncoveredLost } from './replica-floor.js';
import { newGroupBecause, spreadShort } from './spread.js';

/*
 * Capacity answers (docs/placement-rules.md §10.11): a scale-out candidate
 * whose fresh answer says it cannot add the replicas it would need is passed
 * over (NoCapacity). An unknown, stale or missing answer changes nothing, and
 * no answer ever removes, evicts or drains a listed cluster: answers are read
 * only when choosing the next cluster to add.
 */

/** A fresh answer that knows a number. */
export interface FreshCapacity {
  readonly addable: number;
  readonly reason: string;
  readonly source: string;
  /** When it turns stale (ms): passing a cluster over may end then. */
  readonly staleAt: number;
}

/** The newest answer per cluster, kept only when fresh (`staleAfterSeconds`) and known (a whole number ≥ 0). */
export function freshCapacity(
  answers: readonly CapacityAnswer[],
  nowMs: number,
  staleAfterSeconds: number,
): Map<string, FreshCapacity> {
  const newest = new Map<string, { answer: CapacityAnswer; at: number }>();
  for (const answer of answers) {
    const at = parseTime(answer.observedAt);
    if (at === undefined) continue;
    const previous = newest.get(answer.cluster);
    if (!previous || at > previous.at) newest.set(answer.cluster, { answer, at });
  }
  const fresh = new Map<string, FreshCapacity>();
  for (const [cluster, { answer, at }] of newest) {
    const addable = answer.addableReplicas;
    const staleAt = at + staleAfterSeconds * SECOND;
    if (addable === undefined || !Number.isInteger(addable) || addable < 0 || nowMs >= staleAt) continue;
    fresh.set(cluster, { addable, reason: answer.reason, source: answer.source, staleAt });
  }
  return fresh;
}

/**
 * The replicas the `index`-th cluster added in this evaluation would need: the
 * larger of its replica floor (rule O3), the HPA's minReplicas (as an ACTIVE
 * cluster's fresh signal reports it) and, for the first one, the pending
 * replicas of the clusters at their ceiling, which it takes over; at least 1.
 */
export function neededReplicas(run: Evaluation, index: number): number {
  const floor = uncoveredLost(run)[index]?.lastReadyReplicas ?? 0;
  const active = run.live().filter((e) => e.state === 'ACTIVE' && e.signal.fresh);
  const hpaMin = active.find((e) => e.desiredMinReplicas === undefined && e.signal.minReplicas !== undefined)?.signal
    .minReplicas;
  const pending =
    index === 0
      ? active.filter((e) => e.signal.atCapacityCeiling).reduce((a, e) => a + (e.signal.pendingPods ?? 0), 0)
      : 0;
  return Math.max(1, floor, hpaMin ?? 0, pending);
}

/** Why a fresh answer passes the candidate over, or undefined (no fresh answer, or enough room). */
function noCapacityBecause(run: Evaluation, cluster: InventoryCluster, index: number): string | undefined {
  const answer = run.capacity.get(cluster.key);
  if (!answer) return undefined;
  const needed = neededReplicas(run, index);
  if (answer.addable >= needed) return undefined;
  run.timers.push(answer.staleAt);
  return `capacity source ${answer.source} answered ${answer.addable} addable replica(s) < ${needed} needed: ${answer.reason}`;
}

/** A cluster scale-out adds, and what its P1 message adds to today's. */
export interface Addition {
  readonly cluster: InventoryCluster;
  readonly because: string;
}

/**
 * The next cluster scale-out adds from `candidates` (in rule O2's order):
 * the first addable one, passing over those without capacity (NoCapacity)
 * and, while `spread.minGroups` is not met, those of a group already counted
 * (the first of them is taken when no other group has a candidate). With no
 * answers and no spread this is the first addable candidate, as before.
 */
export function nextAddition(
  run: Evaluation,
  candidates: readonly InventoryCluster[],
  addable: (c: InventoryCluster) => boolean,
  isHeadroom: (e: Entry) => boolean,
): Addition | undefined {
  const index = run.transitions.filter((t) => t.id === 'P1').length;
  const covered = spreadShort(run, isHeadroom);
  const passed: string[] = [];
  const suffix = (text: string) =>
    text + (passed.length > 0 ? ` (passed over for NoCapacity: ${passed.join(', ')})` : '');
  let fallback: InventoryCluster | undefined;
  for (const cluster of candidates) {
    if (!addable(cluster)) continue;
    const why = noCapacityBecause(run, cluster, index);
    if (why) {
      passed.push(cluster.key);
      if (!run.noCapacity.has(cluster.key)) run.note(cluster.key, `not added (NoCapacity): ${why}`);
      run.noCapacity.set(cluster.key, why);
      continue;
    }
    if (!covered) return { cluster, because: suffix('') };
    const group = newGroupBecause(run, cluster, covered);
    if (group) return { cluster, because: suffix(group) };
    fallback ??= cluster;
  }
  return (
    fallback && {
      cluster: fallback,
      because: suffix(
        ` (spread.minGroups ${run.spreadMinGroups} not met: no candidate in another ${run.topologyKey} group)`,
      ),
    }
  );
}

/** The Satisfied condition naming the candidates passed over; reason NoCapacity when only they could have been added. */
export function withNoCapacity(
  run: Evaluation,
  condition: Omit<Condition, 'lastTransitionTime'>,
): Omit<Condition, 'lastTransitionTime'> {
  if (run.noCapacity.size === 0) return condition;
  const list = [...run.noCapacity].map(([cluster, why]) => `${cluster} (${why})`).join(', ');
  return {
    ...condition,
    reason: condition.reason === 'AllClustersAtCapacity' ? 'NoCapacity' : condition.reason,
    message: `${condition.message}; passed over for NoCapacity: ${list}`,
  };
}
