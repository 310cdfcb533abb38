import { compileSelection, PlacementSchema, TimestampSchema, type Placement, type Result } from '@mco/core';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { CapacitySourceSchema } from './capacity.js';
import { DurationSchema } from './duration.js';

/*
 * A scenario is data: the fleet, the placement under test, a demand curve and
 * capacity events. Every duration is a number of seconds or a string such as
 * `30s`, `5m`, `2h`; every time of an event is an offset from `start`.
 */

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const name = z.string().min(1).max(63).regex(DNS_LABEL, 'expected a DNS label: lowercase letters, digits and -');
const count = z.number().int().min(0).max(10_000);
const fraction = z.number().min(0).max(1);

const NodePoolFields = {
  podsPerNode: z.number().int().min(1).max(1000).describe('Workload pods one node holds (e.g. one per GPU).'),
  minNodes: count.describe('Nodes the cluster-autoscaler never goes below.'),
  maxNodes: count.describe('Nodes the cluster-autoscaler never goes above.'),
  scaleUpDelay: DurationSchema.describe('From a scale-up request to a Ready node.'),
  scaleDownDelay: DurationSchema.describe('How long a node must be unneeded before it is removed.'),
  stockoutErrorAfter: DurationSchema.describe(
    'How long a node request takes to fail (FailedScaleUp) when stocked out.',
  ),
  backoff: DurationSchema.describe('How long the cluster-autoscaler leaves a node pool alone after a failed scale-up.'),
};
const NodePoolPatchSchema = z.strictObject(NodePoolFields).partial();
export type NodePool = { readonly [K in keyof typeof NodePoolFields]: z.output<(typeof NodePoolFields)[K]> };
export const DEFAULT_NODE_POOL: NodePool = {
  podsPerNode: 1,
  minNodes: 0,
  maxNodes: 10,
  scaleUpDelay: 240,
  scaleDownDelay: 600,
  stockoutErrorAfter: 60,
  backoff: 300,
};

const HpaFields = {
  minReplicas: z.number().int().min(1).max(10_000),
  maxReplicas: z.number().int().min(1).max(10_000),
  targetUtilization: z.number().int().min(1).max(100).describe('Target utilisation in percent.'),
  scaleDownStabilization: DurationSchema.describe('HPA behavior.scaleDown.stabilizationWindowSeconds.'),
  tolerance: z.number().min(0).max(1).describe('HPA tolerance: no scaling while |ratio - 1| <= tolerance.'),
};
const HpaPatchSchema = z.strictObject(HpaFields).partial();
export type Hpa = { readonly [K in keyof typeof HpaFields]: z.output<(typeof HpaFields)[K]> };
export const DEFAULT_HPA: Omit<Hpa, 'maxReplicas'> = {
  minReplicas: 1,
  targetUtilization: 70,
  scaleDownStabilization: 300,
  tolerance: 0.1,
};

const ClusterSchema = z.strictObject({
  name,
  region: z.string().min(1).max(63),
  labels: z.record(z.string(), z.string()).default({}),
  nodePool: NodePoolPatchSchema.optional(),
  hpa: HpaPatchSchema.optional().describe('Per-cluster overrides of workload.hpa (e.g. a smaller maxReplicas).'),
  gpuHourCost: z
    .number()
    .min(0)
    .max(1e6)
    .optional()
    .describe(
      "Price of one node-hour of the cluster's node pool (e.g. the region's GPU-hour price), published as the ClusterProfile property gpu-hour-cost.",
    ),
});

