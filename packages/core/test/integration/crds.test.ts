// The project's MultiKubernetesClusterPlacement CRD and the third-party CRDs
// @mco/core writes for, on a real kube-apiserver (see docs/testing.md).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  buildPlacementDecisions,
  decide,
  MISPLACED_BEHAVIOR_FIELDS,
  PLACEMENT_API_VERSION,
  PLACEMENT_GROUP,
  PLACEMENT_KIND,
  PlacementSchema,
  PlacementSpecSchema,
  type ClusterProfile,
  type PlacementStatus,
} from '@mco/core';
import {
  aClusterProfile,
  aPlacement,
  arbFleet,
  arbPlacementSpec,
  arbSignal,
  arbStatusClusters,
  anAutoscalingSpec,
} from '@mco/core/testing';
import {
  apiErrorOf,
  describeWithControlPlane,
  loadYamlObjects,
  parseYamlDocuments,
  thirdPartyCrd,
  startControlPlane,
  type ClusterHandle,
  type ControlPlane,
  type InstalledCrd,
} from '@mco/testkit';
import fc from 'fast-check';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PLACEMENT_CRD_FILE, PLACEMENT_PLURAL } from '../../scripts/placement-crd.js';
import { arbitraryFromSchema, type CrdSchema } from './schema-arbitrary.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const OUR_CRD = fileURLToPath(new URL(`../../crds/${PLACEMENT_CRD_FILE}`, import.meta.url));
const GOOGLE_CRD_FILE = 'reference-mco-v0.2.0_multikubernetesclusterplacements.yaml';
// Google's MCO v0.2.0 CRD, vendored unchanged in @mco/testkit (Apache-2.0).
const GOOGLE_CRD = thirdPartyCrd(GOOGLE_CRD_FILE);
const VERSION = 'v1alpha1';

type Json = Record<string, unknown>;

let nameCounter = 0;
const uniqueName = (prefix: string) => `${prefix}-${++nameCounter}`;

/** Creates a placement and, when it has one, writes its status through /status, like the controller. */
async function createPlacement(cluster: ClusterHandle, object: Json): Promise<Json> {
  const api = cluster.adminKubeConfig().makeApiClient(CustomObjectsApi);
  const metadata = object.metadata as { name: string; namespace?: string };
  const namespace = metadata.namespace ?? 'default';
  const target = { group: PLACEMENT_GROUP, version: VERSION, namespace, plural: PLACEMENT_PLURAL };
  const { status, ...withoutStatus } = object;
  const created = (await api.createNamespacedCustomObject({
    ...target,
    body: { ...withoutStatus, metadata: { name: metadata.name } },
  })) as Json;
  if (status === undefined) return created;
  return (await api.replaceNamespacedCustomObjectStatus({
    ...target,
    name: metadata.name,
    body: { ...created, status },
  })) as Json;
}

/** `accepted` with the stored spec/status, or `rejected` with the server's message. */
async function tryCreate(
  cluster: ClusterHandle,
  object: Json,
): Promise<{ accepted: true; spec: unknown; status: unknown } | { accepted: false; message: string }> {
  try {
    const stored = await createPlacement(cluster, object);
    return { accepted: true, spec: stored.spec, status: stored.status };
  } catch (error) {
    return { accepted: false, message: apiErrorOf(error).message };
  }
}

async function ensureNamespace(cluster: ClusterHandle, name: string): Promise<void> {
  await cluster
    .adminKubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } })
    .catch((error: unknown) => {
      if (apiErrorOf(error).code !== 409) throw error;
    });
}

/** Every object of kind MKCP anywhere inside a value (decide inputs and scenarios nest one under `placement`). */
function placementsIn(value: unknown): Json[] {
  if (Array.isArray(value)) return value.flatMap(placementsIn);
  if (!value || typeof value !== 'object') return [];
  const object = value as Json;
  if (object.kind === PLACEMENT_KIND) return [object];
  return Object.values(object).flatMap(placementsIn);
}

function filesUnder(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return filesUnder(path, extensions);
    return extensions.some((e) => entry.endsWith(e)) ? [path] : [];
  });
}

/**
 * Every MKCP sample in examples/ (YAML files) and docs/ (```yaml blocks), named
 * by file and position. A docs block that is not valid YAML (an illustration with
 * alternatives, say) is skipped unless it contains an MKCP.
 */
