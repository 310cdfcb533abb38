import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';

/** The evaluation time of the real-Prometheus tests (seconds): their samples end here. */
export const T = Date.parse('2026-01-01T00:00:00Z') / 1000;
/** A value held from T-10m to T, one sample a minute (inside Prometheus' 5-minute lookback). */
export const held = (v: number) => Array.from({ length: 11 }, (_, i) => [T - 600 + i * 60, v] as const);

/** Why the real-Prometheus tests cannot run here, or undefined. Under CI=true they always run. */
export function prometheusSkipReason(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CI === 'true' || env.CI === '1') return undefined;
  for (const tool of ['prometheus', 'promtool']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed; to enable: apt-get install -y prometheus`;
    }
  }
  return undefined;
}

export interface PrometheusServer {
  readonly url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Loads OpenMetrics text into a TSDB with promtool and serves it with a real
 * Prometheus on a random loopback port (no scrape targets).
 */
export async function startPrometheus(openMetrics: string): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mco-prometheus-'));
  writeFileSync(join(dir, 'series.om'), openMetrics);
  writeFileSync(join(dir, 'prometheus.yml'), 'global: {}\n');
  execFileSync('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', join(dir, 'series.om'), join(dir, 'data')], {
    stdio: 'pipe',
  });
  let lastError = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        '--storage.tsdb.retention.time=100y',
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    const url = `http://127.0.0.1:${port}`;
    if (await ready(url, child, 30_000)) {
      return {
        url,
        async stop() {
          await stopProcess(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    await stopProcess(child);
    lastError = stderr;
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`prometheus did not become ready: ${lastError}`);
}

async function ready(url: string, child: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      if ((await fetch(`${url}/-/ready`)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** OpenMetrics text: families in order, each sample `[labels, [[seconds, value], ...]]`. */
export function openMetrics(
  families: readonly {
    name: string;
    type: 'gauge' | 'counter';
    series: readonly [Record<string, string>, readonly (readonly [number, number])[]][];
  }[],
): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# TYPE ${f.name} ${f.type}`);
    const sample = f.type === 'counter' ? `${f.name}_total` : f.name;
    for (const [labels, points] of f.series) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',');
      for (const [t, v] of points) lines.push(`${sample}{${l}} ${v} ${t}`);
    }
  }
  lines.push('# EOF');
  return `${lines.join('\n')}\n`;
}

/** A request about placement apps/web (workload shop/web) on the clusters fleet/<name>. */
export function webRequest(names: readonly string[]): SignalRequest {
  return {
    placement: {
      namespace: 'apps',
      name: 'web',
      spec: {
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            workloadDetails: { namespace: 'shop', deploymentName: 'web', hpaName: 'web' },
          },
        },
      },
    },
    clusters: names.map((n) => ({ key: `fleet/${n}`, profile: aClusterProfile(`fleet/${n}`) as ClusterProfile })),
  };
}
