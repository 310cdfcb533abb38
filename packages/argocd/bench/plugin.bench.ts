// Benchmark of the plugin generator endpoint on loopback: latency (p50/p99) and
// throughput with 100 clusters per answer, as Argo CD calls it (POST, bearer
// token, JSON body, keep-alive). The server runs in a child process so client
// and server do not share an event loop. Prints figures; asserts nothing.
//
//   npm run bench -w @mco/argocd        (tsx --conditions=@mco/source bench/plugin.bench.ts)
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Placement } from '@mco/core';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import { percentile, summarize } from '@mco/testkit';
import { createFileTokenVerifier, createPluginServer, createStaticPlacementView } from '../src/index.js';

const CLUSTERS = 100;
const TOKEN = 'bench-token-0123456789abcdef';
const BODY = `${JSON.stringify({
  applicationSetName: 'bench',
  input: { parameters: { multiClusterOrchestraPlacementName: 'web', multiClusterOrchestraPlacementNamespace: 'apps' } },
})}\n`;

/** Child: serve a placement listing 100 clusters (every 10th draining). */
async function serve(tokenFile: string): Promise<void> {
  const T = '2026-01-01T00:00:00Z';
  const names = Array.from({ length: CLUSTERS }, (_, i) => `cluster-${String(i).padStart(3, '0')}`);
  const placement: Placement = aPlacement(
    'apps/web',
    {},
    {
      observedGeneration: 1,
      clusters: names.map((name, i) => ({
        name,
        namespace: 'fleet',
        state: i % 10 === 9 ? ('SCALING_IN' as const) : ('ACTIVE' as const),
        lastTransitionTime: T,
        ...(i % 10 === 9 ? { draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: T } } : {}),
      })),
    },
  );
  const profiles = names.map((name, i) =>
    aClusterProfile(`fleet/${name}`, {
      labels: { environment: 'production', region: `region-${i % 7}`, 'x-k8s.io/cluster-manager': 'bench' },
      server: `https://${name}.example:6443`,
    }),
  );
  const plugin = createPluginServer({
    view: createStaticPlacementView({ placements: [placement], clusterProfiles: profiles }),
    token: createFileTokenVerifier(tokenFile),
  });
  // Server-side time per request: from the request event to the response's
  // finish, which excludes the client's own scheduling delays.
  let serverMs: number[] = [];
  plugin.server.on('request', (_req, res) => {
    const t0 = performance.now();
    res.once('finish', () => serverMs.push(performance.now() - t0));
  });
  process.on('message', () => {
    process.send?.({ serverMs });
    serverMs = [];
  });
  const { port } = await plugin.listen(0, '127.0.0.1');
  process.send?.({ port });
}

interface Run {
  /** From the moment the request was sent to its answer's end. */
  readonly latenciesMs: number[];
  /** Open loop: from the moment a request was due to its answer's end (sent late counts; never sent early). */
  readonly fromDueMs?: number[];
  readonly seconds: number;
  readonly errors: number;
  readonly bytes: number;
}

function call(agent: Agent, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/getparams.execute',
        headers: {
          'User-Agent': 'argocd-applicationset',
          'Content-Type': 'application/json',
          Authorization: `Bearer ${TOKEN}`,
          'Content-Length': Buffer.byteLength(BODY),
        },
      },
      (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(BODY);
  });
}

/**
 * Open loop: requests start on a fixed schedule, never before they are due.
 * Latency counts from the actual send; "from due" counts from the schedule,
 * so a client stall still shows (no coordinated omission).
 */
async function openLoop(port: number, rate: number, seconds: number): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(rate * seconds);
  const latenciesMs: number[] = [];
  const fromDueMs: number[] = [];
  let errors = 0;
  let bytes = 0;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // A timer may fire a fraction of a millisecond early (whole-millisecond clock): yield until due.
    while (performance.now() < due) await new Promise((resolve) => setImmediate(resolve));
    const sent = performance.now();
    inflight.push(
      call(agent, port).then(
        (n) => {
          bytes += n;
          const end = performance.now();
          latenciesMs.push(end - sent);
          fromDueMs.push(end - due);
        },
        () => void errors++,
      ),
    );
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  return { latenciesMs, fromDueMs, seconds: elapsed, errors, bytes };
}

/** Closed loop: `concurrency` connections, each sending its next request when the last answer arrived. */
async function closedLoop(port: number, concurrency: number, requests: number): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const latenciesMs: number[] = [];
  let errors = 0;
  let bytes = 0;
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < requests) {
        const t0 = performance.now();
        try {
          const n = await call(agent, port);
          bytes += n;
          latenciesMs.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  return { latenciesMs, seconds: elapsed, errors, bytes };
}

function report(name: string, run: Run, serverMs: readonly number[]): void {
  const client = summarize(`${name}: client latency`, run.latenciesMs);
  const server = summarize(`${name}: server latency`, serverMs);
  const due = run.fromDueMs ? percentile(`${name}: latency from due`, run.fromDueMs, 99) : undefined;
  const f = (ms: number) => `${ms.toFixed(2)} ms`;
  console.log(
    `${name.padEnd(32)} ${String(run.latenciesMs.length).padStart(6)} ok ${String(run.errors).padStart(2)} err ` +
      `${(run.latenciesMs.length / run.seconds).toFixed(0).padStart(6)} req/s | client p50 ${f(client.p50)} ` +
      `p99 ${f(client.p99)} max ${f(client.max)}${due === undefined ? '' : ` (from due: p99 ${f(due)})`} | ` +
      `server p50 ${f(server.p50)} p99 ${f(server.p99)} | ` +
      `${(run.bytes / Math.max(1, run.latenciesMs.length) / 1024).toFixed(1)} KiB/answer`,
  );
}

async function main(): Promise<void> {
  if (process.argv[2] === '--serve') return serve(process.argv[3]!);
  const dir = mkdtempSync(join(tmpdir(), 'mco-argocd-bench-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, TOKEN);
  const child = fork(fileURLToPath(import.meta.url), ['--serve', tokenFile], {
    execArgv: ['--conditions=@mco/source', '--import', 'tsx'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { port: number }).port));
      child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const load = () => loadavg()[0]!.toFixed(1);
    console.log(
      `plugin generator on loopback, ${CLUSTERS} clusters per answer, Node ${process.version}, load average ${load()}`,
    );
    const serverTimes = () =>
      new Promise<number[]>((resolve) => {
        child.once('message', (m) => resolve((m as { serverMs: number[] }).serverMs));
        child.send('report');
      });
    await closedLoop(port, 4, 2_000); // warm-up (JIT, connections)
    await serverTimes();
    // Three separate windows: on a shared machine one stall of the client
    // process spoils a window's p99, and the spread shows it.
    for (const window of [1, 2, 3]) {
      report(`open loop 1,000 req/s, 5 s (#${window})`, await openLoop(port, 1_000, 5), await serverTimes());
    }
    report('open loop 2,000 req/s for 5 s', await openLoop(port, 2_000, 5), await serverTimes());
    report('closed loop, 1 connection', await closedLoop(port, 1, 5_000), await serverTimes());
    report('closed loop, 16 connections', await closedLoop(port, 16, 20_000), await serverTimes());
    console.log(`load average after: ${load()} (on a shared machine, open-loop tails follow the load)`);
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
