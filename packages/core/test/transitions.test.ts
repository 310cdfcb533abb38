import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAtCeilingSignal,
  anAutoscalingSpec,
  aScaleInSignal,
  aSignal,
  aSteadySignal,
} from '@mco/core/testing';
import type { ClusterProfile, PlacementSpec } from '@mco/core';
import { at, condition, listed, moves, run, states, type Case } from './helpers.js';

const fleet: ClusterProfile[] = [
  aClusterProfile('fleet/a', { labels: { gpu: 'l4', region: 'east' } }),
  aClusterProfile('fleet/b', { labels: { gpu: 'l4', region: 'west' } }),
  aClusterProfile('fleet/c', { labels: { gpu: 'l4', region: 'eu' } }),
];
const relabel = (key: string, labels: Record<string, string>) =>
  fleet.map((p) => (`${p.metadata.namespace}/${p.metadata.name}` === key ? aClusterProfile(key, { labels }) : p));
const without = (key: string) => fleet.filter((p) => `${p.metadata.namespace}/${p.metadata.name}` !== key);
const withHealth = (key: string, controlPlaneHealthy: boolean) =>
  fleet.map((p) =>
    `${p.metadata.namespace}/${p.metadata.name}` === key
      ? aClusterProfile(key, { labels: p.metadata.labels ?? {}, controlPlaneHealthy })
      : p,
  );

const min1 = anAutoscalingSpec(1);
const min1Draining = anAutoscalingSpec(1, { useDraining: true });
const gpuRDE: Omit<PlacementSpec, 'scaling'> = {
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [
          { matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'In', values: ['l4'] } }] },
        ],
      },
    },
  },
};
const gpuIDE: Omit<PlacementSpec, 'scaling'> = {
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution:
        gpuRDE.affinity!.clusterAffinity!.requiredDuringSchedulingRequiredDuringExecution,
    },
  },
};

interface Row {
  readonly name: string;
  readonly input: Case;
  readonly states: string[];
  readonly moves: string[];
  /** One pattern per transition, matched against its human reason. */
  readonly reasons: RegExp[];
  readonly requeue: number | null;
}

const NOW = 1000;
const fresh = NOW - 10;

