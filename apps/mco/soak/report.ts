// The soak's verdict: every checker over the history, and the text report.
import { summarize } from '@mco/testkit';
import {
  checkLeftovers,
  checkMinActive,
  checkRss,
  convergence,
  judgeDeletions,
  scalingMoves,
  stateAfter,
  strandedObjects,
  type Bounds,
  type Convergence,
  type RssFigure,
  type SoakEvent,
  type Violation,
} from './history.js';
import { FAULT_KINDS } from './schedule.js';

export interface Verdict {
  readonly violations: readonly Violation[];
  /** (b): the share of placement-time the bounds exempted; above `MAX_EXEMPTED_SHARE` the run does not count. */
  readonly exemptedShare: number;
  readonly convergences: readonly Convergence[];
  readonly rss: readonly RssFigure[];
  /**
   * (a): deletions on a listed cluster judged to be an earlier removal's prune
   * that landed after the cluster was listed again (held up by an unreachable
   * member, a restarted kustomize-controller or its retries); not violations, and shown.
   */
  readonly latePrunes: readonly Violation[];
  /**
   * What `profile-moved` faults left on the members' own servers at the end
   * (`placement on member: names`): doubt, so exempt from (c) and (d), and shown.
   */
  readonly stranded: readonly string[];
  /** Each autoscaling placement's moves on its signals (scale-outs, scale-ins), so that a run shows the signals moved it. */
  readonly scaling: readonly { readonly placement: string; readonly outs: number; readonly ins: number }[];
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
  const deletions = judgeDeletions(history);
  const violations = [
    ...deletions.violations,
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
    latePrunes: deletions.latePrunes,
    stranded: [...strandedObjects(stateAfter(history))].map(([key, names]) => {
      const [placement, member] = key.split('|');
      return `${placement} on ${member}: ${names.join(', ')}`;
    }),
    scaling: [...new Set(history.flatMap((e) => (e.type === 'intent' && e.scaling ? [e.placement] : [])))].map(
      (placement) => ({ placement, ...scalingMoves(history, placement) }),
    ),
  };
}

/**
 * A run whose bounds exempted more than this share of placement-time from (b)
 * does not count: the faults kept the placements below their minimum too long
 * for the run to show anything about them.
 */
export const MAX_EXEMPTED_SHARE = 0.25;

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** One line per event, for the events around a violation. */
export function describeEvent(e: SoakEvent): string {
  switch (e.type) {
    case 'status':
      return `status ${e.placement}: ${e.clusters.map((c) => `${c.member} ${c.state}${c.reason ? ` (${c.reason})` : ''}`).join(', ') || 'no clusters'}`;
    case 'intent':
      return `intent ${e.placement}: ${e.members.join(',')}${e.scaling ? ' (signals)' : ''}`;
    case 'profile':
      return `ClusterProfile ${e.member} ${e.present ? 'present' : 'deleted'}`;
    case 'object':
      return `${e.member}: ${e.kind} ${e.name} ${e.present ? 'present' : 'deleted'}${e.gap ? ' (re-list)' : ''}${e.uid ? ` uid ${e.uid.slice(0, 8)}` : ''}`;
    case 'delivery':
      return `${e.kind === 'RepoSync' ? e.member : 'hub'}: ${e.kind ?? 'Kustomization'} ${e.name} (${e.placement} on ${e.member}) ${e.present ? 'present' : e.gone ? 'gone' : 'deletion asked'}`;
    case 'fault':
      return `fault ${e.id} ${e.phase} ${e.kind}${e.target ? ` ${e.target}` : ''}${e.error ? `: ${e.error}` : ''}${e.detail ? ` (${e.detail})` : ''}`;
    case 'gap':
      return `watch gap ${e.source}: ${e.error}`;
    case 'rss':
      return `rss ${e.process} ${e.kb} kB`;
    default:
      // A kind of event this report does not know yet (a newer harness's history): as recorded.
      return JSON.stringify(e);
  }
}

/** One event as the reports print it: its time, then what it was. */
export const eventLine = (e: SoakEvent) => `${seconds(e.t).padStart(9)}  ${describeEvent(e)}`;

/** The 30 events nearest to `t` within a minute (watch gaps and RSS samples left out), in time order. */
export function eventsAround(history: readonly SoakEvent[], t: number): SoakEvent[] {
  return history
    .filter((e) => e.type !== 'rss' && e.type !== 'gap' && Math.abs(e.t - t) <= 60_000)
    .sort((a, b) => Math.abs(a.t - t) - Math.abs(b.t - t))
    .slice(0, 30)
    .sort((a, b) => a.t - b.t);
}

type FaultEvent = Extract<SoakEvent, { type: 'fault' }>;

/** The faults that ran, each by its end event (a fault that never ended was not undone: its start says so). */
export const faultEnds = (history: readonly SoakEvent[]): FaultEvent[] =>
  history.filter((e): e is FaultEvent => e.type === 'fault' && e.phase === 'end');

export interface KindFigures {
  readonly kind: string;
  readonly count: number;
  /** Faults whose injection or undoing reported an error. */
  readonly errors: number;
  /** Time from each fault's end to convergence (nearest-rank percentiles), when any converged. */
  readonly converged?: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly notConverged: number;
}

