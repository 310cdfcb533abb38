// A small recorded soak history for the report's tests: one placement, two
// overlapping member outages and a controller kill that reported an error, a deletion while the
// placement lists the cluster (an (a) violation), and RSS samples of three
// processes, one restarted and one with a name that needs escaping.
import { DEFAULT_BOUNDS, type SoakEvent } from '../soak/history.js';
import { judge, type ReportInput, type Verdict } from '../soak/report.js';

export const HOSTILE_PROCESS = '<script>alert(1)</script>';
export const HOSTILE_OBJECT = '<img src=x onerror=alert(1)>';
export const MEMBERS = ['east', 'west'];

const both = [
  { member: 'east', state: 'ACTIVE' },
  { member: 'west', state: 'ACTIVE' },
];

export function recordedHistory(): SoakEvent[] {
  const history: SoakEvent[] = [
    // The baseline, recorded before the clock started.
    { t: -1_000, type: 'intent', placement: 'p1', members: ['east', 'west'] },
    { t: -1_000, type: 'status', placement: 'p1', clusters: both },
    { t: 10_000, type: 'fault', id: 1, kind: 'member-down', target: 'east', phase: 'start' },
    // From 12 s to 42 s p1 has one ACTIVE cluster of the two it wants: 30 s, within (b)'s bound.
    {
      t: 12_000,
      type: 'status',
      placement: 'p1',
      clusters: [{ member: 'east', state: 'UNHEALTHY', reason: 'ControlPlaneUnhealthy' }, both[1]!],
    },
    { t: 20_000, type: 'fault', id: 2, kind: 'member-down', target: 'west', phase: 'start' },
    { t: 40_000, type: 'fault', id: 1, kind: 'member-down', target: 'east', phase: 'end' },
    { t: 42_000, type: 'status', placement: 'p1', clusters: both },
    { t: 50_000, type: 'fault', id: 2, kind: 'member-down', target: 'west', phase: 'end' },
    { t: 60_000, type: 'fault', id: 3, kind: 'controller-kill', target: 'controller-0', phase: 'start' },
    {
      t: 65_000,
      type: 'fault',
      id: 3,
      kind: 'controller-kill',
      target: 'controller-0',
      phase: 'end',
      error: 'controller-0 did not start',
    },
    // Deleted while p1 lists east.
    {
      t: 70_000,
      type: 'object',
      member: 'east',
      placement: 'p1',
      kind: 'Deployment',
      name: HOSTILE_OBJECT,
      present: false,
    },
  ];
  for (let t = 0; t <= 100_000; t += 10_000) {
    // controller-0 restarted at 60 s (a new pid); mco-flux grows 1 MB every 10 s from 100 000 kB.
    history.push({
      t,
      type: 'rss',
      process: 'controller-0',
      pid: t < 60_000 ? 100 : 200,
      kb: t < 60_000 ? 80_000 : 60_000,
    });
    history.push({ t, type: 'rss', process: 'mco-flux', pid: 300, kb: 100_000 + t / 10 });
    history.push({ t, type: 'rss', process: HOSTILE_PROCESS, pid: 400, kb: 50_000 });
  }
  return history.sort((a, b) => a.t - b.t);
}

/** The report's input for the recorded history judged over `endT` (default 100 s), or with `verdict` as given. */
export function recordedRun(endT = 100_000, verdict?: Verdict): ReportInput {
  const history = recordedHistory();
  return {
    seed: 42,
    minutes: Math.ceil(endT / 60_000),
    meanGapMs: 15_000,
    startedAt: '2026-01-01T00:00:00.000Z',
    endT,
    bounds: DEFAULT_BOUNDS,
    history,
    verdict: verdict ?? judge(history, MEMBERS, 3, endT, DEFAULT_BOUNDS),
    setup: 'stack: a recorded history',
    crashes: { 'controller-0': 1, 'mco-flux': 0 },
  };
}
