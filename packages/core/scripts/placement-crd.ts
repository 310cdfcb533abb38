// Builds the MultiKubernetesClusterPlacement CRD from @mco/core's zod schemas.
// Used by scripts/generate-crds.ts (writes crds/) and by test/crd.test.ts (fails when stale).
import { toYaml } from '@mco/testkit';
import { z } from 'zod';
import {
  CONDITION_SATISFIED,
  CONDITION_VALID,
  MAX_REGEX_LENGTH,
  MISPLACED_BEHAVIOR_FIELDS,
  PLACEMENT_GROUP,
  PLACEMENT_KIND,
  PlacementSpecSchema,
  PlacementStatusSchema,
} from '../src/index.js';

/** One node of an OpenAPI v3 schema as a CRD holds it. */
export interface SchemaNode {
  description?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  additionalProperties?: SchemaNode;
  required?: string[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: { rule: string; message?: string; messageExpression?: string }[];
}

export const PLACEMENT_PLURAL = 'multikubernetesclusterplacements';
export const PLACEMENT_CRD_NAME = `${PLACEMENT_PLURAL}.${PLACEMENT_GROUP}`;
export const PLACEMENT_CRD_FILE = `${PLACEMENT_GROUP}_${PLACEMENT_PLURAL}.yaml`;

// --- Google MCO v0.2.0 compatibility ------------------------------------------
//
// Every object Google's v0.2.0 CRD accepts must be accepted here (docs/placement-rules.md
// §1). That CRD bounds nothing but `minClustersBelowCapacityCeiling >= 1`
// and the state enum, so its fields carry no extra bounds here either: no CEL rule
// iterates them (so the cost budget does not need them) and the apiserver's
// request size limit bounds them anyway. mco's own fields keep zod's bounds.
// test/crd.test.ts checks this list against Google's file.

type Shape = { readonly [key: string]: Shape } | 'leaf';
const requirement = (subject: 'key' | 'field'): Shape => ({
  [subject]: 'leaf',
  operator: 'leaf',
  values: { '[]': 'leaf' },
});
const selector: Shape = {
  clusterSelectorTerms: {
    '[]': {
      matchExpressions: { '[]': { labelSelector: requirement('key'), fieldSelector: requirement('field') } },
    },
  },
};
const GOOGLE_V0_2_0: Shape = {
  spec: {
    affinity: {
      clusterAffinity: {
        requiredDuringSchedulingRequiredDuringExecution: selector,
        requiredDuringSchedulingIgnoredDuringExecution: selector,
      },
    },
    scaling: {
      autoscaleForCapacity: {
        minClustersBelowCapacityCeiling: 'leaf',
        maxClusters: 'leaf',
        useDraining: 'leaf',
        workloadDetails: { namespace: 'leaf', deploymentName: 'leaf', hpaName: 'leaf' },
      },
    },
  },
  status: {
    clusters: {
      '[]': {
        name: 'leaf',
        namespace: 'leaf',
        state: 'leaf',
        lastTransitionTime: 'leaf',
        atCapacityCeiling: 'leaf',
        draining: { desiredMaxReplicas: 'leaf', lastReplicaCountDecrease: 'leaf', currentReplicaCount: 'leaf' },
      },
    },
    lastAdditionTime: 'leaf',
    lastClusterRemovalTime: 'leaf',
  },
};
/** The only bound Google's CRD has on its fields. */
const GOOGLE_BOUNDS: Readonly<Record<string, Partial<SchemaNode>>> = {
  'spec.scaling.autoscaleForCapacity.minClustersBelowCapacityCeiling': { minimum: 1 },
};

function shapePaths(shape: Shape, prefix: string, out: Set<string>): Set<string> {
  if (shape === 'leaf') return out;
  for (const [key, child] of Object.entries(shape)) {
    const path = key === '[]' ? `${prefix}[]` : prefix ? `${prefix}.${key}` : key;
    out.add(path);
    shapePaths(child, path, out);
  }
  return out;
}

/** Paths (`a.b[].c`) of the fields Google's v0.2.0 CRD defines. */
export const GOOGLE_V0_2_0_PATHS: ReadonlySet<string> = shapePaths(GOOGLE_V0_2_0, '', new Set());

// --- descriptions zod does not carry, so `kubectl explain` has one everywhere --

const STATE_TEXT =
  'ACTIVE: runs the workload; SCALING_IN: being scaled in, still listed; UNHEALTHY: unhealthy, removed after ' +
  'unhealthyTimeoutSeconds; EVICTING: no longer eligible, removed once drained or after evictionTimeoutSeconds.';
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  // `*.` matches any prefix: these appear under RDE, IDE and preferences alike.
  '*.matchExpressions[].labelSelector': 'A requirement on a label of the ClusterProfile.',
  '*.matchExpressions[].fieldSelector':
    'A requirement on a field of the ClusterProfile (metadata.name or metadata.namespace).',
  spec: 'Which clusters are eligible for the workload, in which priority order, and how many of them to use.',
  'spec.scaling.autoscaleForCapacity':
    'Use as few clusters as keep minClustersBelowCapacityCeiling clusters able to scale up; add a cluster when ' +
    'capacity runs short and scale in when a cluster has too little to do.',
  'spec.scaling.autoscaleForCapacity.workloadDetails':
    'The Deployment and HorizontalPodAutoscaler observed in each member cluster to tell whether it is at its ' +
    'capacity ceiling or wants scale-in.',
  'spec.scaling.autoscaleForCapacity.behavior.scaleOut': 'Timing of adding clusters.',
  'spec.scaling.autoscaleForCapacity.behavior.scaleIn': 'Timing of scaling clusters in.',
  'spec.scaling.autoscaleForCapacity.behavior.drain':
    'How fast draining.desiredMaxReplicas steps down (with useDraining).',
  status: 'Where the workload should run now, written by the mco controller. Delivery tools read status.clusters.',
  'status.clusters':
    'The clusters the workload is on or should be on: eligible clusters in priority order, then the others. ' +
    'Delivery tools deploy to every listed cluster, whatever its state.',
  'status.clusters[].name': 'Name of the ClusterProfile.',
  'status.clusters[].namespace': 'Namespace of the ClusterProfile.',
  'status.clusters[].state': STATE_TEXT,
  'status.clusters[].lastTransitionTime': 'When the cluster last changed state.',
  'status.clusters[].atCapacityCeiling': 'Whether the last fresh signal showed the cluster at its capacity ceiling.',
  'status.clusters[].draining':
    'Set while a SCALING_IN or EVICTING cluster is drained (useDraining): the HPA maxReplicas a drainer applies.',
  'status.clusters[].draining.lastReplicaCountDecrease': 'When desiredMaxReplicas last stepped down.',
  'status.lastAdditionTime': 'When a cluster was last added.',
  'status.lastClusterRemovalTime': 'When a cluster was last removed.',
  'status.observedGeneration': 'The metadata.generation of the spec this status was computed from.',
  'status.conditions': `${CONDITION_VALID} (can the spec be evaluated) and ${CONDITION_SATISFIED} (does the placement have the capacity it asks for).`,
  'status.conditions[].type': 'Condition type, e.g. Valid or Satisfied.',
  'status.conditions[].status': 'True, False or Unknown.',
  'status.conditions[].reason': 'PascalCase reason, e.g. InvalidRegex or NoEligibleClusters.',
  'status.conditions[].message': 'Human-readable details.',
  'status.conditions[].lastTransitionTime': 'When the status last changed.',
  'status.conditions[].observedGeneration': 'The metadata.generation the condition was computed from.',
};

