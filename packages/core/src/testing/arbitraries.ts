import fc from 'fast-check';
import type { ClusterProfile } from '../api/cluster-profile.js';
import type {
  ClusterSelectorExpression,
  ClusterSelectorRule,
  ClusterSelectorTerm,
  PlacementCluster,
  PlacementSpec,
} from '../api/placement.js';
import { CLUSTER_STATES } from '../api/placement.js';
import type { Signal } from '../api/signal.js';
import { aClusterProfile } from './builders.js';

// Arbitraries mirror the zod schemas in ../api; a property test in
// test/arbitraries.test.ts checks that every value they make parses.

const EPOCH = Date.UTC(2026, 0, 1);
export const LABEL_KEYS = ['region', 'tier', 'gpu', 'env'] as const;
export const LABEL_VALUES = ['a', 'b', 'c'] as const;
export const NAMESPACES = ['fleet', 'edge'] as const;

export const arbTimestamp = (minSeconds = 0, maxSeconds = 7200): fc.Arbitrary<string> =>
  fc
    .integer({ min: minSeconds, max: maxSeconds })
    .map((s) => new Date(EPOCH + s * 1000).toISOString().replace('.000Z', 'Z'));

export const arbLabels: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  fc.constantFrom(...LABEL_KEYS),
  fc.constantFrom(...LABEL_VALUES),
  { maxKeys: LABEL_KEYS.length },
);

export const arbClusterKey: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...NAMESPACES), fc.integer({ min: 0, max: 11 }))
  .map(([ns, i]) => `${ns}/c${String(i).padStart(2, '0')}`);

export const arbClusterProfile: fc.Arbitrary<ClusterProfile> = fc
  .record({
    key: arbClusterKey,
    labels: arbLabels,
    controlPlaneHealthy: fc.option(fc.boolean(), { nil: undefined, freq: 3 }),
    deleting: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  })
  .map(({ key, labels, controlPlaneHealthy, deleting }) =>
    aClusterProfile(key, { labels, ...(controlPlaneHealthy !== undefined ? { controlPlaneHealthy } : {}), deleting }),
  );

/** A fleet: ClusterProfiles with distinct identities. */
export const arbFleet = (maxLength = 12): fc.Arbitrary<ClusterProfile[]> =>
  fc.uniqueArray(arbClusterProfile, {
    maxLength,
    selector: (p) => `${p.metadata.namespace}/${p.metadata.name}`,
  });

const arbOperator = fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist');
const valuesFor = (operator: string) =>
  operator === 'In' || operator === 'NotIn'
    ? fc.uniqueArray(fc.constantFrom(...LABEL_VALUES), { minLength: 1, maxLength: 3 })
    : fc.constant(undefined);

export const arbExpression: fc.Arbitrary<ClusterSelectorExpression> = fc.oneof(
  arbOperator.chain((operator) =>
    fc.record({ key: fc.constantFrom(...LABEL_KEYS), values: valuesFor(operator) }).map(({ key, values }) => ({
      labelSelector: { key, operator, ...(values ? { values } : {}) },
    })),
  ),
  fc
    .record({
      field: fc.constantFrom('metadata.name', 'metadata.namespace'),
      operator: fc.constantFrom('In', 'NotIn'),
      values: fc.uniqueArray(fc.constantFrom('c00', 'c01', 'c02', 'c03', ...NAMESPACES), {
        minLength: 1,
        maxLength: 3,
      }),
    })
    .map((fieldSelector) => ({ fieldSelector })),
);

export const arbTerm: fc.Arbitrary<ClusterSelectorTerm> = fc
  .array(arbExpression, { maxLength: 3 })
  .map((matchExpressions) => ({ matchExpressions }));

export const arbRule: fc.Arbitrary<ClusterSelectorRule> = fc.oneof(
  fc.constant({ type: 'all-clusters' }),
  fc.uniqueArray(arbClusterKey, { minLength: 1, maxLength: 5 }).map((keys) => ({
    type: 'cluster-list',
    arguments: { clusters: keys.join(', ') },
  })),
  fc.constantFrom('c0[0-5]', '^fleet/', 'edge/c1[01]', '(?i)C0\\d').map((regex) => ({
    type: 'cluster-name-regex',
    arguments: { regex },
  })),
);