const WorkloadSchema = z.strictObject({
  capacityPerReplica: z.number().positive().max(1e9).describe('Load one replica serves at 100% utilisation.'),
  unit: z.string().min(1).max(32).default('requests/s').describe('Unit of the demand and of capacityPerReplica.'),
  podStartup: DurationSchema.default(120).describe('From a pod being scheduled to Ready.'),
  deployDelay: DurationSchema.default(60).describe('From a cluster being listed to its Deployment existing.'),
  removeDelay: DurationSchema.default(60).describe('From a cluster leaving the list to its Deployment being deleted.'),
  ignoresDesiredMinReplicas: z
    .boolean()
    .optional()
    .describe(
      "true: the delivery ignores status.clusters[].desiredMinReplicas (rules O3, W1 and F6's floors), and the HPA keeps the workload's own minReplicas.",
    ),
  hpa: HpaPatchSchema.extend({ maxReplicas: HpaFields.maxReplicas }),
});

const PointSchema = z.strictObject({ at: DurationSchema, value: z.number().min(0).max(1e12) });
const DemandSchema = z
  .strictObject({
    piecewise: z
      .array(PointSchema)
      .min(1)
      .max(10_000)
      .optional()
      .describe('Linear between points, flat before the first and after the last.'),
    diurnal: z
      .strictObject({
        mean: z.number().min(0).max(1e12),
        amplitude: z.number().min(0).max(1e12),
        peakAt: DurationSchema.describe('Offset from start of the first peak.'),
        period: DurationSchema.default(86_400),
      })
      .optional(),
    noise: z
      .strictObject({
        stddev: z.number().min(0).max(1).describe('Relative standard deviation of the demand, e.g. 0.1.'),
        correlation: z.number().min(0).max(0.999).default(0.8).describe('From one tick to the next (AR(1)).'),
      })
      .optional(),
  })
  .describe('Demand = piecewise + diurnal, times (1 + noise), never below 0.');

const at = DurationSchema.describe('Offset from start.');
const target = {
  cluster: name.optional().describe('One cluster by name.'),
  region: z.string().min(1).max(63).optional().describe('Every cluster in a region.'),
};
const until = DurationSchema.optional().describe('Offset from start at which the event ends.');

const EventSchema = z.discriminatedUnion('type', [
  z
    .strictObject({ type: z.literal('stockout'), at, until, ...target })
    .describe('No new nodes can be provisioned (running nodes stay).'),
  z
    .strictObject({ type: z.literal('recovery'), at, ...target })
    .describe('Ends every stockout in force on its clusters.'),
  z
    .strictObject({
      type: z.literal('outage'),
      at,
      until,
      ...target,
      reportUnhealthyAfter: DurationSchema.default(120).describe(
        'When the ClusterProfile condition ControlPlaneHealthy turns False (and back) after the outage starts (ends).',
      ),
    })
    .describe('The cluster is unreachable: it serves nothing, reports no signal, scales nothing.'),
  z
    .strictObject({
      type: z.literal('labels'),
      at,
      cluster: name,
      labels: z.record(z.string(), z.string().nullable()).describe('Labels to set; null removes one.'),
    })
    .describe('The inventory changes a ClusterProfile label (e.g. it loses eligibility).'),
  z
    .strictObject({
      type: z.literal('controlPlaneHealthy'),
      at,
      until,
      ...target,
      status: z.enum(['True', 'False', 'Unknown']),
    })
    .describe('The ClusterProfile condition ControlPlaneHealthy.'),
  z
    .strictObject({
      type: z.literal('signalNoise'),
      at,
      until,
      ...target,
      dropout: fraction.default(0).describe('Probability that an observation is missed.'),
      unhealthy: fraction.default(0).describe('Probability that an observation reports workloadHealthy false.'),
    })
    .describe('Flaky observations.'),
]);
export type ScenarioEvent = z.output<typeof EventSchema>;

