import { z } from 'zod';
import { ConditionSchema, ObjectMetaSchema, TimestampSchema } from './common.js';
import { TolerationSchema } from './taint.js';

export const PLACEMENT_GROUP = 'orchestra.multicluster.x-k8s.io';
export const PLACEMENT_API_VERSION = `${PLACEMENT_GROUP}/v1alpha1`;
export const PLACEMENT_KIND = 'MultiKubernetesClusterPlacement';

/** Longest `cluster-name-regex` pattern accepted (docs/placement-rules.md §2). */
export const MAX_REGEX_LENGTH = 1024;
/**
 * Largest compiled `cluster-name-regex` program accepted, in re2js
 * instructions. Any pattern of at most 1024 characters without counted
 * repetition fits (about 1.5 instructions a character at most); `{n,m}`
 * multiplies what it repeats (docs/api.md).
 */
export const MAX_REGEX_PROGRAM_SIZE = 2000;
/**
 * Most character positions a `cluster-name-regex` pattern may have: each
 * literal character, class or `.` counts once per copy a repetition makes
 * (`[a-z0-9-]{1,63}` is 63). A match costs at most positions / 8 table
 * lookups per character of the name (docs/performance.md, "Regex cost"), so
 * this bounds the first evaluation over a fleet; the matcher holds at most
 * 64 (two 32-bit words).
 */
export const MAX_REGEX_POSITIONS = 64;

/** The most entries status.failBack.provenReplicas keeps (rule F2). */
export const MAX_PROVEN_REPLICAS = 64;

// Generous: a too-long regex must reach the engine to be reported as InvalidRegex.
const shortString = z.string().max(4096);
const seconds = (description: string) => z.number().int().min(0).max(31_536_000).optional().describe(description);

// Fields from Google's v0.2.0 CRD carry no bounds beyond Google's own
// (minClustersBelowCapacityCeiling >= 1, the state enum): anything its CRD
// admitted must parse here. Operators are plain strings for the same reason;
// an unknown operator makes the spec invalid (condition Valid=False).
export const LabelSelectorRequirementSchema = z.object({
  key: z.string().describe('The ClusterProfile label key the selector applies to.'),
  operator: z.string().describe('One of In, NotIn, Exists, DoesNotExist.'),
  values: z
    .array(z.string())
    .optional()
    .describe('Non-empty for In and NotIn; empty or absent for Exists and DoesNotExist.'),
});
export type LabelSelectorRequirement = z.infer<typeof LabelSelectorRequirementSchema>;

export const FieldSelectorRequirementSchema = z.object({
  field: z.string().describe('The ClusterProfile field: metadata.name or metadata.namespace.'),
  operator: z.string().describe('One of In, NotIn, Exists, DoesNotExist.'),
  values: z
    .array(z.string())
    .optional()
    .describe('Non-empty for In and NotIn; empty or absent for Exists and DoesNotExist.'),
});
export type FieldSelectorRequirement = z.infer<typeof FieldSelectorRequirementSchema>;

export const PropertySelectorRequirementSchema = z
  .object({
    name: z.string().max(253).describe('The ClusterProfile status.properties name.'),
    operator: z.string().max(8).describe('One of Eq, Ne, Gt, Ge, Lt, Le.'),
    values: z
      .array(z.string().max(256))
      .max(1)
      .optional()
      .describe('Exactly one value; a Kubernetes quantity (e.g. 16, 1.5, 80Gi, 250m) for Gt, Ge, Lt and Le.'),
  })
  .describe(
    'mco extension: compares a ClusterProfile property as a Kubernetes quantity; a cluster without it matches only Ne.',
  );
export type PropertySelectorRequirement = z.infer<typeof PropertySelectorRequirementSchema>;

export const ClusterSelectorExpressionSchema = z
  .object({
    labelSelector: LabelSelectorRequirementSchema.optional(),
    fieldSelector: FieldSelectorRequirementSchema.optional(),
    propertySelector: PropertySelectorRequirementSchema.optional(),
  })
  .describe('A selector on a label, a field, a property, or several of them (ANDed).');