const rows: Row[] = [
  {
    name: 'a new autoscaling placement adds the highest-priority cluster (P1)',
    input: { spec: min1, profiles: fleet, now: NOW },
    states: ['fleet/a ACTIVE'],
    moves: ['P1 fleet/a -->ACTIVE'],
    reasons: [/headroom 0 < min 1: added the highest-priority eligible cluster/],
    requeue: null,
  },
  {
    name: 'a new placement with min 2 adds two clusters in one evaluation (P1, P1)',
    input: { spec: anAutoscalingSpec(2), profiles: fleet, now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P1 fleet/a -->ACTIVE', 'P1 fleet/b -->ACTIVE'],
    reasons: [/headroom 0 < min 2/, /headroom 1 < min 2/],
    requeue: null,
  },
  {
    name: 'without scaling every eligible cluster becomes ACTIVE at once (P1)',
    input: { spec: {}, profiles: fleet, now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE', 'fleet/c ACTIVE'],
    moves: ['P1 fleet/a -->ACTIVE', 'P1 fleet/b -->ACTIVE', 'P1 fleet/c -->ACTIVE'],
    reasons: [/no scaling is configured/, /no scaling is configured/, /no scaling is configured/],
    requeue: null,
  },
  {
    name: 'scale-out adds the next cluster when the active one is at its capacity ceiling (P1)',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)], lastAdditionTime: at(0) },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P1 fleet/b -->ACTIVE'],
    reasons: [/headroom 0 < min 1/],
    requeue: 170, // fleet/a's signal turns stale
  },
  {
    name: 'pending pods with a FailedScaleUp also mean the capacity ceiling (P1)',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSignal('fleet/a', at(fresh), { pendingPods: 2, failedScaleUp: true })],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P1 fleet/b -->ACTIVE'],
    reasons: [/headroom 0 < min 1/],
    requeue: 170,
  },
  {
    name: 'pending pods without a FailedScaleUp are not the ceiling: nothing is added',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSignal('fleet/a', at(fresh), { pendingPods: 2, failedScaleUp: false })],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'a stale at-ceiling signal counts as not at the ceiling: nothing is added',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(NOW - 180))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: [],
    reasons: [],
    requeue: null,
  },
  {
    name: 'scale-out skips a cluster whose control plane is unhealthy (P1 of the next one)',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: withHealth('fleet/b', false),
      signals: [anAtCeilingSignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['P1 fleet/c -->ACTIVE'],
    reasons: [/headroom 0 < min 1/],
    requeue: 170,
  },
  {
    name: 'scale-out stops at maxClusters',
    input: {
      spec: anAutoscalingSpec(1, { maxClusters: 1 }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'a SCALING_IN cluster is reactivated before a new cluster is added (P3)',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'SCALING_IN', 500)] },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
    reasons: [/headroom 0 < min 1: reactivated, preferred over adding a cluster/],
    requeue: 170,
  },
  {
    name: 'the lowest-priority cluster that wanted scale-in for the whole window moves to SCALING_IN (P2)',
    input: {
      spec: min1,
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { scaleInCandidateSince: at(600) }),
          listed('fleet/b', 'ACTIVE', 0, { scaleInCandidateSince: at(600) }),
        ],
        lastAdditionTime: at(0),
      },
      profiles: fleet,
      signals: [aScaleInSignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b SCALING_IN'],
    moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    reasons: [/wanted scale-in for 400s, the lowest-priority such cluster; headroom stays 1 >= min 1 without it/],
    requeue: 170,
  },
  {
    name: 'no scale-in before the stabilization window has passed; requeued for its end',
    input: {
      spec: min1,
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { scaleInCandidateSince: at(900) }),
          listed('fleet/b', 'ACTIVE', 0, { scaleInCandidateSince: at(900) }),
        ],
      },
      profiles: fleet,
      signals: [aScaleInSignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170, // staleness at 1170 comes before the window's end at 1200
  },
  {
    name: 'no scale-in within the cooldown after the last addition; requeued for its end',
    input: {
      spec: anAutoscalingSpec(1, { behavior: { scaleIn: { stabilizationWindowSeconds: 0 } } }),
      status: {
        clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)],
        lastAdditionTime: at(NOW - 100),
      },
      profiles: fleet,
      signals: [aScaleInSignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'no scale-in when headroom without the cluster would drop below min',
    input: {
      spec: anAutoscalingSpec(2, { behavior: { scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 } } }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aScaleInSignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'no scale-in while another ACTIVE cluster has no fresh signal (fail static)',
    input: {
      spec: anAutoscalingSpec(1, { behavior: { scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 } } }),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'with RDE a cluster whose labels stop matching is evicted (E1)',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING'],
    reasons: [/no longer eligible: it no longer matches requiredDuringSchedulingRequiredDuringExecution/],
    requeue: 170,
  },
  {
    name: 'with IDE a label change keeps the cluster listed',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuIDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: relabel('fleet/a', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/b ACTIVE', 'fleet/a ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'with IDE a deleted ClusterProfile evicts its cluster (E1)',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuIDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: without('fleet/a'),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/b ACTIVE', 'fleet/a EVICTING'],
    moves: ['E1 fleet/a ACTIVE->EVICTING'],
    reasons: [/no longer eligible: its ClusterProfile is missing/],
    requeue: 170,
  },
  {
    name: 'a cluster dropping out of the cluster-name-regex rule is evicted (E1)',
    input: {
      spec: anAutoscalingSpec(
        1,
        {},
        { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: 'fleet/[ab]' } }] },
      ),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/c', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/c', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c EVICTING'],
    moves: ['E1 fleet/c ACTIVE->EVICTING'],
    reasons: [/it dropped out of the cluster selector rules/],
    requeue: 170,
  },
  {
    name: 'an EVICTING cluster that is eligible again becomes ACTIVE (E2)',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuRDE),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0),
          listed('fleet/b', 'EVICTING', 900, {
            draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: at(900) },
          }),
        ],
      },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['E2 fleet/b EVICTING->ACTIVE'],
    reasons: [/eligible again/],
    requeue: 170,
  },
  {
    name: 'a SCALING_IN cluster that is no longer eligible is evicted (E3)',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'SCALING_IN', 900)] },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b EVICTING'],
    moves: ['E3 fleet/b SCALING_IN->EVICTING'],
    reasons: [/no longer eligible/],
    requeue: 170,
  },
  {
    name: 'an ACTIVE cluster whose control plane is unhealthy becomes UNHEALTHY (H1) and a replacement is added',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: withHealth('fleet/a', false),
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a UNHEALTHY', 'fleet/b ACTIVE'],
    moves: ['H1 fleet/a ACTIVE->UNHEALTHY', 'P1 fleet/b -->ACTIVE'],
    reasons: [/ControlPlaneHealthy is False/, /headroom 0 < min 1/],
    requeue: 170,
  },
  {
    name: 'an ACTIVE cluster whose workload is reported unhealthy becomes UNHEALTHY (H1)',
    input: {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSignal('fleet/a', at(fresh), { workloadHealthy: false }), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a UNHEALTHY', 'fleet/b ACTIVE'],
    moves: ['H1 fleet/a ACTIVE->UNHEALTHY'],
    reasons: [/the signal reports the workload unhealthy/],
    requeue: 170,
  },
  {
    name: 'an UNHEALTHY cluster whose control plane recovered becomes ACTIVE (H2)',
    input: {
      spec: anAutoscalingSpec(1),
      status: {
        clusters: [
          listed('fleet/a', 'UNHEALTHY', 900, { reason: 'ControlPlaneUnhealthy' }),
          listed('fleet/b', 'ACTIVE', 0),
        ],
      },
      profiles: withHealth('fleet/a', true),
      signals: [aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['H2 fleet/a UNHEALTHY->ACTIVE'],
    reasons: [/healthy again/],
    requeue: 170,
  },
  {
    name: 'a cluster made UNHEALTHY by its workload stays UNHEALTHY while its signal is missing',
    input: {
      spec: anAutoscalingSpec(1),
      status: {
        clusters: [
          listed('fleet/a', 'UNHEALTHY', 900, { reason: 'WorkloadUnhealthy' }),
          listed('fleet/b', 'ACTIVE', 0),
        ],
      },
      profiles: fleet,
      signals: [aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a UNHEALTHY', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'a SCALING_IN cluster that turns unhealthy becomes UNHEALTHY (H3)',
    input: {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'SCALING_IN', 900)] },
      profiles: withHealth('fleet/b', false),
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b UNHEALTHY'],
    moves: ['H3 fleet/b SCALING_IN->UNHEALTHY'],
    reasons: [/ControlPlaneHealthy is False/],
    requeue: 170,
  },
  {
    name: 'a SCALING_IN cluster down to one replica is removed (R1)',
    input: {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'SCALING_IN', 900)] },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh), 1)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: ['R1 fleet/b SCALING_IN->-'],
    reasons: [/scaled in: observed 1 replica\(s\)/],
    requeue: 170,
  },
  {
    name: 'an UNHEALTHY cluster is removed after unhealthyTimeoutSeconds (R2)',
    input: {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'UNHEALTHY', NOW - 900)] },
      profiles: withHealth('fleet/b', false),
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: ['R2 fleet/b UNHEALTHY->-'],
    reasons: [/UNHEALTHY for unhealthyTimeoutSeconds \(900s\)/],
    requeue: 170,
  },
  {
    name: 'an UNHEALTHY cluster within unhealthyTimeoutSeconds stays; requeued for the timeout',
    input: {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'UNHEALTHY', NOW - 850)] },
      profiles: withHealth('fleet/b', false),
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b UNHEALTHY'],
    moves: [],
    reasons: [],
    requeue: 50,
  },
  {
    name: 'an EVICTING cluster down to one replica is removed (R3)',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'EVICTING', 900)] },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh), 1)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: ['R3 fleet/b EVICTING->-'],
    reasons: [/drained: observed 1 replica\(s\)/],
    requeue: 170,
  },
  {
    name: 'an EVICTING cluster is removed after evictionTimeoutSeconds even with replicas left (R3)',
    input: {
      spec: anAutoscalingSpec(1, { behavior: { evictionTimeoutSeconds: 600 } }, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'EVICTING', NOW - 600)] },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh), 6)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE'],
    moves: ['R3 fleet/b EVICTING->-'],
    reasons: [/EVICTING for evictionTimeoutSeconds \(600s\)/],
    requeue: 170,
  },
  {
    name: 'without scaling an ineligible cluster is removed at once (E1 then R3)',
    input: {
      spec: gpuRDE,
      status: {
        clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0), listed('fleet/c', 'ACTIVE', 0)],
      },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['E1 fleet/b ACTIVE->EVICTING', 'R3 fleet/b EVICTING->-'],
    reasons: [/no longer eligible/, /nothing to drain without autoscaleForCapacity/],
    requeue: null,
  },
  // Found by the model-based test (seeds that failed become table cases):
  {
    name: 'an UNHEALTHY cluster whose ClusterProfile was deleted never becomes ACTIVE again; it waits for R2',
    input: {
      spec: anAutoscalingSpec(1),
      status: {
        clusters: [
          listed('fleet/a', 'UNHEALTHY', 900, { reason: 'ControlPlaneUnhealthy' }),
          listed('fleet/b', 'ACTIVE', 0),
        ],
      },
      profiles: without('fleet/a'),
      signals: [aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/b ACTIVE', 'fleet/a UNHEALTHY'],
    moves: [],
    reasons: [],
    requeue: 170,
  },
  {
    name: 'scale-out skips a cluster whose fresh signal says it is at its capacity ceiling',
    input: {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), anAtCeilingSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['P1 fleet/c -->ACTIVE'],
    reasons: [/headroom 0 < min 1/],
    requeue: 170,
  },
  {
    name: 'a reactivated cluster counts as headroom although its drain-capped HPA looked at its ceiling (P3)',
    input: {
      spec: min1Draining,
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0),
          listed('fleet/b', 'SCALING_IN', 900, {
            draining: { desiredMaxReplicas: 2, lastReplicaCountDecrease: at(900) },
          }),
        ],
      },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), anAtCeilingSignal('fleet/b', at(fresh), 2)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
    reasons: [/reactivated, preferred over adding a cluster/],
    requeue: 170,
  },
  {
    name: 'E comes before H: an ineligible and unhealthy cluster is evicted, not marked unhealthy',
    input: {
      spec: anAutoscalingSpec(1, {}, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: [
        fleet[0]!,
        aClusterProfile('fleet/b', { labels: { gpu: 'none' }, controlPlaneHealthy: false }),
        fleet[2]!,
      ],
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING'],
    reasons: [/no longer eligible/],
    requeue: 170,
  },
];

describe('state transitions (docs/placement-rules.md §3)', () => {
  it.each(rows)('$name', (row) => {
    const d = run(row.input);
    expect(states(d)).toEqual(row.states);
    expect(moves(d)).toEqual(row.moves);
    expect(d.transitions).toHaveLength(row.reasons.length);
    d.transitions.forEach((t, i) => expect(t.reason).toMatch(row.reasons[i]!));
    expect(d.requeueAfterSeconds).toBe(row.requeue);
    expect(condition(d, 'Valid')?.status).toBe('True');
  });

  it('sets lastTransitionTime on every transition and lastAdditionTime on P1', () => {
    const d = run(rows[3]!.input);
    expect(d.status.clusters).toEqual([
      {
        name: 'a',
        namespace: 'fleet',
        state: 'ACTIVE',
        lastTransitionTime: at(0),
        atCapacityCeiling: true,
        lastReadyReplicas: 10,
      },
      {
        name: 'b',
        namespace: 'fleet',
        state: 'ACTIVE',
        lastTransitionTime: at(NOW),
        reason: 'Added',
        message: 'headroom 0 < min 1: added the highest-priority eligible cluster',
      },
    ]);
    expect(d.status.lastAdditionTime).toBe(at(NOW));
    expect(d.status.lastClusterRemovalTime).toBeUndefined();
  });

  it('without scaling a cluster entry has the reason and no message (the transition keeps it)', () => {
    const d = run(rows[2]!.input);
    expect(d.status.clusters?.[0]).toEqual({
      name: 'a',
      namespace: 'fleet',
      state: 'ACTIVE',
      lastTransitionTime: at(NOW),
      reason: 'Added',
    });
    expect(d.transitions[0]?.reason).toBe('eligible, and no scaling is configured: every eligible cluster runs');
  });

  it('sets lastClusterRemovalTime on any removal', () => {
    const r1 = rows.find((r) => r.moves[0]?.startsWith('R1'))!;
    expect(run(r1.input).status.lastClusterRemovalTime).toBe(at(NOW));
  });

  it('records since when an ACTIVE cluster wants scale-in, and clears it when the signal goes stale', () => {
    const input: Case = {
      spec: min1,
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    };
    const first = run(input);
    expect(first.status.clusters?.[1]?.scaleInCandidateSince).toBe(at(NOW));
    expect(first.requeueAfterSeconds).toBe(170);
    const later = run({
      ...input,
      status: first.status,
      signals: [aSteadySignal('fleet/a', at(NOW + 100))],
      now: NOW + 100,
    });
    expect(later.status.clusters?.[1]?.scaleInCandidateSince).toBeUndefined();
  });

  it('a new placement waits for nothing: capacity-driven scale-out honours the stabilization window only once min is met', () => {
    const spec = anAutoscalingSpec(1, { behavior: { scaleOut: { stabilizationWindowSeconds: 120 } } });
    const bootstrap = run({ spec, profiles: fleet, now: NOW });
    expect(moves(bootstrap)).toEqual(['P1 fleet/a -->ACTIVE']);

    const short = run({
      spec,
      status: bootstrap.status,
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(NOW + 30))],
      now: NOW + 30,
    });
    expect(moves(short)).toEqual([]);
    expect(condition(short, 'Satisfied')).toMatchObject({
      status: 'False',
      reason: 'ScaleOutStabilizing',
      lastTransitionTime: at(NOW + 30),
    });
    expect(short.requeueAfterSeconds).toBe(120);

    const stillShort = run({
      spec,
      status: short.status,
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(NOW + 100))],
      now: NOW + 100,
    });
    expect(moves(stillShort)).toEqual([]);
    expect(stillShort.requeueAfterSeconds).toBe(50);

    const due = run({
      spec,
      status: stillShort.status,
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(NOW + 150))],
      now: NOW + 150,
    });
    expect(moves(due)).toEqual(['P1 fleet/b -->ACTIVE']);
    expect(condition(due, 'Satisfied')).toMatchObject({ status: 'True', reason: 'HeadroomAvailable' });
  });
});