/** Faults by kind: count, errors and convergence p50/p99/max; every known kind, and any other the history holds. */
export function faultsByKind(history: readonly SoakEvent[], verdict: Verdict): KindFigures[] {
  const faults = faultEnds(history);
  const kinds = [...new Set<string>([...FAULT_KINDS, ...faults.map((f) => f.kind)])];
  return kinds.map((kind) => {
    const of = verdict.convergences.filter((c) => c.kind === kind);
    const times = of.flatMap((c) => (c.ms === undefined ? [] : [c.ms]));
    const summary = times.length ? summarize(kind, times) : undefined;
    return {
      kind,
      count: faults.filter((f) => f.kind === kind).length,
      errors: faults.filter((f) => f.kind === kind && f.error).length,
      ...(summary ? { converged: { p50: summary.p50, p99: summary.p99, max: summary.max } } : {}),
      notConverged: of.length - times.length,
    };
  });
}

/** RSS growth of the incarnation that lived through the window, or why there is none. */
export const growthText = (p: RssFigure) =>
  p.growth === undefined ? 'n/a (restarted in the window)' : `${(p.growth * 100).toFixed(1)}%`;

/** The verdict on (b)'s exemptions, one sentence. */
export function exemptionText(verdict: Verdict): string {
  const share = `${percent(verdict.exemptedShare)} of placement-time exempted by the bounds after faults`;
  return verdict.exemptedShare > MAX_EXEMPTED_SHARE
    ? `${share}: more than ${percent(MAX_EXEMPTED_SHARE)}, so THIS RUN DOES NOT COUNT (the faults kept placements below their minimum too long for the run to show anything)`
    : `${share} (at most ${percent(MAX_EXEMPTED_SHARE)} for the run to count)`;
}

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

/** The command that runs the same soak again. */
export const reproduce = (r: ReportInput) =>
  `npm run soak -- --minutes ${r.minutes} --seed ${r.seed} --mean-gap ${r.meanGapMs / 1000}${r.broken ? ` --broken ${r.broken}` : ''}`;

/**
 * The text report: violations with the events around them, (b)'s exempted
 * share, faults by kind with convergence p50/p99/max, RSS per process.
 */
export function textReport(r: ReportInput): string {
  const { history, verdict } = r;
  const lines: string[] = [];
  lines.push(`mco soak: seed ${r.seed}, ${r.minutes} min, started ${r.startedAt}, ran ${seconds(r.endT)}`);
  lines.push(`reproduce: ${reproduce(r)}`);
  lines.push(r.setup);
  lines.push(
    `bounds: (b) ${seconds(r.bounds.minActiveMs)} below the minimum plus stalling faults' time; (c) ${seconds(r.bounds.convergeMs)} to converge after a fault; (d) ${seconds(r.bounds.leftoverMs)} to remove a leaving cluster's objects plus its downtime; (e) RSS growth < ${r.bounds.rssGrowth * 100}%`,
  );
  lines.push('', `VIOLATIONS: ${verdict.violations.length}`);
  for (const v of verdict.violations) {
    lines.push(`  (${v.invariant}) at ${seconds(v.t)}: ${v.message}`);
    for (const e of eventsAround(history, v.t)) lines.push(`      ${eventLine(e)}`);
  }
  lines.push(
    '',
    `invariant (a): ${verdict.latePrunes.length} deletion(s) on a listed cluster were an earlier removal's prune, still running when the cluster was listed again (the Kustomization of the new listing applies them again):`,
  );
  for (const p of verdict.latePrunes) lines.push(`  at ${seconds(p.t)}: ${p.message}`);
  lines.push(
    '',
    `invariants (c), (d): ${verdict.stranded.length} placement(s) left objects on a member's own server when its ClusterProfile moved to another server (doubt: kept, not owed gone):`,
  );
  for (const s of verdict.stranded) lines.push(`  ${s}`);
  for (const e of history) {
    if (e.type === 'fault' && e.kind === 'profile-moved' && e.phase === 'end')
      lines.push(`  ${e.target}'s profile back at ${seconds(e.t)}; ${e.detail ?? e.error ?? ''}`);
  }
  lines.push('', `invariant (b): ${exemptionText(verdict)}`);
  lines.push(
    `autoscaling on signals: ${verdict.scaling.map((s) => `${s.placement} scaled out ${s.outs} and in ${s.ins} time(s)`).join('; ') || 'none'}`,
  );
  const kinds = faultsByKind(history, verdict);
  lines.push('', `FAULTS: ${faultEnds(history).length} injected`);
  lines.push('  kind                 count  errors  converged p50 / p99 / max      not converged');
  for (const k of kinds) {
    const figures = k.converged
      ? `${seconds(k.converged.p50)} / ${seconds(k.converged.p99)} / ${seconds(k.converged.max)}`
      : '-';
    lines.push(
      `  ${k.kind.padEnd(20)} ${String(k.count).padStart(5)}  ${String(k.errors).padStart(6)}  ${figures.padEnd(30)} ${k.notConverged}`,
    );
  }
  for (const f of faultEnds(history).filter((f) => f.error))
    lines.push(`  fault ${f.id} ${f.kind} ${f.target}: ${f.error}`);
  lines.push(
    '',
    'RSS (kB); growth over the last 30 minutes (the second half of a shorter run) of the incarnation alive through them:',
    `  ${'process'.padEnd(22)} ${'first'.padStart(9)} ${'last'.padStart(9)} ${'max'.padStart(9)}  growth`,
  );
  for (const p of verdict.rss) {
    lines.push(
      `  ${p.process.padEnd(22)} ${String(p.firstKb).padStart(9)} ${String(p.lastKb).padStart(9)} ${String(p.maxKb).padStart(9)}  ${growthText(p)}`,
    );
  }
  lines.push(
    `failed starts retried (crash loops): ${
      Object.entries(r.crashes)
        .map(([p, n]) => `${p} ${n}`)
        .join(', ') || 'none'
    }`,
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