export type ClusterSelectorExpression = z.infer<typeof ClusterSelectorExpressionSchema>;

export const ClusterSelectorTermSchema = z
  .object({
    matchExpressions: z
      .array(ClusterSelectorExpressionSchema)
      .optional()
      .describe('Requirements that must all be met (ANDed).'),
  })
  .describe('A term of a cluster selector.');
export type ClusterSelectorTerm = z.infer<typeof ClusterSelectorTermSchema>;

export const ClusterSelectorSchema = z.object({
  clusterSelectorTerms: z
    .array(ClusterSelectorTermSchema)
    .describe('Terms that are ORed: a cluster is selected when it meets at least one.'),
});
export type ClusterSelector = z.infer<typeof ClusterSelectorSchema>;

export const PropertySorterSchema = z
  .object({
    name: z.string().max(253).describe('The ClusterProfile status.properties name, compared as a Kubernetes quantity.'),
    sortOrder: z
      .string()
      .max(16)
      .describe('Ascending (the smallest value is best) or Descending (the largest is best).'),
  })
  .describe(
    'mco extension: the cluster with the best value gets the weight, the worst 0, the others linearly in between; clusters without the property get 0.',
  );
export type PropertySorter = z.infer<typeof PropertySorterSchema>;

export const PreferredClusterSelectorTermSchema = z.object({
  weight: z.number().int().min(1).max(100).describe('Weight 1-100 added to a cluster matching the preference.'),
  preference: ClusterSelectorTermSchema.optional().describe('Set exactly one of preference and propertySorter.'),
  propertySorter: PropertySorterSchema.optional(),
});
export type PreferredClusterSelectorTerm = z.infer<typeof PreferredClusterSelectorTermSchema>;

export const ClusterAffinitySchema = z
  .object({
    requiredDuringSchedulingRequiredDuringExecution: ClusterSelectorSchema.optional().describe(
      'Clusters must match to be selected; a listed cluster that stops matching is evicted.',
    ),
    requiredDuringSchedulingIgnoredDuringExecution: ClusterSelectorSchema.optional().describe(
      'Clusters must match to be selected; a listed cluster that stops matching keeps the workload.',
    ),
    preferredDuringSchedulingIgnoredDuringExecution: z
      .array(PreferredClusterSelectorTermSchema)
      .max(64)
      .optional()
      .describe('mco extension: eligible clusters are ordered by the summed weight of matching preferences.'),
  })
  .describe('Cluster affinity: exactly one of the two required forms, plus optional preferences.');
export type ClusterAffinity = z.infer<typeof ClusterAffinitySchema>;

export const ClusterSelectorRuleSchema = z
  .object({
    type: z.string().max(64).describe('all-clusters, cluster-list or cluster-name-regex.'),
    arguments: z
      .record(z.string(), shortString)
      .optional()
      .describe('cluster-list: {clusters: "ns/a,ns/b"}; cluster-name-regex: {regex: "<Go RE2 pattern>"}.'),
  })
  .describe('A v0.1 rule: consumes an ordered list of clusters and returns an ordered list.');
export type ClusterSelectorRule = z.infer<typeof ClusterSelectorRuleSchema>;

