// Placement-status change → Argo CD Application created (and deleted), with
// the real argocd-applicationset-controller, `mco controller` and
// `mco argocd-plugin` as processes (the docs/argocd.md walk-through), with and
// without `--refresh-applicationsets`. Prints figures; asserts nothing.
//
//   npm run bench -w mco              (BENCH_CHANGES=20 changes per mode)
//
// Each change is a real scale-out: the first cluster's HPA reaches its
// ceiling, mco's controller lists the second cluster, and the clock runs from
// the watch event that shows the new status to the watch event that shows the
// Application. The scale-in that follows is timed the same way (status drops
// the cluster → Argo CD deletes the Application).
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import { summarize } from '@mco/testkit';
import {
  AT_CEILING,
  applicationOf,
  ArgoStack,
  ARGOCD,
  IDLE,
  NORMAL,
  WORKLOAD_NS,
  type Application,
  type PlacementObject,
} from '../test/argocd/stack.js';

const CHANGES = Number(process.env.BENCH_CHANGES ?? 20);
const WEST = 'mco-cluster-west';
const WEST_APP = applicationOf('west');

/** Set before the stack stops, when the watches end on purpose. */
let stopping = false;

type Waiter = { match: (type: string, obj: unknown) => boolean; resolve: (t: number) => void };

/** Watches a collection and resolves waiters with the arrival time of the first matching event. */
async function watchTimes(kc: KubeConfig, path: string): Promise<(match: Waiter['match']) => Promise<number>> {
  const waiters = new Set<Waiter>();
  await new Watch(kc).watch(
    path,
    {},
    (type, obj) => {
      const t = performance.now();
      for (const w of waiters) {
        if (w.match(type, obj)) {
          waiters.delete(w);
          w.resolve(t);
        }
      }
    },
    (error) => {
      if (error && !stopping) console.error(`watch ${path} ended: ${String(error)}`);
    },
  );
  return (match) =>
    new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event on ${path} within 120 s`)), 120_000);
      waiters.add({
        match,
        resolve: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
      });
    });
}

const lists = (obj: unknown) =>
  ((obj as PlacementObject).status?.clusters ?? []).some((c) => c.name === WEST && c.state === 'ACTIVE');

function row(label: string, samples: number[]): string {
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  const { min, p50, p99, max } = summarize(label, samples);
  return `| ${label} | ${samples.length} | ${ms(p50)} | ${ms(p99)} | ${ms(min)} | ${ms(max)} |`;
}

/** Polls until `accept` holds (4 min: a loaded machine), naming what it waited for. */
async function until<T>(what: string, probe: () => Promise<T>, accept: (v: T) => boolean): Promise<void> {
  const deadline = Date.now() + 240_000;
  while (!accept(await probe().catch(() => undefined as T))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function measure(stack: ArgoStack, refresh: boolean): Promise<string[]> {
  await stack.stopProcess('refresher');
  if (refresh) stack.start('refresher');
  await until(
    'the plugin to be ready',
    () => fetch(`${stack.pluginUrl()}/readyz`).then((r) => r.status),
    (s) => s === 200,
  );
  // The starting point of every change: east alone, with its Application.
  await until(
    'the placement to list east alone, with its Application',
    async () => [await stack.placement(), await stack.applications()] as const,
    (v) =>
      v !== undefined &&
      (v[0].status?.clusters ?? []).map((c) => c.name).join() === 'mco-cluster-east' &&
      v[1].map((a) => a.metadata!.name).join() === applicationOf('east'),
  );
  const admin = stack.plane.hub.adminKubeConfig();
  const placementEvent = await watchTimes(
    admin,
    `/apis/orchestra.multicluster.x-k8s.io/v1alpha1/namespaces/${WORKLOAD_NS}/multikubernetesclusterplacements`,
  );
  const appEvent = await watchTimes(admin, `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD}/applications`);
  const isWest = (obj: unknown) => (obj as Application).metadata?.name === WEST_APP;
  const created: number[] = [];
  const deleted: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    // Scale out: east at its ceiling → west listed → west's Application.
    const listed = placementEvent((_, obj) => lists(obj));
    const appeared = appEvent((type, obj) => type === 'ADDED' && isWest(obj));
    await stack.setHpa('east', AT_CEILING);
    const [t0, t1] = await Promise.all([listed, appeared]);
    created.push(t1 - t0);

    // Scale in: east has room, west idles → west removed → Argo CD deletes its Application.
    const dropped = placementEvent(
      (_, obj) => !(obj as PlacementObject).status?.clusters?.some((c) => c.name === WEST),
    );
    const deleting = appEvent(
      (type, obj) =>
        isWest(obj) && (type === 'DELETED' || (obj as Application).metadata?.deletionTimestamp !== undefined),
    );
    const gone = appEvent((type, obj) => type === 'DELETED' && isWest(obj));
    await stack.setHpa('east', NORMAL);
    await stack.setHpa('west', IDLE);
    const [t2, t3] = await Promise.all([dropped, deleting]);
    deleted.push(t3 - t2);
    await stack.finishDeletion(WEST_APP).catch(() => undefined); // Argo CD's application controller's part
    await gone;
    await stack.setHpa('west', NORMAL);
    process.stderr.write(
      `${refresh ? 'refresh' : 'poll'} ${i + 1}/${CHANGES}: created ${(t1 - t0).toFixed(0)} ms, deleted ${(t3 - t2).toFixed(0)} ms\n`,
    );
  }
  const mode = refresh ? 'with `--refresh-applicationsets`' : 'without (Argo CD polls every 10 s)';
  return [row(`status → Application created, ${mode}`, created), row(`status → Application deleted, ${mode}`, deleted)];
}

const stack = await ArgoStack.start({
  behavior: { scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 } },
});
try {
  let rows: string[];
  try {
    rows = [...(await measure(stack, true)), ...(await measure(stack, false))];
  } catch (error) {
    console.error(stack.logs());
    throw error;
  }
  console.log(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  console.log('| scenario | changes | p50 | p99 | min | max |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const line of rows) console.log(line);
} finally {
  stopping = true;
  await stack.stop();
}
process.exit(0);
