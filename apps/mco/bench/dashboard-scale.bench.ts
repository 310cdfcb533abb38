/// <reference lib="dom" />
// The dashboard at 1,000 ClusterProfiles x 1,000 placements, in headless
// Chromium: how long the first fleet page takes to show, and whether the heap
// after GC of the server and of the page stays flat while the fleet keeps
// changing. The server's model is fed directly (as its informers would feed
// it), so the figures are the dashboard's own, not the API server's.
//
//   node --expose-gc --conditions=@mco/source --import tsx bench/dashboard-scale.bench.ts [minutes]
//
// Prints figures; asserts nothing.
import { chromium } from 'playwright-core';
import { FleetModel, keptEvent, SEE_ALL } from '../src/dashboard/model.js';
import { createDashboardServer } from '../src/dashboard/server.js';

const CLUSTERS = 1_000;
const PLACEMENTS = 1_000;
const PER_PLACEMENT = 3;
const minutes = Number(process.argv[2] ?? 2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const model = new FleetModel();
const STATES = ['ACTIVE', 'SCALING_IN', 'EVICTING', 'UNHEALTHY'] as const;
for (let i = 0; i < CLUSTERS; i++) {
  model.clusterProfile('add', {
    metadata: { namespace: 'fleet', name: `c${i}`, labels: { region: `r${i % 20}`, gpu: 'l4' } },
    status: { properties: [{ name: 'cost', value: String(i % 7) }] },
  });
}
const placement = (p: number, tick: number) => ({
  metadata: { namespace: `team-${p % 50}`, name: `p${p}` },
  spec: {},
  status: {
    conditions: [{ type: 'Valid', status: 'True', reason: 'Valid', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    clusters: Array.from({ length: PER_PLACEMENT }, (_, k) => ({
      namespace: 'fleet',
      name: `c${(p * PER_PLACEMENT + k) % CLUSTERS}`,
      state: STATES[(tick + k) % STATES.length]!,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    })),
  },
});
for (let p = 0; p < PLACEMENTS; p++) model.placement('add', placement(p, 0));

const server = createDashboardServer({ model, synced: () => true, auth: 'none' });
const address = await server.listen('127.0.0.1', 0);
const url = `http://127.0.0.1:${address.port}/`;

const started = performance.now();
const view = JSON.stringify(model.view(SEE_ALL, 'bench', true));
console.log(
  `view for ${CLUSTERS} clusters x ${PLACEMENTS} placements: ${(view.length / 1024).toFixed(0)} KiB JSON, built in ${(performance.now() - started).toFixed(0)} ms`,
);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
const cdp = await page.context().newCDPSession(page);
const loads: number[] = [];
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  await page.goto(url);
  await page.locator('tr[data-placement]').first().waitFor();
  loads.push(Math.round(performance.now() - t0));
}
console.log(
  `first page load (navigation to both tables rendered, first ${100} rows of each), 3 runs: ${loads.join(', ')} ms (target < 1000 ms)`,
);
const t1 = performance.now();
await page.getByRole('button', { name: 'Show all rows' }).click();
await page.locator(`tr[data-placement="team-${(PLACEMENTS - 1) % 50}/p${PLACEMENTS - 1}"]`).waitFor();
console.log(`"Show all rows" (2,000 rows): ${Math.round(performance.now() - t1)} ms`);

const heaps = async () => {
  gc();
  await cdp.send('HeapProfiler.collectGarbage');
  const pageHeap = (await cdp.send('Runtime.getHeapUsage')).usedSize;
  return { server: process.memoryUsage().heapUsed / 2 ** 20, page: pageHeap / 2 ** 20 };
};

// Each change of a placement comes with an Event about it, and the hub holds Events about other objects too
// (the API server's field selector keeps those from the dashboard; here the model must ignore them). The API
// server deletes Events after their TTL: the oldest go once EVENTS_KEPT are held.
const EVENTS_KEPT = 10_000;
const eventNames: string[] = [];
let eventCount = 0;
const event = (namespace: string, kind: string, involved: string, tick: number) => {
  const name = `${involved}.${(eventCount++).toString(16)}`;
  const object = {
    metadata: { namespace, name, managedFields: [{ manager: 'mco', operation: 'Update' }] },
    involvedObject: { kind, namespace, name: involved },
    type: 'Normal',
    reason: 'E1Tainted',
    message: `fleet/c${tick % CLUSTERS}: ACTIVE -> EVICTING: no longer eligible: the taint mco.x-k8s.io/drained:NoSelect is not tolerated`,
    lastTimestamp: new Date().toISOString(),
    count: 1,
  };
  model.event('add', keptEvent(object));
  eventNames.push(`${namespace}/${name}`);
  if (eventNames.length > EVENTS_KEPT) {
    const [ns, old] = eventNames.shift()!.split('/') as [string, string];
    model.event('delete', keptEvent({ ...object, metadata: { namespace: ns, name: old } }));
  }
};

// Changes: 10 placements change state every 100 ms, each with an Event (and one Event about a Pod), a
// ClusterProfile label every second.
let tick = 0;
const changes = setInterval(() => {
  tick++;
  for (let k = 0; k < 10; k++) {
    const p = (tick * 10 + k) % PLACEMENTS;
    model.placement('update', placement(p, tick));
    event(`team-${p % 50}`, 'MultiKubernetesClusterPlacement', `p${p}`, tick);
  }
  event('default', 'Pod', `pod-${tick}`, tick);
  if (tick % 10 === 0) {
    const i = (tick / 10) % CLUSTERS;
    model.clusterProfile('update', {
      metadata: { namespace: 'fleet', name: `c${i}`, labels: { region: `r${i % 20}`, gpu: 'l4', tick: String(tick) } },
    });
  }
}, 100);
const samples: string[] = [];
const end = Date.now() + minutes * 60_000;
const baselineAt = Date.now() + (minutes * 60_000) / 4;
let baseline: { server: number; page: number } | undefined;
while (Date.now() < end) {
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  const h = await heaps();
  if (!baseline && Date.now() >= baselineAt) baseline = h;
  samples.push(
    `${Math.round((Date.now() - (end - minutes * 60_000)) / 1000)} s: server ${h.server.toFixed(1)} MiB, page ${h.page.toFixed(1)} MiB`,
  );
}
clearInterval(changes);
const last = await heaps();
console.log(
  `heap after GC while changing (${tick * 10} placement updates, ${eventCount} Events, ${EVENTS_KEPT} held at a time, ${Math.floor(tick / 10)} label changes):`,
);
console.log(
  `one placement's Events on its page at the end: ${model.view(SEE_ALL, 'bench', true, 'team-7/p7').placement?.events.length}`,
);
for (const s of samples) console.log(`  ${s}`);
if (baseline) {
  console.log(
    `last vs the sample at a quarter of the run: server ${((last.server / baseline.server - 1) * 100).toFixed(1)} %, page ${((last.page / baseline.page - 1) * 100).toFixed(1)} % (target <= +10 %)`,
  );
}
await browser.close();
await server.close();
