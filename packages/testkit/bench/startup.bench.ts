// Prints how long the harness takes on this machine: locating the binaries,
// starting control planes of several sizes, restarting an apiserver, installing
// CRDs and stopping. Figures only; nothing is asserted. Run: npm run bench -w @mco/testkit
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  locateBinaries,
  startControlPlane,
  THIRD_PARTY_CRDS,
  thirdPartyCrd,
  type ThirdPartyCrd,
} from '../src/index.js';

const RUNS = 5;
const OUR_CRD = fileURLToPath(
  new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);

function summary(label: string, ms: number[]): void {
  const sorted = [...ms].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    `${label.padEnd(44)} median ${(median / 1000).toFixed(2)} s  (min ${(sorted[0]! / 1000).toFixed(2)}, max ${(sorted.at(-1)! / 1000).toFixed(2)}, n=${ms.length})`,
  );
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now();
  const value = await fn();
  return [performance.now() - start, value];
}

console.log(
  `load average before: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (2 cores)`,
);
const [locate] = await timed(() => Promise.resolve(locateBinaries()));
summary('locate binaries (prepared)', [locate]);

for (const clusters of [[], ['east', 'west']]) {
  const startups: number[] = [];
  const stops: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const cp = await startControlPlane({ clusters });
    startups.push(cp.startupMs);
    const [stop] = await timed(() => cp.stop());
    stops.push(stop);
  }
  summary(`start etcd + ${clusters.length + 1} kube-apiserver(s)`, startups);
  summary(`stop (SIGKILL, temp dir removed)`, stops);
}

const cp = await startControlPlane();
try {
  const restarts: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    restarts.push((await timed(() => cp.hub.restart()))[0]);
  }
  summary('restart one kube-apiserver (SIGTERM, start, ready)', restarts);
  const crashes: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    crashes.push((await timed(() => cp.hub.restart({ kill: true })))[0]);
  }
  summary('restart after a crash (SIGKILL, start, ready)', crashes);
  for (let i = 0; i < RUNS; i++) {
    const [ms] = await timed(() => cp.hub.installCrds([OUR_CRD]));
    ours.push(ms);
  }
  summary('install the MKCP CRD (first: new; then no-op)', ours);
  let paths: string[] = [];
  try {
    paths = (Object.keys(THIRD_PARTY_CRDS) as ThirdPartyCrd[]).map((name) => thirdPartyCrd(name));
  } catch {
    console.log('third-party CRDs: a tool that holds some of them is not prepared; no figure');
  }
  if (paths.length > 0)
    summary(`install all ${paths.length} third-party CRDs`, [(await timed(() => cp.hub.installCrds(paths)))[0]]);
} finally {
  await cp.stop();
}
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