// --- CEL rules: what must be rejected at admission ------------------------------

const RDE = 'requiredDuringSchedulingRequiredDuringExecution';
const IDE = 'requiredDuringSchedulingIgnoredDuringExecution';
// A static message: a messageExpression that prints the length (string(int))
// has an unbounded estimated cost and the apiserver refuses the CRD.
const regexRule = (field: string) => ({
  rule: `self.type != 'cluster-name-regex' || !has(self.arguments) || !('regex' in self.arguments) || size(self.arguments['regex']) <= ${MAX_REGEX_LENGTH}`,
  message: `${field}: the regex argument of a cluster-name-regex rule must be at most ${MAX_REGEX_LENGTH} characters`,
});
const VALIDATIONS: Readonly<Record<string, NonNullable<SchemaNode['x-kubernetes-validations']>>> = {
  spec: [
    {
      rule: '!has(self.clusterSelectorRules) || !has(self.rules)',
      message: 'set only one of clusterSelectorRules and rules (rules is an alias of clusterSelectorRules)',
    },
  ],
  // Google's rule (exactly one), with a message that says which mistake was made.
  'spec.affinity.clusterAffinity': [
    {
      rule: `has(self.${RDE}) != has(self.${IDE})`,
      messageExpression: `has(self.${RDE}) ? 'set only one of ${RDE} and ${IDE}, not both' : 'set one of ${RDE} and ${IDE}'`,
    },
  ],
  'spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[]': [
    {
      rule: 'has(self.preference) != has(self.propertySorter)',
      message: 'set exactly one of preference and propertySorter',
    },
  ],
  // The engine's InvalidSpread, refused at admission too.
  'spec.scaling.autoscaleForCapacity': [
    {
      rule: '!has(self.spread) || !has(self.spread.minGroups) || self.spread.minGroups <= self.minClustersBelowCapacityCeiling',
      message:
        'spread.minGroups must be at most minClustersBelowCapacityCeiling: each group needs a cluster counted toward the minimum',
    },
  ],
  'spec.clusterSelectorRules[]': [regexRule('clusterSelectorRules')],
  'spec.rules[]': [regexRule('rules')],
};
// Each behavior block declares the other's fields so that they reach CEL instead of being pruned.
const MISPLACED_VALIDATIONS: Readonly<Record<string, NonNullable<SchemaNode['x-kubernetes-validations']>>> = {};
for (const { path, field, message } of MISPLACED_BEHAVIOR_FIELDS) {
  (MISPLACED_VALIDATIONS as Record<string, unknown[]>)[path] ??= [];
  MISPLACED_VALIDATIONS[path]!.push({ rule: `!has(self.${field})`, message });
}

