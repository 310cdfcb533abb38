// `mco dashboard` under a flood of large placement Events on a real
// kube-apiserver: 120 Events of 1 MB each about one placement (what a user
// allowed only to create Events can send). The dashboard runs from the
// sources as its own process; its resident memory is read from /proc before,
// at its peak (VmHWM) and after the flood, once the page shows the last Event.
//
//   node --conditions=@mco/source --import tsx bench/dashboard-event-flood.bench.ts [events] [bytes]
//
// Prints figures; asserts nothing.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@mco/testkit';
import type { View } from '../src/dashboard/view.js';
import { startHub } from '../../../packages/controller/test/support.js';

const EVENTS = Number(process.argv[2] ?? 120);
const BYTES = Number(process.argv[3] ?? 1024 * 1024);

const hub = await startHub();
try {
  await hub.core.createNamespace({ body: { metadata: { name: 'flood' } } });
  await hub.custom.createNamespacedCustomObject({
    group: 'orchestra.multicluster.x-k8s.io',
    version: 'v1alpha1',
    plural: 'multikubernetesclusterplacements',
    namespace: 'flood',
    body: {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'web', namespace: 'flood' },
      spec: {},
    },
  });
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mco-flood-')), 'kubeconfig');
  writeFileSync(kubeconfig, hub.admin.exportConfig());
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const main = new URL('../src/main.ts', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [
      '--conditions=@mco/source',
      '--expose-gc',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      // SIGUSR2: collect garbage and print the heap, so that what the dashboard keeps shows apart from garbage.
      `process.on('SIGUSR2', () => { gc(); process.stderr.write('heap ' + process.memoryUsage().heapUsed + '\\n'); });
       const { main } = await import(${JSON.stringify(main)}); process.exitCode = await main(process.argv.slice(1));`,
      'dashboard',
      '--kubeconfig',
      kubeconfig,
      '--listen',
      `127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'inherit', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    /** The heap after a full GC, then the resident set and its peak, in MiB. */
    const memory = async () => {
      const seen = stderr.length;
      child.kill('SIGUSR2');
      let heap: RegExpExecArray | null = null;
      await until('the heap figure', () => Promise.resolve((heap = /heap (\d+)\n/.exec(stderr.slice(seen))) !== null));
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
      return { heap: Number(heap![1]) / 1024 / 1024, rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
    };
    const until = async (what: string, probe: () => Promise<boolean>) => {
      const deadline = Date.now() + 120_000;
      while (!(await probe().catch(() => false))) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; dashboard stderr: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await until('the dashboard to sync', async () => (await fetch(`${url}healthz`)).status === 200);
    const before = await memory();

    const events = async () => {
      const abort = new AbortController();
      const res = await fetch(`${url}api/stream?placement=flood/web`, { signal: abort.signal });
      const reader = res.body!.getReader();
      let text = '';
      for (;;) {
        const { value } = await reader.read();
        text += new TextDecoder().decode(value);
        const match = /event: view\ndata: (.*)\n\n/.exec(text);
        if (match) {
          abort.abort();
          return (JSON.parse(match[1]!) as View).placement?.events ?? [];
        }
      }
    };
    const started = Date.now();
    const message = 'x'.repeat(BYTES);
    for (let i = 0; i < EVENTS; i++) {
      await hub.core.createNamespacedEvent({
        namespace: 'flood',
        body: {
          metadata: { name: `flood-${i}`, namespace: 'flood' },
          involvedObject: {
            apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
            kind: 'MultiKubernetesClusterPlacement',
            namespace: 'flood',
            name: 'web',
          },
          type: 'Warning',
          reason: `Flood${i}`,
          message,
          lastTimestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000),
          count: 1,
          source: { component: 'flood' },
        },
      });
    }
    const last = `Flood${EVENTS - 1}`;
    await until('the page to show the last Event', async () => (await events())[0]?.reason === last);
    const flooded = Date.now() - started;
    const after = await memory();
    const shown = await events();
    const mib = (n: number) => `${n.toFixed(0)} MiB`;
    console.log(
      `bench: ${EVENTS} placement Events of ${(BYTES / 1024).toFixed(0)} KiB each, created and shown in ${flooded} ms`,
    );
    console.log(
      `bench: dashboard heap after GC ${mib(before.heap)} before the flood, ${mib(after.heap)} after; RSS ${mib(before.rss)} before, peak ${mib(after.peak)}, ${mib(after.rss)} after`,
    );
    console.log(
      `bench: the page shows ${shown.length} Events, the longest message ${Math.max(...shown.map((e) => e.message.length))} characters`,
    );
  } finally {
    child.kill('SIGTERM');
  }
} finally {
  await hub.stop();
}
