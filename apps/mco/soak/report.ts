// The soak's verdict: every checker over the history, and the text report.
import { summarize } from '@mco/testkit';
import {
  checkDeletions,
  checkLeftovers,
  checkMinActive,
  checkRss,
  convergence,
  type Bounds,
  type Convergence,
  type RssFigure,
  type SoakEvent,
  type Violation,
} from './history.js';
import { FAULT_KINDS } from './schedule.js';

export interface Verdict {
  readonly violations: readonly Violation[];
  readonly exemptedShare: number;
  readonly convergences: readonly Convergence[];
  readonly rss: readonly RssFigure[];
}

/** Runs every checker: (a) deletions, (b) minimum ACTIVE, (c) convergence, (d) leftovers, (e) RSS. */
export function judge(
  history: readonly SoakEvent[],
  members: readonly string[],
  objectsPerCluster: number,
  endT: number,
  bounds: Bounds,
): Verdict {
  const minActive = checkMinActive(history, endT, bounds);
  const converged = convergence(history, members, objectsPerCluster, endT, bounds);
  const rss = checkRss(history, endT, bounds);
  const violations = [
    ...checkDeletions(history),
    ...minActive.violations,
    ...converged.violations,
    ...checkLeftovers(history, endT, bounds, objectsPerCluster),
    ...rss.violations,
  ].sort((a, b) => a.t - b.t);
  return {
    violations,
    exemptedShare: minActive.exemptedShare,
    convergences: converged.convergences,
    rss: rss.figures,
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const describe = (e: SoakEvent): string => {
  switch (e.type) {
    case 'status':
      return `status ${e.placement}: ${e.clusters.map((c) => `${c.member} ${c.state}${c.reason ? ` (${c.reason})` : ''}`).join(', ') || 'no clusters'}`;
    case 'intent':
      return `intent ${e.placement}: ${e.members.join(',')}`;
    case 'profile':
      return `ClusterProfile ${e.member} ${e.present ? 'present' : 'deleted'}`;
    case 'object':
      return `${e.member}: ${e.kind} ${e.name} ${e.present ? 'present' : 'deleted'}${e.gap ? ' (re-list)' : ''}`;
    case 'delivery':
      return `hub: Kustomization ${e.name} (${e.placement} on ${e.member}) ${e.present ? 'present' : 'deleted'}`;
    case 'fault':
      return `fault ${e.id} ${e.phase} ${e.kind}${e.target ? ` ${e.target}` : ''}${e.error ? `: ${e.error}` : ''}`;
    case 'gap':
      return `watch gap ${e.source}: ${e.error}`;
    case 'rss':
      return `rss ${e.process} ${e.kb} kB`;
  }
};

export interface ReportInput {
  readonly seed: number;
  readonly minutes: number;
  readonly meanGapMs: number;
  readonly startedAt: string;
  readonly endT: number;
  readonly bounds: Bounds;
  readonly history: readonly SoakEvent[];
  readonly verdict: Verdict;
  readonly setup: string;
  /** Starts of each process that failed and were retried, as the kubelet retries a crashing container. */
  readonly crashes: Readonly<Record<string, number>>;
  readonly broken?: string;
}

/** The text report: faults by kind, violations with the events around them, convergence per kind, RSS. */
export function textReport(r: ReportInput): string {
  const { history, verdict } = r;
  const lines: string[] = [];
  const faults = history.filter((e) => e.type === 'fault' && e.phase === 'end') as Extract<
    SoakEvent,
    { type: 'fault' }
  >[];
  lines.push(`mco soak: seed ${r.seed}, ${r.minutes} min, started ${r.startedAt}, ran ${seconds(r.endT)}`);
  lines.push(
    `reproduce: npm run soak -- --minutes ${r.minutes} --seed ${r.seed} --mean-gap ${r.meanGapMs / 1000}${r.broken ? ` --broken ${r.broken}` : ''}`,
  );
  lines.push(r.setup);
  lines.push(
    `bounds: (b) ${seconds(r.bounds.minActiveMs)} below the minimum plus stalling faults' time; (c) ${seconds(r.bounds.convergeMs)} to converge after a fault; (d) ${seconds(r.bounds.leftoverMs)} to remove a leaving cluster's objects plus its downtime; (e) RSS growth < ${r.bounds.rssGrowth * 100}%`,
  );
  lines.push('', `VIOLATIONS: ${verdict.violations.length}`);
  for (const v of verdict.violations) {
    lines.push(`  (${v.invariant}) at ${seconds(v.t)}: ${v.message}`);
    // The 30 events nearest to it (watch gaps and RSS samples left out), in time order.
    const around = history
      .filter((e) => e.type !== 'rss' && e.type !== 'gap' && Math.abs(e.t - v.t) <= 60_000)
      .sort((a, b) => Math.abs(a.t - v.t) - Math.abs(b.t - v.t))
      .slice(0, 30)
      .sort((a, b) => a.t - b.t);
    for (const e of around) lines.push(`      ${seconds(e.t).padStart(9)}  ${describe(e)}`);
  }
  lines.push(
    '',
    `invariant (b): ${(verdict.exemptedShare * 100).toFixed(1)}% of placement-time exempted by the bounds after faults`,
  );
  lines.push('', `FAULTS: ${faults.length} injected`);
  lines.push('  kind                 count  errors  converged p50 / p99 / max      not converged');
  for (const kind of FAULT_KINDS) {
    const of = faults.filter((f) => f.kind === kind);
    const times = verdict.convergences.filter((c) => c.kind === kind && c.ms !== undefined).map((c) => c.ms!);
    const never = verdict.convergences.filter((c) => c.kind === kind && c.ms === undefined).length;
    const figures = times.length
      ? (() => {
          const s = summarize(kind, times);
          return `${seconds(s.p50)} / ${seconds(s.p99)} / ${seconds(s.max)}`;
        })()
      : '-';
    lines.push(
      `  ${kind.padEnd(20)} ${String(of.length).padStart(5)}  ${String(of.filter((f) => f.error).length).padStart(6)}  ${figures.padEnd(30)} ${never}`,
    );
  }
  for (const f of faults.filter((f) => f.error)) lines.push(`  fault ${f.id} ${f.kind} ${f.target}: ${f.error}`);
  lines.push('', 'RSS (kB): process first last max growth-over-window');
  for (const p of verdict.rss) {
    const growth = p.growth === undefined ? 'n/a (restarted in the window)' : `${(p.growth * 100).toFixed(1)}%`;
    lines.push(`  ${p.process.padEnd(22)} ${p.firstKb} ${p.lastKb} ${p.maxKb} ${growth}`);
  }
  lines.push(
    `failed starts retried (crash loops): ${Object.entries(r.crashes)
      .map(([p, n]) => `${p} ${n}`)
      .join(', ')}`,
  );
  const gaps = new Map<string, number>();
  for (const e of history) if (e.type === 'gap') gaps.set(e.source, (gaps.get(e.source) ?? 0) + 1);
  lines.push(
    '',
    `watch gaps (each followed by a re-list): ${[...gaps].map(([s, n]) => `${s} ${n}`).join(', ') || 'none'}`,
  );
  lines.push(`history: ${history.length} events`);
  return lines.join('\n') + '\n';
}