// --- zod JSON Schema -> structural schema ------------------------------------

const KEPT = new Set([
  'description',
  'type',
  'format',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'properties',
  'items',
  'additionalProperties',
  'required',
]);
/** zod emits these for z.int(): the JS safe-integer range, which says nothing to Kubernetes. */
const SAFE_INT = 9_007_199_254_740_991;
const BOUNDS = ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'] as const;

function toStructural(input: Record<string, unknown>, path: string, problems: string[], used: Set<string>): SchemaNode {
  const out: SchemaNode = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === '$schema' || key === 'uniqueItems' || key === 'propertyNames') continue;
    if (key === 'additionalProperties' && value === false) continue; // structural schemas prune instead
    // zod's date-time pattern is a JS regex (Go RE2 differs); `format: date-time` checks the same.
    if (key === 'pattern' && input.format === 'date-time') continue;
    if (!KEPT.has(key)) {
      problems.push(`${path || '<root>'}: "${key}" cannot be expressed in a structural CRD schema`);
      continue;
    }
    (out as Record<string, unknown>)[key] = value;
  }
  if (out.type === 'integer') {
    if (out.maximum === SAFE_INT) delete out.maximum;
    if (out.minimum === -SAFE_INT) delete out.minimum;
  }
  if (out.properties) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([name, child]) => [
        name,
        toStructural(child as Record<string, unknown>, path ? `${path}.${name}` : name, problems, used),
      ]),
    );
  }
  if (out.items) out.items = toStructural(out.items as Record<string, unknown>, `${path}[]`, problems, used);
  if (out.additionalProperties) {
    out.additionalProperties = toStructural(
      out.additionalProperties as Record<string, unknown>,
      `${path}{}`,
      problems,
      used,
    );
  }
  if (!out.type) problems.push(`${path}: no type`);

  if (GOOGLE_V0_2_0_PATHS.has(path)) {
    for (const bound of BOUNDS) delete out[bound];
    Object.assign(out, GOOGLE_BOUNDS[path]);
  }
  const description = out.description ?? describe(path, used);
  if (description) out.description = description;
  else if (!path.endsWith('[]') && !path.endsWith('{}')) problems.push(`${path}: no description (kubectl explain)`);
  const validations = [...(VALIDATIONS[path] ?? []), ...(MISPLACED_VALIDATIONS[path] ?? [])];
  if (validations.length > 0) out['x-kubernetes-validations'] = validations;
  if (path === 'status.conditions') {
    out['x-kubernetes-list-type'] = 'map';
    out['x-kubernetes-list-map-keys'] = ['type'];
  }
  return ordered(out);
}