/** A valid placement spec over the fleet made by `arbFleet`. */
export const arbPlacementSpec: fc.Arbitrary<PlacementSpec> = fc.record(
  {
    clusterSelectorRules: fc.array(arbRule, { minLength: 1, maxLength: 3 }),
    affinity: fc
      .record(
        {
          form: fc.constantFrom(
            'requiredDuringSchedulingRequiredDuringExecution',
            'requiredDuringSchedulingIgnoredDuringExecution',
          ),
          terms: fc.array(arbTerm, { minLength: 1, maxLength: 3 }),
          preferred: fc.array(fc.record({ weight: fc.integer({ min: 1, max: 100 }), preference: arbTerm }), {
            maxLength: 2,
          }),
        },
        { requiredKeys: ['form', 'terms'] },
      )
      .map(({ form, terms, preferred }) => ({
        clusterAffinity: {
          [form]: { clusterSelectorTerms: terms },
          ...(preferred && preferred.length > 0 ? { preferredDuringSchedulingIgnoredDuringExecution: preferred } : {}),
        },
      })),
    scaling: fc
      .record(
        {
          min: fc.integer({ min: 1, max: 4 }),
          maxClusters: fc.integer({ min: 0, max: 6 }),
          useDraining: fc.boolean(),
          scaleInWindow: fc.integer({ min: 0, max: 600 }),
          cooldown: fc.integer({ min: 0, max: 600 }),
          scaleOutWindow: fc.integer({ min: 0, max: 120 }),
          failBackWindow: fc.integer({ min: 0, max: 600 }),
          warmStandbyClusters: fc.integer({ min: 0, max: 2 }),
        },
        { requiredKeys: ['min'] },
      )
      .map(({ min, maxClusters, useDraining, scaleInWindow, cooldown, scaleOutWindow, failBackWindow, ...more }) => ({
        autoscaleForCapacity: {
          minClustersBelowCapacityCeiling: min,
          ...(maxClusters !== undefined ? { maxClusters } : {}),
          ...(useDraining !== undefined ? { useDraining } : {}),
          // A warm standby is valid only with draining.
          ...(more.warmStandbyClusters !== undefined && useDraining
            ? { warmStandbyClusters: more.warmStandbyClusters }
            : {}),
          behavior: {
            ...(scaleOutWindow !== undefined ? { scaleOut: { stabilizationWindowSeconds: scaleOutWindow } } : {}),
            scaleIn: {
              ...(scaleInWindow !== undefined ? { stabilizationWindowSeconds: scaleInWindow } : {}),
              ...(cooldown !== undefined ? { cooldownSeconds: cooldown } : {}),
            },
            // Fail-back is valid only with draining.
            ...(failBackWindow !== undefined && useDraining
              ? { failBack: { enabled: true, stabilizationWindowSeconds: failBackWindow } }
              : {}),
          },
        },
      })),
  },
  { requiredKeys: [] },
);

/** A signal observed at most 300 s before `2026-01-01T02:00:00Z` (the default evaluation time of properties). */
export const arbSignal = (cluster: fc.Arbitrary<string> = arbClusterKey): fc.Arbitrary<Signal> =>
  fc
    .record(
      {
        cluster,
        observedAt: arbTimestamp(6900, 7200),
        hpa: fc
          .record({
            min: fc.integer({ min: 0, max: 3 }),
            max: fc.integer({ min: 3, max: 10 }),
            current: fc.integer({ min: 0, max: 12 }),
            limited: fc.constantFrom('True', 'False', 'Unknown') as fc.Arbitrary<'True' | 'False' | 'Unknown'>,
            reason: fc.constantFrom('TooManyReplicas', 'TooFewReplicas', 'DesiredWithinRange'),
          })
          .map(({ min, max, current, limited, reason }) => ({
            currentReplicas: current,
            desiredReplicas: current,
            minReplicas: min,
            maxReplicas: max,
            scalingLimited: { status: limited, reason },
          })),
        pendingPods: fc.integer({ min: 0, max: 5 }),
        failedScaleUp: fc.boolean(),
        nodeLimitReached: fc.boolean(),
        workloadHealthy: fc.boolean(),
        atCapacityCeiling: fc.boolean(),
        wantsScaleIn: fc.boolean(),
        readyReplicas: fc.integer({ min: 0, max: 12 }),
        transportError: fc.record({
          reason: fc.constantFrom('timeout', 'refused', 'tls'),
          consecutivePolls: fc.integer({ min: 1, max: 3 }),
        }),
      },
      { requiredKeys: ['cluster', 'observedAt'] },
    )
    .map((s) => s as Signal);

/** A status.clusters entry for one of `arbClusterKey`'s clusters. */
export const arbPlacementCluster: fc.Arbitrary<PlacementCluster> = fc
  .record({ key: arbClusterKey, state: fc.constantFrom(...CLUSTER_STATES), since: arbTimestamp(0, 7200) })
  .map(({ key, state, since }) => {
    const [namespace, name] = key.split('/') as [string, string];
    return { name, namespace, state, lastTransitionTime: since };
  });

export const arbStatusClusters: fc.Arbitrary<PlacementCluster[]> = fc.uniqueArray(arbPlacementCluster, {
  maxLength: 8,
  selector: (c) => `${c.namespace}/${c.name}`,
});
