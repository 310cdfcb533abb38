// CPU time of the test control plane's processes, read from /proc: what the benchmarks print as the API server's share.
import { readdirSync, readFileSync } from 'node:fs';
import { metricSums } from '@mco/testkit';

/** CPU time (user + system) of a process of this machine, from /proc (clock ticks of 10 ms). */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The pid of the process whose command line has every one of `parts` (the control plane's etcd and kube-apiserver). */
function pidOf(...parts: string[]): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    if (parts.every((part) => args.some((arg) => arg.includes(part)))) return Number(entry);
  }
  return undefined;
}

/** CPU time of the control plane's processes: the API server and etcd. */
export function controlPlaneCpu(server: string): () => { apiserver: number; etcd: number } {
  const apiserver = pidOf('kube-apiserver', `--secure-port=${new URL(server).port}`);
  const etcdServers = apiserver
    ? readFileSync(`/proc/${apiserver}/cmdline`, 'utf8')
        .split('\0')
        .find((a) => a.startsWith('--etcd-servers='))
    : undefined;
  const etcd = etcdServers
    ? pidOf('etcd', `--listen-client-urls=${etcdServers.slice('--etcd-servers='.length)}`)
    : undefined;
  return () => ({ apiserver: cpuMsOf(apiserver), etcd: cpuMsOf(etcd) });
}

/**
 * Requests the API server answered, by verb and resource (`apiserver_request_total` of its /metrics),
 * for the difference between two points of a run: what a phase asked of it.
 */
export async function requestCounts(get: (path: string) => Promise<string>): Promise<Map<string, number>> {
  return metricSums(
    await get('/metrics'),
    'apiserver_request_total',
    (l) => `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ''}`,
  );
}

/** `after - before`, largest first, as `VERB resource N` items (those that grew). */
export function requestDelta(before: Map<string, number>, after: Map<string, number>): string {
  return [...after]
    .map(([key, n]) => [key, n - (before.get(key) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ');
}

/**
 * CPU time the hypervisor gave to other guests (steal, summed over this machine's cores, from /proc/stat):
 * on a shared host a phase with steal had fewer cores than the row says.
 */
export function stealMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  return Number(fields[8] ?? 0) * 10;
}