const BehaviorFields = z
  .object({
    scaleOut: z
      .object({
        stabilizationWindowSeconds: seconds(
          'How long capacity must be short before a cluster is added (default 0: at once).',
        ),
      })
      .optional(),
    scaleIn: z
      .object({
        stabilizationWindowSeconds: seconds(
          'How long a cluster must want scale-in continuously before it is scaled in (default 300).',
        ),
        cooldownSeconds: seconds('No scale-in within this time of the last addition (default 300).'),
      })
      .optional(),
    drain: z
      .object({
        stepIntervalSeconds: z
          .number()
          .int()
          .min(1)
          .max(86_400)
          .optional()
          .describe('Time between two drain steps (default 60).'),
        stepPercent: z
          .number()
          .int()
          .min(1)
          .max(100)
          .optional()
          .describe('Share of desiredMaxReplicas removed per step, at least 1 replica (default 25).'),
      })
      .optional(),
    failBack: z
      .object({
        enabled: z
          .boolean()
          .optional()
          .describe(
            'Move the workload back to higher-priority clusters once they have room again (default false; needs useDraining).',
          ),
        stabilizationWindowSeconds: seconds(
          'How long every higher-priority ACTIVE cluster must have had room before fail-back, before any backoff (default 600).',
        ),
        maxStabilizationWindowSeconds: seconds(
          'Cap of the backoff: each fail-back cycle multiplies the window by 4, up to this (default 14400).',
        ),
        backoffDecaySeconds: z
          .number()
          .int()
          .min(1)
          .max(31_536_000)
          .optional()
          .describe(
            'Quiet period after which the backoff drops one level, once per period without a cycle (default 28800).',
          ),
        lingerSeconds: seconds(
          'How long a cluster drained by fail-back stays warm at warmStandbyReplicas, while the preferred clusters are calm, before it is removed (default 3600).',
        ),
        peakLookbackSeconds: z
          .number()
          .int()
          .min(60)
          .max(604_800)
          .optional()
          .describe(
            "How far back fail-back looks for the workload's peak: the preferred clusters must have room for the most replicas the workload needed within it; cover the load's cycle (default 7200).",
          ),
      })
      .optional()
      .describe('mco extension: fail-back to preferred clusters after a stockout.'),
    evictionTimeoutSeconds: seconds(
      'An EVICTING cluster is removed after this time at the latest (default 1800); so is a SCALING_IN one that cannot show 1 replica (no replica count reported, or no drain at an HPA minimum above 1). mco: a drain step waits at most this long for receivers that do not catch up.',
    ),
    unhealthyTimeoutSeconds: seconds('An UNHEALTHY cluster is removed after this time (default 900).'),
    signalStaleAfterSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .optional()
      .describe('A signal older than this is ignored (default 180).'),
  })
  .describe('mco extension: timing of scale-out, scale-in, draining and removal.');

const ScalingBehaviorFields = z
  .object({
    profileLossGraceSeconds: seconds(
      'Without autoscaleForCapacity, a listed cluster whose ClusterProfile is missing stays EVICTING this long before it is removed (default 300).',
    ),
  })
  .describe('mco extension: timing for placements without autoscaleForCapacity.');

// --- the two behavior blocks ---------------------------------------------------
//
// A structural CRD prunes unknown fields, so a field of one behavior block put in
// the other would vanish without a word. Each block therefore declares the other
// block's fields, only to refuse them with a message naming the right path: zod
// here, and the CRD's CEL rules (scripts/placement-crd.ts) from the same table.

export const CAPACITY_BEHAVIOR_PATH = 'spec.scaling.autoscaleForCapacity.behavior';
export const SCALING_BEHAVIOR_PATH = 'spec.scaling.behavior';

/** A field of one behavior block placed in the other. */
export interface MisplacedBehaviorField {
  /** The block it was put in. */
  readonly path: string;
  readonly field: string;
  /** The block it belongs in. */
  readonly rightPath: string;
  readonly message: string;
}

function misplacedIn(path: string, rightPath: string, fields: z.ZodObject): MisplacedBehaviorField[] {
  return Object.keys(fields.shape).map((field) => ({
    path,
    field,
    rightPath,
    message: `${field} belongs in ${rightPath}, not in ${path}: move it to ${rightPath}.${field}`,
  }));
}

export const MISPLACED_BEHAVIOR_FIELDS: readonly MisplacedBehaviorField[] = [
  ...misplacedIn(SCALING_BEHAVIOR_PATH, CAPACITY_BEHAVIOR_PATH, BehaviorFields),
  ...misplacedIn(CAPACITY_BEHAVIOR_PATH, SCALING_BEHAVIOR_PATH, ScalingBehaviorFields),
];

