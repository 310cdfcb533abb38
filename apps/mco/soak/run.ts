// One soak run: the stack, a baseline, the seeded faults and the load for N
// minutes, then the checkers over the history and the report.
import { createRandom } from '@mco/simulator';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_BOUNDS,
  isConverged,
  stateAfter,
  type Bounds,
  type DeliveryKind,
  type SoakEvent,
  type UntimedEvent,
} from './history.js';
import { inject } from './inject.js';
import { observe } from './observe.js';
import { htmlReport } from './report-html.js';
import { judge, textReport, type ReportInput, type Verdict } from './report.js';
import { DEFAULT_MEAN_GAP_MS, faultSchedule, shuffled, type FaultKind } from './schedule.js';
import {
  ARGO_PLACEMENTS,
  ARGOCD_NS,
  CONFIGSYNC_PLACEMENTS,
  CONTROLLERS,
  ENGINES,
  FLEET,
  FLUX_NS,
  hpaLevels,
  MEMBERS,
  OPERATOR_PLACEMENTS,
  PLACEMENT_NS,
  PLACEMENTS,
  placementSpec,
  SCALING_PLACEMENTS,
  SoakStack,
  WORKLOAD_KINDS,
  WORKLOAD_NS,
} from './stack.js';

export interface SoakOptions {
  readonly minutes: number;
  readonly seed: number;
  readonly bounds?: Bounds;
  /** Mean time between two fault starts (default `DEFAULT_MEAN_GAP_MS`). */
  readonly meanGapMs?: number;
  readonly kinds?: readonly FaultKind[];
  readonly broken?: 'delete-on-doubt';
  /** Progress lines (fault starts and ends); default: none. */
  readonly log?: (line: string) => void;
}