export const ScenarioSchema = z.strictObject({
  name,
  description: z.string().max(4096).optional(),
  seed: z.number().int().min(0).max(0xffffffff).default(1),
  start: TimestampSchema.default('2026-01-01T00:00:00Z'),
  duration: DurationSchema,
  longView: DurationSchema.optional().describe(
    'Also run the scenario over this longer duration: the same events, and the calm after them goes on (a flat demand stays flat, a cycle keeps cycling), so that what an event costs is seen next to a long run.',
  ),
  tick: DurationSchema.default(30),
  warmUp: DurationSchema.optional().describe(
    'Simulated for every policy but left out of every summary figure: each policy starts from its own first decision, made before any signal (mco places its minimum, pick-N its N clusters), and a run that opens with load the first decision cannot know of measures where each starts, not how it behaves. Default: none.',
  ),
  workload: WorkloadSchema.optional(),
  fleet: z.strictObject({
    namespace: name.default('fleet').describe('Namespace of the ClusterProfiles.'),
    nodePool: NodePoolPatchSchema.optional().describe('Defaults for every cluster.'),
    clusters: z.array(ClusterSchema).min(1).max(100),
  }),
  signals: z
    .strictObject({
      failedScaleUpWindow: DurationSchema.default(600).describe(
        'A FailedScaleUp (or NotTriggerScaleUp) event counts this long.',
      ),
      omitReadyReplicas: z
        .union([z.boolean(), z.array(name).max(100)])
        .optional()
        .describe(
          'A signal source that does not report readyReplicas (as the Prometheus source without its query): true for every cluster, or the names of the clusters whose signals omit it.',
        ),
      verdictsOnly: z
        .union([z.boolean(), z.array(name).max(100)])
        .optional()
        .describe(
          "A signal source that reports only the verdicts atCapacityCeiling and wantsScaleIn (and the workload's health), with no HPA figures, pending pods or ready replicas, as a custom source may: true for every cluster, or the names of the clusters it reads.",
        ),
      autoscalerMetrics: z
        .union([z.boolean(), z.array(name).max(100)])
        .optional()
        .describe(
          "A signal source that reads the node autoscaler's metrics, not its Events (as the Prometheus source does): failedScaleUp counts failed scale-ups only, so a pool at its maximum size is no ceiling, and nodeLimitReached is not reported. true for every cluster, or the names of the clusters it reads.",
        ),
      declareOmission: z
        .boolean()
        .default(true)
        .describe(
          'Whether the signals that omit readyReplicas say so (reportsReadyReplicas: false, as the Prometheus source does). false: they say nothing, as a source written for MCO, and rule D1 learns it.',
        ),
    })
    .default({ failedScaleUpWindow: 600, declareOmission: true }),
  placement: PlacementSchema.optional().describe('A MultiKubernetesClusterPlacement (status optional).'),
  demand: DemandSchema.optional(),
  placements: z
    .array(
      z.strictObject({
        placement: PlacementSchema,
        workload: WorkloadSchema,
        demand: DemandSchema,
      }),
    )
    .min(1)
    .max(20)
    .optional()
    .describe(
      'Several workloads, each with its placement and demand, sharing the fleet: the workloads on one cluster share its node pool. Instead of workload, placement and demand.',
    ),
  events: z.array(EventSchema).max(1000).default([]),
  capacitySource: CapacitySourceSchema.optional().describe(
    'A capacity source for the policy "mco + capacity source", which runs only when this is set.',
  ),
});
export type ScenarioInput = z.input<typeof ScenarioSchema>;
type ParsedScenario = z.output<typeof ScenarioSchema>;

export interface ClusterSpec {
  readonly name: string;
  readonly region: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly nodePool: NodePool;
  /** The first workload's HPA on this cluster (workload.hpa with the cluster's overrides). */
  readonly hpa: Hpa;
  /** The cluster's own HPA overrides, applied to every workload. */
  readonly hpaOverrides: Partial<Hpa>;
  readonly gpuHourCost: number | undefined;
}

type ParsedWorkload = NonNullable<ParsedScenario['workload']>;
export type Workload = Omit<ParsedWorkload, 'hpa'> & { readonly hpa: Hpa };
export type Demand = NonNullable<ParsedScenario['demand']>;