/** `fields`, also declaring `other`'s fields, which it refuses; its output type is `fields`'. */
function refusingMisplaced<T extends z.ZodObject>(path: string, fields: T, other: z.ZodObject) {
  const misplaced = MISPLACED_BEHAVIOR_FIELDS.filter((m) => m.path === path);
  const declared = Object.fromEntries(
    Object.entries(other.shape).map(([field, schema]) => [
      field,
      schema.describe(`Not here: refused, set ${misplaced.find((m) => m.field === field)?.rightPath}.${field}.`),
    ]),
  );
  return fields
    .extend(declared)
    .superRefine((value, ctx) => {
      for (const m of misplaced) {
        if ((value as Record<string, unknown>)[m.field] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [m.field], message: m.message });
        }
      }
    })
    .transform((value) => value as z.output<T>)
    .describe(fields.description ?? '');
}

export const BehaviorSchema = refusingMisplaced(CAPACITY_BEHAVIOR_PATH, BehaviorFields, ScalingBehaviorFields);
export type Behavior = z.infer<typeof BehaviorSchema>;
export const ScalingBehaviorSchema = refusingMisplaced(SCALING_BEHAVIOR_PATH, ScalingBehaviorFields, BehaviorFields);
export type ScalingBehavior = z.infer<typeof ScalingBehaviorSchema>;

export const WorkloadDetailsSchema = z.object({
  namespace: z.string().optional().describe('Namespace of the workload in each member cluster.'),
  deploymentName: z.string().describe('Deployment whose pending pods are observed.'),
  hpaName: z.string().describe('HorizontalPodAutoscaler whose status is observed.'),
});
export type WorkloadDetails = z.infer<typeof WorkloadDetailsSchema>;

/** The label a spread groups clusters by when `spread.topologyKey` is absent (rule O2). */
export const DEFAULT_SPREAD_TOPOLOGY_KEY = 'topology.kubernetes.io/region';

export const SpreadSchema = z
  .object({
    topologyKey: z
      .string()
      .min(1)
      .max(317)
      .optional()
      .describe(
        `The ClusterProfile label whose values are the groups (default ${DEFAULT_SPREAD_TOPOLOGY_KEY}; for it, a cluster without the label is grouped by its property region).`,
      ),
    minGroups: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe(
        'Distinct groups the clusters counted toward minClustersBelowCapacityCeiling should span: scale-out passes over candidates of a group already counted until they do, and scale-in keeps them (default 1; at most minClustersBelowCapacityCeiling).',
      ),
  })
  .describe(
    'mco extension (rule O2, docs/placement-rules.md §10.7): the groups replacements and warm standbys are taken outside of, and across which the minimum is spread.',
  );
export type Spread = z.infer<typeof SpreadSchema>;

export const AutoscaleForCapacitySchema = z.object({
  minClustersBelowCapacityCeiling: z
    .number()
    .int()
    .min(1)
    .describe('Minimum number of ACTIVE clusters that are not at their capacity ceiling.'),
  maxClusters: z
    .number()
    .int()
    .optional()
    .describe('Maximum number of listed clusters; 0 (or less) or absent means no limit.'),
  workloadDetails: WorkloadDetailsSchema.optional(),
  useDraining: z
    .boolean()
    .optional()
    .describe('Publish draining.desiredMaxReplicas for SCALING_IN and EVICTING clusters.'),
  behavior: BehaviorSchema.optional(),
  warmStandbyClusters: z
    .number()
    .int()
    .min(0)
    .max(64)
    .optional()
    .describe(
      'mco extension: clusters kept warm at warmStandbyReplicas, listed SCALING_IN with reason WarmStandby, ready to take load (default 0; needs useDraining).',
    ),
  warmStandbyReplicas: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("mco extension: the size of a warm standby or lingering cluster (default: the HPA's minReplicas)."),
  signalSource: z
    .string()
    .max(253)
    .optional()
    .describe('mco extension: name of the capacity-signal source to use (default: the controller-wide one).'),
  spread: SpreadSchema.optional(),
});
export type AutoscaleForCapacity = z.infer<typeof AutoscaleForCapacitySchema>;