export interface SoakResult {
  readonly report: string;
  /** The same as a self-contained HTML page with a timeline of the faults and RSS over time. */
  readonly html: string;
  readonly verdict: Verdict;
  readonly history: readonly SoakEvent[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const OBJECTS_PER_CLUSTER = WORKLOAD_KINDS.length;
/** The delivery objects that follow each placement: Flux's, and Argo CD's or Config Sync's where they deliver it too. */
const deliveries = (placement: string): DeliveryKind[] => [
  'Kustomization',
  ...(ARGO_PLACEMENTS.includes(placement) ? (['Application', 'Secret'] as const) : []),
  ...(CONFIGSYNC_PLACEMENTS.includes(placement) ? (['RepoSync'] as const) : []),
];

/**
 * The initial clusters of each placement (an autoscaling placement's first
 * ones, which its signals make it need): the load's first move of `p3` is
 * then a scale-in and of `p4` a scale-out.
 */
const INITIAL: Record<string, readonly string[]> = {
  p1: ['east', 'west'],
  p2: ['east', 'west'],
  p3: [...MEMBERS],
  p4: ['east'],
};

/** Writes the text and HTML reports and the history into `dir` (soak-<seed>.txt, .html, .history.json); returns the text report's path. */
export function writeReports(dir: string, seed: number, result: SoakResult): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `soak-${seed}.txt`);
  writeFileSync(file, result.report);
  writeFileSync(join(dir, `soak-${seed}.history.json`), JSON.stringify(result.history));
  writeFileSync(join(dir, `soak-${seed}.html`), result.html);
  return file;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const bounds = o.bounds ?? DEFAULT_BOUNDS;
  const log = o.log ?? (() => undefined);
  const durationMs = o.minutes * 60_000;
  const meanGapMs = o.meanGapMs ?? DEFAULT_MEAN_GAP_MS;
  const startedAt = new Date().toISOString();
  const stack = await SoakStack.start();
  const history: SoakEvent[] = [];
  let origin = Date.now();
  const now = () => Date.now() - origin;
  const emit = (event: UntimedEvent) => {
    const e = { ...event, t: now() } as SoakEvent;
    history.push(e);
    if (e.type === 'fault')
      log(
        `${(e.t / 1000).toFixed(1)}s fault ${e.id} ${e.phase} ${e.kind} ${e.target}${e.error ? ` ERROR ${e.error}` : ''}${e.detail ? ` (${e.detail})` : ''}`,
      );
  };
  const members = Object.fromEntries(MEMBERS.map((m) => [m, stack.plane.members[m]!.adminKubeConfig()]));
  const reflectors = observe({
    hub: stack.hub(),
    members,
    placementNamespace: PLACEMENT_NS,
    fleetNamespace: FLEET,
    fluxNamespace: FLUX_NS,
    argocdNamespace: ARGOCD_NS,
    argoPlacements: ARGO_PLACEMENTS,
    workloadKinds: WORKLOAD_KINDS,
    workloadNamespace: WORKLOAD_NS,
    memberOfSlug: (slug) => MEMBERS.find((m) => slug.startsWith(`${FLEET}-${m}-`)),
    now,
    emit,
  });
  let rssTimer: NodeJS.Timeout | undefined;
  try {
    // Baseline: every placement on its initial clusters, delivered, before the clock starts.
    const intent = new Map<string, readonly string[]>();
    for (const p of PLACEMENTS) {
      intent.set(p, INITIAL[p]!);
      emit({
        type: 'intent',
        placement: p,
        members: INITIAL[p]!,
        deliveries: deliveries(p),
        scaling: SCALING_PLACEMENTS.includes(p),
      });
      if (SCALING_PLACEMENTS.includes(p)) {
        stack.setLevels(p, hpaLevels(INITIAL[p]!.length));
        await stack.levelsWritten();
      }
      await stack.writePlacement(p, placementSpec(p, INITIAL[p]!));
    }
    await until(
      () => converged(history),
      300_000,
      () => `baseline not converged\n${stack.logs()}`,
    );
    origin = Date.now();
    log(`baseline converged; soak starts: seed ${o.seed}, ${o.minutes} min`);

    rssTimer = setInterval(() => {
      for (const p of stack.processes) {
        const pid = p.pid();
        const kb = pid === undefined ? undefined : rssOf(pid);
        if (pid !== undefined && kb !== undefined) emit({ type: 'rss', process: p.name, pid, kb });
      }
    }, 10_000);

    const faults = faultSchedule({
      seed: o.seed,
      durationMs,
      meanGapMs,
      controllers: CONTROLLERS,
      members: MEMBERS,
      placements: PLACEMENTS,
      engines: ENGINES,
      quietTailMs: Math.min(60_000, durationMs / 4),
      ...(o.kinds ? { kinds: o.kinds } : {}),
    });
    log(`${faults.length} faults scheduled`);
    const locks = new Map<string, Promise<void>>();
    const lock = (p: string) => {
      let release!: () => void;
      locks.set(p, new Promise<void>((resolve) => (release = resolve)));
      return () => {
        locks.delete(p);
        release();
      };
    };
    const start = Date.now();
    const injected = inject(
      { stack, emit, specOf: (p) => placementSpec(p, intent.get(p)!), lock, ...(o.broken ? { broken: o.broken } : {}) },
      faults,
      start,
    );
    // The load: every 10-30 s one placement moves (seeded), dealt from a shuffled deck of all of them
    // so that a short run moves each: a cluster-list placement to another
    // non-empty set of members; an autoscaling one to another demand of 1-3 clusters, written as its HPAs'
    // status on the members, which its signals carry to the controller.
    const random = createRandom(o.seed ^ 0x10ad);
    let deck: string[] = [];
    const load = (async () => {
      while (Date.now() - start < durationMs - Math.min(60_000, durationMs / 4)) {
        await sleep(10_000 + random() * 20_000);
        if (deck.length === 0) deck = shuffled(random, PLACEMENTS);
        const p = deck.shift()!;
        const chosen = MEMBERS.filter(() => random() < 0.6);
        const scaling = SCALING_PLACEMENTS.includes(p);
        // Another demand than now, so that every move of an autoscaling placement is a scale-out or a scale-in.
        const demands = MEMBERS.map((_, i) => i + 1).filter((k) => k !== intent.get(p)!.length);
        const next = scaling
          ? MEMBERS.slice(0, demands[Math.floor(random() * demands.length)]!)
          : chosen.length
            ? chosen
            : [MEMBERS[Math.floor(random() * MEMBERS.length)]!];
        await locks.get(p);
        intent.set(p, next);
        // Recorded before the write: the controller may act on it before the write returns.
        emit({ type: 'intent', placement: p, members: next, deliveries: deliveries(p), scaling });
        if (scaling) stack.setLevels(p, hpaLevels(next.length));
        else await stack.writePlacement(p, placementSpec(p, next));
      }
    })();
    await Promise.all([injected, load]);
    // The run ends once the last fault converged (or the bound passed), and not before its N minutes.
    await sleep(Math.max(0, start + durationMs - Date.now()));
    await until(
      () => converged(history),
      bounds.convergeMs,
      () => '',
    ).catch(() => undefined);
    const endT = now();
    clearInterval(rssTimer);
    const verdict = judge(history, MEMBERS, OBJECTS_PER_CLUSTER, endT, bounds);
    const input: ReportInput = {
      seed: o.seed,
      minutes: o.minutes,
      meanGapMs,
      startedAt,
      endT,
      bounds,
      history,
      verdict,
      setup: `stack: hub + ${MEMBERS.length} members and a spare server for profile-moved (kube-apiservers, one etcd), ${CONTROLLERS.length} controller replicas over 2 shards, mco flux (rendering mode, and input providers for ${OPERATOR_PLACEMENTS.join(', ')}), Flux source-controller + kustomize-controller + flux-operator (a ResourceSet per operator placement); mco argocd-plugin, mco argocd-sync (refresh, cluster Secrets), Argo CD argocd-applicationset-controller, mco configsync; placements ${PLACEMENTS.join(', ')} (${OBJECTS_PER_CLUSTER} workload objects per cluster; ${SCALING_PLACEMENTS.join(', ')} autoscaling on the kubernetes signal source, its load written as HPA status on the members), ${ARGO_PLACEMENTS.join(', ')} also by Argo CD ApplicationSets, ${CONFIGSYNC_PLACEMENTS.join(', ')} also by mco configsync (RepoSyncs)`,
      crashes: Object.fromEntries(stack.processes.map((p) => [p.name, p.crashes])),
      ...(o.broken ? { broken: o.broken } : {}),
    };
    return { report: textReport(input), html: htmlReport(input), verdict, history };
  } finally {
    clearInterval(rssTimer);
    for (const r of reflectors) r.stop();
    await stack.stop();
  }
}

const converged = (history: readonly SoakEvent[]) => isConverged(stateAfter(history), MEMBERS, OBJECTS_PER_CLUSTER);

async function until(check: () => boolean, timeoutMs: number, why: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(why());
    await sleep(500);
  }
}

/** VmRSS of a process in kB, from /proc. */
function rssOf(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}