function describe(path: string, used: Set<string>): string | undefined {
  const key =
    path in DESCRIPTIONS
      ? path
      : Object.keys(DESCRIPTIONS).find((k) => k.startsWith('*.') && path.endsWith(k.slice(1)));
  if (key === undefined) return undefined;
  used.add(key);
  return DESCRIPTIONS[key];
}

const KEY_ORDER = [
  'description',
  'type',
  'format',
  'enum',
  ...BOUNDS,
  'properties',
  'items',
  'additionalProperties',
  'required',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-validations',
];
function ordered(node: SchemaNode): SchemaNode {
  const entries = Object.entries(node).sort(([a], [b]) => KEY_ORDER.indexOf(a) - KEY_ORDER.indexOf(b));
  return Object.fromEntries(entries) as SchemaNode;
}

function schemaOf(schema: z.ZodType, path: string, problems: string[], used: Set<string>): SchemaNode {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input' }) as Record<string, unknown>;
  return toStructural(json, path, problems, used);
}

/**
 * The structural CRD schema of a zod schema placed at `path` of the object,
 * and every problem that keeps it from being one (unions, regex patterns, a
 * field without a description, ...).
 */
export function structuralSchemaOf(schema: z.ZodType, path: string): { schema: SchemaNode; problems: string[] } {
  const problems: string[] = [];
  return { schema: schemaOf(schema, path, problems, new Set()), problems };
}

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")]`;

/** The MultiKubernetesClusterPlacement CustomResourceDefinition. Throws listing every schema problem. */
export function buildPlacementCrd(): Record<string, unknown> {
  const problems: string[] = [];
  const used = new Set<string>();
  const spec = schemaOf(PlacementSpecSchema, 'spec', problems, used);
  const status = schemaOf(PlacementStatusSchema, 'status', problems, used);
  // A description zod now carries itself, or a field that is gone, must not linger here.
  for (const key of Object.keys(DESCRIPTIONS)) {
    if (!used.has(key)) problems.push(`${key}: fallback description is unused (zod has one, or the field is gone)`);
  }
  if (problems.length > 0) throw new Error(`cannot build the ${PLACEMENT_KIND} CRD:\n  ${problems.join('\n  ')}`);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: PLACEMENT_CRD_NAME },
    spec: {
      group: PLACEMENT_GROUP,
      names: {
        kind: PLACEMENT_KIND,
        listKind: `${PLACEMENT_KIND}List`,
        plural: PLACEMENT_PLURAL,
        singular: PLACEMENT_KIND.toLowerCase(),
        shortNames: ['mkcp'],
        categories: ['mco'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Valid',
              type: 'string',
              jsonPath: `${condition(CONDITION_VALID)}.status`,
              description: 'Whether the spec can be evaluated.',
            },
            {
              name: 'Satisfied',
              type: 'string',
              jsonPath: `${condition(CONDITION_SATISFIED)}.status`,
              description: 'Whether the placement has the capacity it asks for.',
            },
            {
              name: 'First-Cluster',
              type: 'string',
              jsonPath: '.status.clusters[0].name',
              description: 'The first (highest-priority) cluster in status.clusters.',
            },
            {
              name: 'Reason',
              type: 'string',
              priority: 1,
              jsonPath: `${condition(CONDITION_SATISFIED)}.reason`,
              description: 'Why the placement is or is not satisfied.',
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description:
                'MultiKubernetesClusterPlacement chooses the clusters a workload runs on, in priority order, and ' +
                'publishes them in status.clusters for delivery tools (Argo CD, Flux, Config Sync). Compatible ' +
                "with Google's Multi-Cluster Orchestrator v0.2.0, with the v0.1 rules and mco extensions.",
              type: 'object',
              properties: {
                apiVersion: {
                  description:
                    'APIVersion defines the versioned schema of this representation of an object. More info: ' +
                    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
                  type: 'string',
                },
                kind: {
                  description:
                    'Kind is a string value representing the REST resource this object represents. More info: ' +
                    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
                  type: 'string',
                },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}

const CRD_HEADER =
  '# Generated by packages/core/scripts/generate-crds.ts from the zod schemas in packages/core/src/api.\n' +
  '# Do not edit: change the schemas (or the script) and run `npm run crds -w @mco/core`.\n';

/** The committed file's exact text. */
export function renderPlacementCrd(): string {
  return `${CRD_HEADER}---\n${toYaml(buildPlacementCrd())}`;
}