export const PlacementSpecSchema = z.object({
  clusterSelectorRules: z
    .array(ClusterSelectorRuleSchema)
    .max(32)
    .optional()
    .describe('v0.1 rules pipeline, applied in order to the ClusterProfiles ordered by namespace/name.'),
  rules: z.array(ClusterSelectorRuleSchema).max(32).optional().describe('Alias of clusterSelectorRules.'),
  affinity: z
    .object({ clusterAffinity: ClusterAffinitySchema.optional() })
    .optional()
    .describe('v0.2 cluster affinity, applied to the output of the rules (or to every ClusterProfile).'),
  scaling: z
    .object({
      autoscaleForCapacity: AutoscaleForCapacitySchema.optional(),
      behavior: ScalingBehaviorSchema.optional(),
    })
    .optional()
    .describe('Without autoscaleForCapacity every eligible cluster runs the workload.'),
  tolerations: z
    .array(TolerationSchema)
    .max(64)
    .optional()
    .describe('mco extension: the ClusterProfile taints (annotation mco.x-k8s.io/taints) this placement tolerates.'),
});
export type PlacementSpec = z.infer<typeof PlacementSpecSchema>;

export const CLUSTER_STATES = ['ACTIVE', 'SCALING_IN', 'UNHEALTHY', 'EVICTING'] as const;
export const ClusterStateSchema = z.enum(CLUSTER_STATES);
export type ClusterState = z.infer<typeof ClusterStateSchema>;

export const DrainingSchema = z.object({
  desiredMaxReplicas: z.number().int().describe('The HPA maxReplicas a drainer should apply.'),
  lastReplicaCountDecrease: TimestampSchema,
  currentReplicaCount: z.number().int().optional().describe('Observed replicas (informational).'),
  initialDesiredMaxReplicas: z
    .number()
    .int()
    .optional()
    .describe('mco extension: desiredMaxReplicas when the drain began (make-before-break).'),
  receiversReadyReplicas: z
    .number()
    .int()
    .optional()
    .describe(
      "mco extension: the receiving (ACTIVE) clusters' ready replicas when the drain began; a step waits until they have grown by the drop so far.",
    ),
  pausedReason: z
    .string()
    .max(128)
    .optional()
    .describe('mco extension: why the drain does not step now (ReceiversNotReady, ReadyReplicasUnknown).'),
  unprotectedReason: z
    .string()
    .max(128)
    .optional()
    .describe(
      "mco extension: why the drain steps on the clock alone, without make-before-break's ready-replica check (ReadyReplicasNotReported: a receiving cluster's signal source does not report readyReplicas).",
    ),
});
export type Draining = z.infer<typeof DrainingSchema>;

export const PlacementClusterSchema = z.object({
  name: z.string(),
  namespace: z.string().optional(),
  state: ClusterStateSchema,
  lastTransitionTime: TimestampSchema,
  atCapacityCeiling: z.boolean().optional(),
  draining: DrainingSchema.optional(),
  reason: z.string().max(128).optional().describe('PascalCase reason of the last transition.'),
  message: z.string().max(1024).optional().describe('Human-readable explanation of the last transition.'),
  scaleInCandidateSince: TimestampSchema.optional().describe(
    'Since when this ACTIVE cluster (or a cluster lingering after a fail-back) has continuously wanted scale-in.',
  ),
  lingerSince: TimestampSchema.optional().describe(
    'With behavior.failBack: since when this cluster, drained by fail-back, has lingered warm while the preferred clusters were calm.',
  ),
  belowCeilingSince: TimestampSchema.optional().describe(
    'With behavior.failBack: since when this ACTIVE cluster has continuously had a fresh signal below its capacity ceiling.',
  ),
  lastReadyReplicas: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'mco extension: the ready replicas of the last fresh signal, so that a replacement can start at this size if the cluster is lost (docs/placement-rules.md §10.8).',
    ),
  desiredMinReplicas: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "mco extension: the HPA minReplicas a delivery should apply to this cluster while it is set: a replacement's floor, the replicas the lost cluster ran (docs/placement-rules.md §10.8), or a warm standby's size (§10.6).",
    ),
  replacesCluster: z
    .string()
    .max(512)
    .optional()
    .describe('mco extension: the lost cluster (namespace/name) whose replicas desiredMinReplicas carries.'),
});
export type PlacementCluster = z.infer<typeof PlacementClusterSchema>;

