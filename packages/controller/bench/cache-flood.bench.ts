// What a flood of placements costs the controller's placement cache, and what
// measuring it for --cache-max-bytes costs: for each row, a fresh Informer
// (the controller's transform, its default bounds) lists N placements of a
// given size from an in-memory ListWatch (no API server: only the cache is
// measured), then the process's RSS and heap growth, the bytes the cache
// measured, whether it is over its bound, and the list time with and without
// the byte measurement are printed. Asserts nothing.
//
//   npm run bench:cache-flood -w @mco/controller
import { Informer, type KubeObject, type ListWatch } from '@mco/kube-runtime';
import { trimPlacement } from '../src/cache.js';

const MiB = 2 ** 20;
const ROWS = [
  { objects: 10_000, kib: 1 },
  { objects: 10_000, kib: 10 },
  { objects: 2_000, kib: 100 },
  { objects: 300, kib: 1024 },
];
const LIMITS = { maxObjects: 100_000, maxBytes: 256 * MiB };

/** A placement whose spec carries `kib` KiB in a cluster-list rule (what a tenant can write: up to the API server's 1.5 MiB). */
const placement = (i: number, kib: number): KubeObject => ({
  apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
  kind: 'MultiKubernetesClusterPlacement',
  metadata: {
    name: `flood-${i}`,
    namespace: 'tenant',
    uid: `uid-${i}`,
    resourceVersion: String(i + 1),
    generation: 1,
    managedFields: [{ manager: 'kubectl' }],
  },
  spec: {
    rules: [{ type: 'cluster-list', arguments: { clusters: `fleet/c-${i}-`.padEnd(kib * 1024, 'x') } }],
  },
});

const listWatch = (objects: number, kib: number): ListWatch<KubeObject> => ({
  async list({ continue: next }) {
    const start = Number(next ?? 0);
    const end = Math.min(objects, start + 500);
    // Parsed from JSON text, as the client parses a page: flat strings, as a real cache holds.
    const items = Array.from(
      { length: end - start },
      (_, k) => JSON.parse(JSON.stringify(placement(start + k, kib))) as KubeObject,
    );
    return { items, resourceVersion: String(objects), ...(end < objects ? { continue: String(end) } : {}) };
  },
  async watch() {
    return () => {};
  },
});

const gc = (globalThis as { gc?: () => void }).gc;
const settle = () => {
  gc?.();
  gc?.();
};

async function fill(objects: number, kib: number, maxBytes: number | undefined) {
  const informer = new Informer<KubeObject>({
    name: 'placements',
    listWatch: listWatch(objects, kib),
    transform: trimPlacement,
    watchTimeoutSeconds: 3600,
    idleTimeoutMs: 3_600_000,
    limits: { maxObjects: LIMITS.maxObjects, maxBytes },
  });
  settle();
  const before = process.memoryUsage();
  const started = performance.now();
  informer.start();
  await informer.waitForSync();
  const ms = performance.now() - started;
  settle();
  const after = process.memoryUsage();
  await informer.stop();
  return { informer, ms, rss: (after.rss - before.rss) / MiB, heap: (after.heapUsed - before.heapUsed) / MiB };
}

console.log(
  `node ${process.version}, gc ${gc ? 'exposed' : 'not exposed (run with --expose-gc for steadier figures)'}`,
);
console.log(`bounds per cache: ${LIMITS.maxObjects} objects, ${LIMITS.maxBytes / MiB} MiB`);
console.log(
  '| placements | size each | cached (measured) | over bound | RSS growth | heap growth | list, measured | list, unmeasured |',
);
console.log('| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |');
await fill(2_000, 1, LIMITS.maxBytes); // warm-up: compiled code for both paths
await fill(2_000, 1, undefined);
for (const { objects, kib } of ROWS) {
  const plain = await fill(objects, kib, undefined);
  const measured = await fill(objects, kib, LIMITS.maxBytes);
  const health = measured.informer.health();
  console.log(
    `| ${objects.toLocaleString('en')} | ${kib} KiB | ${((health.bytes ?? 0) / MiB).toFixed(0)} MiB | ${health.overLimit ? 'yes' : 'no'} | ${measured.rss.toFixed(0)} MiB | ${measured.heap.toFixed(0)} MiB | ${measured.ms.toFixed(0)} ms | ${plain.ms.toFixed(0)} ms |`,
  );
}
console.log(`final RSS ${(process.memoryUsage().rss / MiB).toFixed(0)} MiB`);