describe('draining (useDraining)', () => {
  const base = (now: number, status: Case['status'], bReplicas: number): Case => ({
    spec: min1Draining,
    status,
    profiles: fleet,
    signals: [aSteadySignal('fleet/a', at(now - 5)), aScaleInSignal('fleet/b', at(now - 5), bReplicas)],
    now,
  });

  it('a cluster entering SCALING_IN gets desiredMaxReplicas = its observed replicas', () => {
    const d = run(
      base(
        NOW,
        {
          clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0, { scaleInCandidateSince: at(0) })],
        },
        8,
      ),
    );
    expect(moves(d)).toEqual(['P2 fleet/b ACTIVE->SCALING_IN']);
    expect(d.status.clusters?.[1]?.draining).toEqual({
      desiredMaxReplicas: 8,
      lastReplicaCountDecrease: at(NOW),
      currentReplicaCount: 8,
      // Make-before-break (rule D1): the start and the receivers' ready replicas, which later steps wait on.
      initialDesiredMaxReplicas: 8,
      receiversReadyReplicas: 5,
    });
    expect(d.requeueAfterSeconds).toBe(60);
  });

  it('steps down once per interval by ceil(25%), never below 1, without catch-up', () => {
    const draining = (desired: number, last: number) => ({
      clusters: [
        listed('fleet/a', 'ACTIVE', 0),
        listed('fleet/b', 'SCALING_IN', 0, {
          draining: { desiredMaxReplicas: desired, lastReplicaCountDecrease: at(last) },
        }),
      ],
    });
    const step = (desired: number, last: number) =>
      run(base(NOW, draining(desired, last), 5)).status.clusters?.[1]?.draining?.desiredMaxReplicas;
    expect(step(8, NOW - 60)).toBe(6); // 8 - ceil(2)
    expect(step(8, NOW - 59)).toBe(8); // interval not over
    expect(step(8, NOW - 600)).toBe(6); // one step, no catch-up
    expect(step(3, NOW - 60)).toBe(2); // 3 - ceil(0.75) = 3 - 1
    expect(step(1, NOW - 60)).toBe(1); // never below 1
  });

  it('leaving SCALING_IN clears draining', () => {
    const d = run({
      spec: min1Draining,
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0),
          listed('fleet/b', 'SCALING_IN', 0, {
            draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: at(900) },
          }),
        ],
      },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    });
    expect(moves(d)).toEqual(['P3 fleet/b SCALING_IN->ACTIVE']);
    expect(d.status.clusters?.[1]?.draining).toBeUndefined();
  });

  it('an evicted cluster starts draining from the HPA maximum when its current replicas are unknown', () => {
    const d = run({
      spec: anAutoscalingSpec(1, { useDraining: true }, gpuRDE),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: relabel('fleet/b', { gpu: 'none' }),
      signals: [aSteadySignal('fleet/a', at(fresh)), aSignal('fleet/b', at(fresh), { hpa: { maxReplicas: 12 } })],
      now: NOW,
    });
    expect(d.status.clusters?.[1]).toMatchObject({
      state: 'EVICTING',
      draining: { desiredMaxReplicas: 12, lastReplicaCountDecrease: at(NOW) },
    });
  });
});