export const FailBackStatusSchema = z
  .object({
    backoffLevel: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        'Fail-back cycles counted, less the decay: the window is stabilizationWindowSeconds × 2^level, capped.',
      ),
    lastCycleTime: TimestampSchema.optional().describe('When the last fail-back cycle was counted.'),
    lastFailBackCluster: z.string().max(512).optional().describe('The cluster (namespace/name) of the last fail-back.'),
    lastFailBackTime: TimestampSchema.optional().describe('When the last fail-back happened.'),
    roomSince: TimestampSchema.optional().describe(
      'Since when the preferred clusters have continuously had room for the replicas fail-back would move.',
    ),
    recentPeaks: z
      .array(
        z.object({
          since: TimestampSchema.describe('Start of the period.'),
          replicas: z.number().int().min(0).describe('The most replicas the workload needed in the period.'),
          fewest: z
            .number()
            .int()
            .min(0)
            .optional()
            .describe('The fewest replicas the workload needed in the period (rule F2: a load steady at its peak).'),
        }),
      )
      .max(16)
      .optional()
      .describe(
        'The most replicas the workload needed (HPA current, desired or ready, summed over its clusters), per eighth of failBack.peakLookbackSeconds, oldest first.',
      ),
    nodeLimits: z
      .array(
        z.object({
          cluster: z.string().max(512).describe('The cluster (namespace/name).'),
          replicas: z
            .number()
            .int()
            .min(0)
            .describe("The workload's pods that had a node when the cluster's node autoscaler reported a size limit."),
          observedAt: TimestampSchema.describe('When it last reported it.'),
        }),
      )
      .max(64)
      .optional()
      .describe(
        'Rule F2: per cluster, the replicas its node pool held at the last node size limit its signal reported within failBack.peakLookbackSeconds; fail-back counts no more than that as its room.',
      ),
    provenReplicas: z
      .array(
        z.object({
          cluster: z.string().max(512).describe('The cluster (namespace/name).'),
          replicas: z
            .number()
            .int()
            .min(0)
            .describe('The most ready replicas of the workload it has been seen running while listed.'),
        }),
      )
      .max(MAX_PROVEN_REPLICAS)
      .optional()
      .describe(
        "Rule F2: per listed cluster, the most ready replicas it has been seen running (its proven size); fail-back counts no more than that toward the workload's recent peak, unless the load held near its peak for the whole lookback.",
      ),
    probe: z
      .object({
        cluster: z.string().max(512).describe('The cluster (namespace/name) fail-back would move.'),
        since: TimestampSchema.describe('When the preferred clusters were asked for the first step.'),
        receiversReadyReplicas: z
          .number()
          .int()
          .min(0)
          .describe("The preferred clusters' ready replicas when they were asked."),
        replicas: z
          .number()
          .int()
          .min(1)
          .describe('The first drain step: the replicas the preferred clusters must have ready before the move.'),
      })
      .optional()
      .describe(
        'Rule F7: the first step of a fail-back, asked of the preferred clusters (desiredMinReplicas) before the fallback moves to SCALING_IN.',
      ),
  })
  .describe('mco extension: the fail-back backoff, kept in status so a restart loses nothing.');
export type FailBackStatus = z.infer<typeof FailBackStatusSchema>;

export const PlacementStatusSchema = z.object({
  clusters: z.array(PlacementClusterSchema).optional(),
  failBack: FailBackStatusSchema.optional(),
  lastAdditionTime: TimestampSchema.optional(),
  lastClusterRemovalTime: TimestampSchema.optional(),
  observedGeneration: z.number().int().min(0).optional(),
  conditions: z.array(ConditionSchema).max(16).optional(),
});
export type PlacementStatus = z.infer<typeof PlacementStatusSchema>;

export const PlacementSchema = z.object({
  apiVersion: z.literal(PLACEMENT_API_VERSION).optional(),
  kind: z.literal(PLACEMENT_KIND).optional(),
  metadata: ObjectMetaSchema,
  spec: PlacementSpecSchema.optional(),
  status: PlacementStatusSchema.optional(),
});
export type Placement = z.infer<typeof PlacementSchema>;