/** One workload of a scenario: its placement, the workload it places, and its demand. */
export interface PlacedWorkload {
  readonly placement: Placement;
  readonly workload: Workload;
  readonly demand: Demand;
}

/** A checked scenario with every default applied. */
export interface Scenario extends Omit<ParsedScenario, 'fleet' | 'placement' | 'workload' | 'demand' | 'placements'> {
  /** The first workload's (the only one's, unless `placements` has several). */
  readonly workload: Workload;
  readonly placement: Placement;
  readonly demand: Demand;
  /** Every workload, the first one included. */
  readonly placements: readonly PlacedWorkload[];
  readonly fleet: { readonly namespace: string; readonly clusters: readonly ClusterSpec[] };
}

/** One problem in a scenario: the field at fault (e.g. `fleet.clusters[1].name`) and what is wrong. */
export interface ScenarioIssue {
  readonly field: string;
  readonly message: string;
}

/** `a.b[0].c` from a path. */
export function formatField(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
    '',
  );
}

const MAX_TICKS = 200_000;

/** Checks a scenario document and applies defaults; errors name the field. */
export function parseScenario(document: unknown): Result<Scenario, readonly ScenarioIssue[]> {
  const parsed = ScenarioSchema.safeParse(document);
  if (!parsed.success) {
    return {
      ok: false,
      error: parsed.error.issues.map((issue) => ({
        field: formatField(issue.path) || '(root)',
        message: issue.message,
      })),
    };
  }
  const s = parsed.data;
  const issues: ScenarioIssue[] = [];
  const issue = (field: string, message: string) => issues.push({ field, message });

  if (s.tick < 1 || s.tick > 3600) issue('tick', 'must be between 1s and 1h');
  if (s.duration < s.tick) issue('duration', 'must be at least one tick');
  if (s.tick >= 1 && s.duration / s.tick > MAX_TICKS)
    issue('duration', `more than ${MAX_TICKS} ticks; use a longer tick`);
  if (s.warmUp !== undefined && s.warmUp >= s.duration) issue('warmUp', 'must be shorter than duration');
  if (s.longView !== undefined && s.longView <= s.duration) issue('longView', 'must be longer than duration');
  if (s.longView !== undefined && s.tick >= 1 && s.longView / s.tick > MAX_TICKS)
    issue('longView', `more than ${MAX_TICKS} ticks; use a longer tick`);

  // One workload (workload, placement, demand) or several (placements), each checked under its own path.
  const single = s.workload !== undefined || s.placement !== undefined || s.demand !== undefined;
  if (single === (s.placements !== undefined))
    issue('placements', 'set either workload, placement and demand, or placements');
  const given = s.placements
    ? s.placements.map((p, i) => ({ path: `placements[${i}].`, ...p }))
    : [{ path: '', placement: s.placement, workload: s.workload, demand: s.demand }];
  given.forEach((g) => {
    for (const key of ['workload', 'placement', 'demand'] as const)
      if (g[key] === undefined) issue(`${g.path}${key}`, 'required');
  });

  const clusters: ClusterSpec[] = [];
  const names = new Set<string>();
  s.fleet.clusters.forEach((c, i) => {
    if (names.has(c.name)) issue(`fleet.clusters[${i}].name`, `duplicate cluster name ${c.name}`);
    names.add(c.name);
    const nodePool: NodePool = { ...DEFAULT_NODE_POOL, ...s.fleet.nodePool, ...c.nodePool };
    if (nodePool.minNodes > nodePool.maxNodes) issue(`fleet.clusters[${i}].nodePool.minNodes`, 'exceeds maxNodes');
    const hpas = given.map((g) => ({ ...DEFAULT_HPA, ...g.workload?.hpa, ...c.hpa }) as Hpa);
    hpas.forEach((hpa, w) => {
      if (hpa.minReplicas > hpa.maxReplicas) {
        issue(
          `fleet.clusters[${i}].hpa.minReplicas`,
          `exceeds maxReplicas${given.length > 1 ? ` of placements[${w}]` : ''}`,
        );
      }
    });
    const hpa = hpas[0]!;
    clusters.push({
      name: c.name,
      region: c.region,
      labels: c.labels,
      nodePool,
      hpa,
      hpaOverrides: { ...c.hpa },
      gpuHourCost: c.gpuHourCost,
    });
  });
  const regions = new Set(clusters.map((c) => c.region));

  const placementNames = new Set<string>();
  given.forEach((g) => {
    if (g.placement) {
      const selection = compileSelection(g.placement.spec ?? {});
      if (!selection.ok) issue(`${g.path}placement.${selection.error.field}`, selection.error.message);
      const id = `${g.placement.metadata.namespace ?? 'default'}/${g.placement.metadata.name}`;
      if (placementNames.has(id)) issue(`${g.path}placement.metadata.name`, `duplicate placement ${id}`);
      placementNames.add(id);
    }
    if (!g.demand) return;
    const points = g.demand.piecewise ?? [];
    if (!g.demand.piecewise && !g.demand.diurnal) issue(`${g.path}demand`, 'set piecewise, diurnal or both');
    points.forEach((p, i) => {
      if (i > 0 && p.at < points[i - 1]!.at)
        issue(`${g.path}demand.piecewise[${i}].at`, 'points must be in time order');
    });
  });

  for (const field of ['omitReadyReplicas', 'verdictsOnly', 'autoscalerMetrics'] as const) {
    const list = s.signals[field];
    if (Array.isArray(list))
      list.forEach((c, i) => {
        if (!names.has(c)) issue(`signals.${field}[${i}]`, `no cluster named ${c} in fleet.clusters`);
      });
  }

  s.events.forEach((e, i) => {
    const field = `events[${i}]`;
    if (e.at > s.duration) issue(`${field}.at`, 'is after the end of the scenario (duration)');
    if ('until' in e && e.until !== undefined && e.until <= e.at) issue(`${field}.until`, 'must be after at');
    if (e.type === 'labels') {
      if (!names.has(e.cluster)) issue(`${field}.cluster`, `no cluster named ${e.cluster} in fleet.clusters`);
      return;
    }
    if ((e.cluster === undefined) === (e.region === undefined)) {
      issue(`${field}.cluster`, 'set exactly one of cluster and region');
    } else if (e.cluster !== undefined && !names.has(e.cluster)) {
      issue(`${field}.cluster`, `no cluster named ${e.cluster} in fleet.clusters`);
    } else if (e.region !== undefined && !regions.has(e.region)) {
      issue(`${field}.region`, `no cluster in region ${e.region}`);
    }
  });

  if (issues.length > 0) return { ok: false, error: issues };
  const placements: PlacedWorkload[] = given.map((g) => ({
    placement: g.placement!,
    workload: { ...g.workload!, hpa: { ...DEFAULT_HPA, ...g.workload!.hpa } },
    demand: g.demand!,
  }));
  const { placements: _p, workload: _w, placement: _pl, demand: _d, ...rest } = s;
  return {
    ok: true,
    value: {
      ...rest,
      ...placements[0]!,
      placements,
      fleet: { namespace: s.fleet.namespace, clusters },
    },
  };
}

/** Parses a scenario from YAML (or JSON) text. A syntax error is reported on the field `(document)`. */
export function parseScenarioText(text: string): Result<Scenario, readonly ScenarioIssue[]> {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    return { ok: false, error: [{ field: '(document)', message: (error as Error).message }] };
  }
  return parseScenario(document);
}

/** The scenario's long view (`longView`): the same scenario run over the longer duration; undefined without one. */
export function longView(scenario: Scenario): Scenario | undefined {
  if (scenario.longView === undefined) return undefined;
  const { longView: duration, ...rest } = scenario;
  return { ...rest, duration };
}

/** One line per issue: `field: message`. */
export function formatIssues(issues: readonly ScenarioIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.message}`).join('\n');
}