function samplePlacements(): { name: string; placement: Json }[] {
  const examples = filesUnder(join(ROOT, 'examples'), ['.yaml', '.yml']).map((file) => ({
    file,
    docs: parseYamlDocuments(readFileSync(file, 'utf8'), file),
  }));
  const docs = filesUnder(join(ROOT, 'docs'), ['.md']).map((file) => ({
    file,
    docs: [...readFileSync(file, 'utf8').matchAll(/```ya?ml\n([\s\S]*?)```/g)].flatMap(([, block = '']) => {
      try {
        return parseYamlDocuments(block, file);
      } catch (error) {
        if (block.includes(`kind: ${PLACEMENT_KIND}`)) throw error;
        return [];
      }
    }),
  }));
  return [...examples, ...docs].flatMap(({ file, docs }) =>
    docs.flatMap(placementsIn).map((placement, i) => ({ name: `${relative(ROOT, file)}#${i + 1}`, placement })),
  );
}

function googleSchema(): { spec: CrdSchema; status: CrdSchema } {
  const [crd] = loadYamlObjects(GOOGLE_CRD) as unknown as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: CrdSchema; status: CrdSchema } } } }[] };
  }[];
  const { spec, status } = crd!.spec.versions[0]!.schema.openAPIV3Schema.properties;
  return { spec, status };
}

