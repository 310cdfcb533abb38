// Engine benchmark: `npm run bench -w @mco/core`. Prints a Markdown table; the
// figures in docs/performance.md come from here (the regex rows: regex.bench.ts).
// Not a test: no assertions.
import {
  createInventory,
  decide,
  type ClusterProfile,
  type Inventory,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
} from '@mco/core';
import { aClusterProfile, anAutoscalingSpec, aPlacement, anAtCeilingSignal, aSteadySignal } from '@mco/core/testing';
import { fmt, load, measure } from './support.js';

const REGIONS = ['us-east1', 'us-west1', 'europe-west4', 'asia-east1', 'me-central1'];
const NOW = new Date('2026-01-01T12:00:00Z');
const OBSERVED = '2026-01-01T11:59:30Z';

const EFFECTS = ['NoSelect', 'NoSelectIfNew', 'PreferNoSelect'] as const;

/** `maintained`: taints on 10% of clusters (the three effects in turn) and a `gpu-hour-cost` property on each. */
function fleet(n: number, maintained = false): ClusterProfile[] {
  return Array.from({ length: n }, (_, i) =>
    aClusterProfile(`fleet-${i % 10}/cluster-${String(i).padStart(5, '0')}`, {
      labels: {
        region: REGIONS[i % REGIONS.length]!,
        gpu: i % 3 === 0 ? 'a100' : 'l4',
        tier: i % 7 === 0 ? 'gold' : 'std',
      },
      controlPlaneHealthy: true,
      ...(maintained
        ? {
            properties: { 'gpu-hour-cost': `${(1 + (i % 97) / 10).toFixed(1)}` },
            ...(i % 10 === 5 ? { taints: [{ key: 'maintenance', effect: EFFECTS[((i / 10) % 3) | 0]! }] } : {}),
          }
        : {}),
    }),
  );
}

/** The realistic placement plus a cost sorter and a toleration that matches none of the fleet's taints. */
function withSorter(spec: PlacementSpec): PlacementSpec {
  const affinity = spec.affinity!.clusterAffinity!;
  return {
    ...spec,
    tolerations: [{ key: 'spot', operator: 'Exists' }],
    affinity: {
      clusterAffinity: {
        ...affinity,
        preferredDuringSchedulingIgnoredDuringExecution: [
          ...(affinity.preferredDuringSchedulingIgnoredDuringExecution ?? []),
          { weight: 100, propertySorter: { name: 'gpu-hour-cost', sortOrder: 'Ascending' } },
        ],
      },
    },
  };
}

/** A realistic autoscaling placement: RDE on gpu, a preference, three clusters listed, one at its ceiling. */
function placementFor(
  i: number,
  inventory: Inventory,
): { spec: PlacementSpec; status: PlacementStatus; signals: Signal[] } {
  const region = REGIONS[i % REGIONS.length]!;
  const spec = anAutoscalingSpec(
    2,
    { maxClusters: 6, useDraining: true },
    {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingRequiredDuringExecution: {
            clusterSelectorTerms: [
              {
                matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'In', values: [i % 2 ? 'l4' : 'a100'] } }],
              },
            ],
          },
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 50,
              preference: {
                matchExpressions: [{ labelSelector: { key: 'region', operator: 'In', values: [region] } }],
              },
            },
          ],
        },
      },
    },
  );
  const first = decide({ now: NOW, placement: aPlacement(`apps/p${i}`, spec), clusterProfiles: inventory });
  const listed = (first.status.clusters ?? []).map((c) => `${c.namespace}/${c.name}`);
  const signals = listed.map((key, j) => (j === 0 ? anAtCeilingSignal(key, OBSERVED) : aSteadySignal(key, OBSERVED)));
  return { spec, status: first.status, signals };
}

const rows: string[] = [];
const row = (...cells: (string | number)[]) => rows.push(`| ${cells.join(' | ')} |`);
/** A row of per-call times; the last column divides the median by `units` (placement, cluster) pairs. */
const timed = (scenario: string, clusters: number, t: { median: number; best: number }, units = clusters, unit = '') =>
  row(
    scenario,
    clusters.toLocaleString('en'),
    `${fmt(t.median)}${unit}`,
    `${fmt(t.best)}${unit}`,
    `${((t.median * 1e6) / units).toFixed(0)} ns`,
  );

console.log(`Node ${process.version}, ${process.arch}; one core (the engine is synchronous); load average ${load()}\n`);
row('scenario', 'clusters', 'per placement', 'best window', 'per (placement, cluster)');
row('---', '---:', '---:', '---:', '---:');

for (const n of [100, 1_000, 10_000]) {
  const profiles = fleet(n);
  const inventory = createInventory(profiles);
  const p = placementFor(1, inventory);
  const shared = measure(() =>
    decide({
      now: NOW,
      placement: aPlacement('apps/p1', p.spec, p.status),
      clusterProfiles: inventory,
      signals: p.signals,
    }),
  );
  timed('one placement, shared inventory', n, shared);
  const cold = measure(() =>
    decide({
      now: NOW,
      placement: aPlacement('apps/p1', p.spec, p.status),
      clusterProfiles: profiles,
      signals: p.signals,
    }),
  );
  timed('one placement, inventory built per call', n, cold);
}

for (const n of [1_000, 10_000]) {
  const inventory = createInventory(fleet(n, true));
  const base = placementFor(1, inventory);
  const spec = withSorter(base.spec);
  const first = decide({ now: NOW, placement: aPlacement('apps/p1', spec, base.status), clusterProfiles: inventory });
  const shared = measure(() =>
    decide({
      now: NOW,
      placement: aPlacement('apps/p1', spec, first.status),
      clusterProfiles: inventory,
      signals: base.signals,
    }),
  );
  timed('one placement, taints on 10% + property sorter', n, shared);
}

{
  const n = 1_000;
  const inventory = createInventory(fleet(n));
  const placements = Array.from({ length: 1_000 }, (_, i) => ({ name: `apps/p${i}`, ...placementFor(i, inventory) }));
  const pass = () => {
    for (const p of placements)
      decide({
        now: NOW,
        placement: aPlacement(p.name, p.spec, p.status),
        clusterProfiles: inventory,
        signals: p.signals,
      });
  };
  const build = measure(() => createInventory(fleet(n)));
  const total = measure(pass, 500, 5);
  timed('1,000 placements × 1,000 clusters (one pass)', n, total, 1_000 * n, ' total');
  timed('createInventory (once per snapshot)', n, build);
}

console.log(rows.join('\n'));
console.log(`\nLoad average at the end: ${load()}.`);
console.log('Targets: ≤ 0.2 ms per placement at 1,000 clusters; ≤ 200 ms for the 1,000 × 1,000 pass.');