describeWithControlPlane('MultiKubernetesClusterPlacement CRD on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let ours: ClusterHandle; // the hub: our CRD, ClusterProfile, PlacementDecision
  let google: ClusterHandle; // a second apiserver (same etcd, own prefix): Google's v0.2.0 CRD
  let installed: InstalledCrd;

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['google'] });
    ours = cp.hub;
    google = cp.members.google!;
    const [crds] = await Promise.all([
      ours.installCrds([
        OUR_CRD,
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        thirdPartyCrd('multicluster.x-k8s.io_placementdecisions.yaml'),
      ]),
      google.installCrds([GOOGLE_CRD]),
    ]);
    installed = crds[0]!;
  });
  afterAll(() => cp?.stop());

  it('is accepted as a structural schema whose CEL rules fit the cost budget, and stored as generated', async () => {
    const [generated] = loadYamlObjects(OUR_CRD) as unknown as InstalledCrd[];
    const conditions = Object.fromEntries((installed.status?.conditions ?? []).map((c) => [c.type, c.status]));
    const version = installed.spec.versions[0]!;
    const expected = generated!.spec.versions[0]!;
    expect({
      conditions,
      schema: version.schema,
      columns: version.additionalPrinterColumns,
      subresources: version.subresources,
    }).toEqual({
      conditions: { NamesAccepted: 'True', Established: 'True' },
      schema: expected.schema,
      columns: expected.additionalPrinterColumns,
      subresources: { status: {} },
    });
  });

  it('applies every MultiKubernetesClusterPlacement sample in examples/ and docs/, status included', async () => {
    const samples = samplePlacements();
    const results: Record<string, unknown> = {};
    for (const [i, { name, placement }] of samples.entries()) {
      const namespace = `sample-${i}`; // samples share names; each gets its own namespace
      await ensureNamespace(ours, namespace);
      const object = { ...placement, metadata: { ...(placement.metadata as Json), namespace } };
      const result = await tryCreate(ours, object);
      results[name] = result.accepted
        ? { accepted: true, parses: PlacementSchema.safeParse({ ...object, ...result }).success }
        : result;
    }
    const placementsDir = samples.filter((s) => s.name.startsWith('examples/placements/')).length;
    expect({ placementsDir: placementsDir >= 4, results }).toEqual({
      placementsDir: true,
      results: Object.fromEntries(samples.map((s) => [s.name, { accepted: true, parses: true }])),
    });
  });

  it('stores the four sample placements of the laptop walk-through (examples/first-run) unchanged; Google’s v0.2.0 CRD drops only `rules`', async () => {
    const file = join(ROOT, 'examples/first-run/placements.yaml');
    const samples = parseYamlDocuments(readFileSync(file, 'utf8'), file).flatMap(placementsIn);
    await Promise.all([ensureNamespace(ours, 'mco-demo'), ensureNamespace(google, 'mco-demo')]);
    const stored = await Promise.all(
      samples.map(async (placement) => {
        const [onGoogle, onOurs] = await Promise.all([tryCreate(google, placement), tryCreate(ours, placement)]);
        return { google: onGoogle, ours: onOurs };
      }),
    );
    expect(stored).toEqual(
      samples.map((placement) => {
        const { rules: _rules, ...v020 } = placement.spec as Json; // not in Google's v0.2.0 schema: pruned there
        return {
          google: { accepted: true, spec: v020, status: undefined },
          ours: { accepted: true, spec: placement.spec, status: undefined },
        };
      }),
    );
  });

  it('accepts, unchanged, every object that Google’s v0.2.0 CRD accepts (property-based, both servers)', async () => {
    const schema = googleSchema();
    const arbObject = fc.record(
      { spec: arbitraryFromSchema(schema.spec, 'spec'), status: arbitraryFromSchema(schema.status, 'status') },
      { requiredKeys: ['spec'] },
    );
    await fc.assert(
      fc.asyncProperty(arbObject, async ({ spec, status }) => {
        const object = {
          apiVersion: PLACEMENT_API_VERSION,
          kind: PLACEMENT_KIND,
          metadata: { name: uniqueName('compat'), namespace: 'default' },
          spec,
          ...(status !== undefined ? { status } : {}),
        };
        const [onGoogle, onOurs] = await Promise.all([tryCreate(google, object), tryCreate(ours, object)]);
        // The generator must only make objects Google's CRD accepts; then ours must store the same.
        expect(onGoogle).toEqual({ accepted: true, spec, status });
        expect(onOurs).toEqual(onGoogle);
      }),
      { numRuns: 60 },
    );
  });

  const invalid: {
    readonly name: string;
    readonly spec?: Json;
    readonly status?: Json;
    readonly message: string;
    readonly google: 'rejected' | 'accepted (field unknown there, pruned)';
  }[] = [
    {
      name: 'both RDE and IDE are set',
      spec: {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: { clusterSelectorTerms: [] },
            requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [] },
          },
        },
      },
      message:
        'spec.affinity.clusterAffinity: Invalid value: set only one of ' +
        'requiredDuringSchedulingRequiredDuringExecution and requiredDuringSchedulingIgnoredDuringExecution, not both',
      google: 'rejected',
    },
    {
      name: 'clusterAffinity has only preferences, neither RDE nor IDE',
      spec: {
        affinity: {
          clusterAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { matchExpressions: [] } }],
          },
        },
      },
      message:
        'spec.affinity.clusterAffinity: Invalid value: set one of ' +
        'requiredDuringSchedulingRequiredDuringExecution and requiredDuringSchedulingIgnoredDuringExecution',
      google: 'rejected',
    },
    {
      name: 'minClustersBelowCapacityCeiling is 0',
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 0 } } },
      message:
        'spec.scaling.autoscaleForCapacity.minClustersBelowCapacityCeiling: Invalid value: 0: ' +
        'spec.scaling.autoscaleForCapacity.minClustersBelowCapacityCeiling in body should be greater than or equal to 1',
      google: 'rejected',
    },
    {
      name: 'spread.minGroups is above minClustersBelowCapacityCeiling',
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2, spread: { minGroups: 3 } } } },
      message:
        'spec.scaling.autoscaleForCapacity: Invalid value: spread.minGroups must be at most ' +
        'minClustersBelowCapacityCeiling: each group needs a cluster counted toward the minimum',
      google: 'accepted (field unknown there, pruned)',
    },
    {
      name: 'a status cluster has an unknown state',
      spec: {},
      status: { clusters: [{ name: 'us-east1', state: 'RUNNING', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
      message:
        // The apiserver adds the second part whenever a schema error keeps CEL rules from running.
        '[status.clusters[0].state: Unsupported value: "RUNNING": supported values: "ACTIVE", "SCALING_IN", ' +
        '"UNHEALTHY", "EVICTING", <nil>: Invalid value: null: some validation rules were not checked because ' +
        'the object was invalid; correct the existing errors to complete validation]',
      google: 'rejected',
    },
    {
      name: 'a cluster-name-regex is longer than 1024 characters',
      spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: 'a'.repeat(1025) } }] },
      message:
        'spec.clusterSelectorRules[0]: Invalid value: clusterSelectorRules: the regex argument of a ' +
        'cluster-name-regex rule must be at most 1024 characters',
      google: 'accepted (field unknown there, pruned)',
    },
    {
      name: 'both clusterSelectorRules and its alias rules are set',
      spec: { clusterSelectorRules: [{ type: 'all-clusters' }], rules: [{ type: 'all-clusters' }] },
      message:
        'spec: Invalid value: set only one of clusterSelectorRules and rules ' +
        '(rules is an alias of clusterSelectorRules)',
      google: 'accepted (field unknown there, pruned)',
    },
    {
      name: 'a preference weight is above 100',
      spec: {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [] },
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 101, preference: {} }],
          },
        },
      },
      message:
        'spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: ' +
        'spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight in body should be less than or equal to 100',
      google: 'accepted (field unknown there, pruned)',
    },
  ];

  it.each(invalid)('rejects a placement where $name, with a message naming the field', async (c) => {
    const object = {
      apiVersion: PLACEMENT_API_VERSION,
      kind: PLACEMENT_KIND,
      metadata: { name: uniqueName('invalid'), namespace: 'default' },
      ...(c.spec ? { spec: c.spec } : {}),
      ...(c.status ? { status: c.status } : {}),
    };
    const [onOurs, onGoogle] = await Promise.all([tryCreate(ours, object), tryCreate(google, object)]);
    const name = object.metadata.name;
    expect({
      ours: onOurs,
      google: onGoogle.accepted ? 'accepted (field unknown there, pruned)' : 'rejected',
    }).toEqual({
      ours: {
        accepted: false,
        message: `${PLACEMENT_KIND}.${PLACEMENT_GROUP} "${name}" is invalid: ${c.message}`,
      },
      google: c.google,
    });
  });

  // A structural CRD would prune a field of one behavior block put in the other, silently.
  it.each(MISPLACED_BEHAVIOR_FIELDS)(
    'refuses $field put in $path, naming $rightPath, with the message the zod schema gives',
    async ({ path, field, message }) => {
      const misplaced = { [field]: field.endsWith('Seconds') ? 60 : {} };
      const spec = {
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            ...(path.endsWith('autoscaleForCapacity.behavior') ? { behavior: misplaced } : {}),
          },
          ...(path === 'spec.scaling.behavior' ? { behavior: misplaced } : {}),
        },
      };
      const name = uniqueName('misplaced');
      const object = { apiVersion: PLACEMENT_API_VERSION, kind: PLACEMENT_KIND, metadata: { name }, spec };
      const parsed = PlacementSpecSchema.safeParse(spec);
      expect({
        apiserver: await tryCreate(ours, object),
        zod: parsed.success ? 'accepted' : parsed.error.issues.map((i) => i.message),
      }).toEqual({
        apiserver: {
          accepted: false,
          message: `${PLACEMENT_KIND}.${PLACEMENT_GROUP} "${name}" is invalid: ${path}: Invalid value: ${message}`,
        },
        zod: [message],
      });
    },
  );

  it('accepts every spec the engine evaluates as valid, with the status decide() writes for it', async () => {
    const now = new Date('2026-01-01T02:00:00Z');
    await fc.assert(
      fc.asyncProperty(
        arbPlacementSpec,
        arbFleet(6),
        arbStatusClusters,
        fc.array(arbSignal(), { maxLength: 6 }),
        async (spec, profiles, clusters, signals) => {
          const placement = aPlacement(`default/${uniqueName('engine')}`, spec, { clusters });
          const decision = decide({ now, placement, clusterProfiles: profiles, signals });
          const valid = decision.status.conditions?.find((c) => c.type === 'Valid')?.status === 'True';
          fc.pre(valid); // invalid specs are the engine's to report, not necessarily admission's
          const stored = await tryCreate(ours, { ...placement, status: decision.status });
          expect(stored).toEqual({ accepted: true, spec, status: decision.status });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('describes every field in the OpenAPI document that kubectl explain reads', async () => {
    const res = await ours.request(`/openapi/v3/apis/${PLACEMENT_GROUP}/${VERSION}`);
    const doc = JSON.parse(res.body) as { components: { schemas: Record<string, Json> } };
    const root = Object.entries(doc.components.schemas).find(([key]) =>
      key.endsWith(`${VERSION}.${PLACEMENT_KIND}`),
    )?.[1] as CrdSchema & { description?: string };
    const undescribed: string[] = [];
    const walk = (node: Json, path: string) => {
      for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Json>)) {
        if (path === '' && name === 'metadata') continue; // ObjectMeta: described by Kubernetes
        if (!child.description && !child.allOf) undescribed.push(`${path}${name}`);
        walk(child, `${path}${name}.`);
        if (child.items) walk(child.items as Json, `${path}${name}[].`);
      }
    };
    walk(root as Json, '');
    const min = (root.properties?.spec?.properties?.scaling?.properties?.autoscaleForCapacity?.properties ?? {})
      .minClustersBelowCapacityCeiling as Json | undefined;
    expect({ status: res.status, undescribed, min: min?.description }).toEqual({
      status: 200,
      undescribed: [],
      min: 'Minimum number of ACTIVE clusters that are not at their capacity ceiling.',
    });
  });

  it('shows Valid, Satisfied, the first cluster and (wide) the reason in kubectl get', async () => {
    const placement = aPlacement(`default/${uniqueName('columns')}`, anAutoscalingSpec(2));
    const profiles = ['fleet/us-east1', 'fleet/us-west1'].map((key) => aClusterProfile(key));
    const { status } = decide({
      now: new Date('2026-01-01T00:00:00Z'),
      placement,
      clusterProfiles: profiles,
      signals: [],
    });
    await createPlacement(ours, { ...placement, status });
    const res = await ours.request(
      `/apis/${PLACEMENT_GROUP}/${VERSION}/namespaces/default/${PLACEMENT_PLURAL}/${placement.metadata.name}`,
      { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } },
    );
    const table = JSON.parse(res.body) as {
      columnDefinitions: { name: string; priority: number }[];
      rows: { cells: unknown[] }[];
    };
    const cells = table.rows[0]!.cells;
    expect({
      columns: table.columnDefinitions.map((c) => `${c.name}${c.priority ? ' (wide)' : ''}`),
      cells: cells.slice(0, 5),
    }).toEqual({
      columns: ['Name', 'Valid', 'Satisfied', 'First-Cluster', 'Reason (wide)', 'Age'],
      cells: [placement.metadata.name, 'True', 'True', 'us-east1', 'HeadroomAvailable'],
    });
  });

  it('stores ClusterProfiles as the @mco/core builders make them, status included', async () => {
    await ensureNamespace(ours, 'fleet');
    const profiles: ClusterProfile[] = [
      aClusterProfile('fleet/us-east1', { labels: { region: 'us-east1' }, controlPlaneHealthy: true }),
      aClusterProfile('fleet/us-west1', { controlPlaneHealthy: false, server: google.server, clusterManager: 'gke' }),
      aClusterProfile('fleet/eu-west1'),
    ];
    const api = ours.adminKubeConfig().makeApiClient(CustomObjectsApi);
    const target = { group: 'multicluster.x-k8s.io', version: VERSION, namespace: 'fleet', plural: 'clusterprofiles' };
    const stored: Json[] = [];
    for (const profile of profiles) {
      const { status, ...rest } = profile;
      const created = (await api.createNamespacedCustomObject({ ...target, body: rest })) as Json;
      stored.push(
        (await api.replaceNamespacedCustomObjectStatus({
          ...target,
          name: profile.metadata.name,
          body: { ...created, status },
        })) as Json,
      );
    }
    const shape = (p: Json) => ({ labels: (p.metadata as Json).labels, spec: p.spec, status: p.status });
    expect(stored.map(shape)).toEqual(profiles.map((p) => shape(p as Json)));
  });

  it('stores the PlacementDecision slices buildPlacementDecisions emits, 100 clusters per slice', async () => {
    const name = uniqueName('decisions');
    const status: PlacementStatus = {
      clusters: Array.from({ length: 150 }, (_, i) => ({
        name: `c${String(i).padStart(3, '0')}`,
        namespace: 'fleet',
        state: i % 7 === 0 ? ('SCALING_IN' as const) : ('ACTIVE' as const),
        lastTransitionTime: '2026-01-01T00:00:00Z',
      })),
    };
    const slices = buildPlacementDecisions({ metadata: { name, namespace: 'default' } }, status);
    const api = ours.adminKubeConfig().makeApiClient(CustomObjectsApi);
    const stored = await Promise.all(
      slices.map(
        (slice) =>
          api.createNamespacedCustomObject({
            group: 'multicluster.x-k8s.io',
            version: VERSION,
            namespace: 'default',
            plural: 'placementdecisions',
            body: slice,
          }) as Promise<Json>,
      ),
    );
    const shape = (d: Json) => ({
      name: (d.metadata as Json).name,
      labels: (d.metadata as Json).labels,
      schedulerName: d.schedulerName,
      decisions: d.decisions,
    });
    expect({ slices: slices.length, stored: stored.map(shape) }).toEqual({
      slices: 2,
      stored: slices.map((s) => shape(s as unknown as Json)),
    });
  });
});
