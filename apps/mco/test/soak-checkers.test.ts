// The soak's own tests (docs/reliability.md): its fault schedule is a function
// of the seed, and its invariant checkers, fed recorded histories, flag a
// forbidden deletion, a lasting shortfall, a leftover and a slow convergence,
// and accept the legitimate versions of each, on the Flux path, the Argo CD
// path (Applications and cluster Secrets) and the Config Sync path (RepoSyncs);
// and an autoscaling placement's moves on its signals are counted.
import { describe, expect, it } from 'vitest';
import {
  checkDeletions,
  checkLeftovers,
  checkMinActive,
  checkRss,
  convergence,
  DEFAULT_BOUNDS,
  judgeDeletions,
  scalingMoves,
  stateAfter,
  strandedObjects,
  type SoakEvent,
} from '../soak/history.js';
import {
  DEFAULT_MEAN_GAP_MS,
  FAULT_KINDS,
  faultSchedule,
  slotOf,
  type FaultKind,
  type ScheduleOptions,
} from '../soak/schedule.js';

const SCHEDULE: ScheduleOptions = {
  seed: 7,
  durationMs: 60 * 60_000,
  meanGapMs: DEFAULT_MEAN_GAP_MS,
  controllers: ['controller-0', 'controller-1'],
  members: ['east', 'west', 'north'],
  placements: ['p1', 'p2', 'p3'],
  quietTailMs: 60_000,
};

describe('the fault schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    expect(faultSchedule(SCHEDULE)).toEqual(faultSchedule({ ...SCHEDULE }));
    expect(faultSchedule({ ...SCHEDULE, seed: 8 })).not.toEqual(faultSchedule(SCHEDULE));
  });

  it('draws every kind over an hour, at least 200 faults, ordered, within the run, never two in one slot at once', () => {
    const faults = faultSchedule(SCHEDULE);
    expect(faults.length).toBeGreaterThanOrEqual(200);
    for (const kind of FAULT_KINDS) expect(faults.filter((f) => f.kind === kind).length).toBeGreaterThanOrEqual(10);
    expect(faults.map((f) => f.atMs)).toEqual([...faults.map((f) => f.atMs)].sort((a, b) => a - b));
    expect(faults.every((f) => f.atMs <= SCHEDULE.durationMs - SCHEDULE.quietTailMs)).toBe(true);
    const lastEnd = new Map<string, number>();
    for (const f of faults) {
      expect(f.atMs).toBeGreaterThan(lastEnd.get(slotOf(f)) ?? -1);
      lastEnd.set(slotOf(f), f.atMs + f.durationMs);
    }
    const down = faults.filter((f) => f.kind === 'member-down').map((f) => f.durationMs);
    expect(Math.min(...down)).toBeGreaterThanOrEqual(10_000);
    expect(Math.max(...down)).toBeLessThanOrEqual(120_000);
    // 40% of three ClusterProfiles: two of them.
    expect(faults.filter((f) => f.kind === 'profiles-deleted').every((f) => f.target.split(',').length === 2)).toBe(
      true,
    );
  });

  it('draws every kind at least 10 times in an hour at the default rate for each of seeds 1-20', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const faults = faultSchedule({ ...SCHEDULE, seed });
      const fewest = Math.min(...FAULT_KINDS.map((kind) => faults.filter((f) => f.kind === kind).length));
      expect({ seed, fewest: fewest >= 10 }).toEqual({ seed, fewest: true });
    }
  });

  it('kills each engine it is given, each in a slot of its own; without engines the target is empty', () => {
    const engines = ['kustomize-controller', 'flux-operator'];
    const faults = faultSchedule({ ...SCHEDULE, engines });
    const killed = faults.filter((f) => f.kind === 'engine-kill');
    expect(new Set(killed.map((f) => f.target))).toEqual(new Set(engines));
    // One engine's kill does not keep the other's slot busy.
    expect(new Set(killed.map(slotOf)).size).toBe(2);
    expect(
      faultSchedule(SCHEDULE)
        .filter((f) => f.kind === 'engine-kill')
        .every((f) => f.target === ''),
    ).toBe(true);
  });
});

const status = (
  t: number,
  placement: string,
  clusters: [string, string, string?][],
  removedAt?: number,
): SoakEvent => ({
  t,
  type: 'status',
  placement,
  clusters: clusters.map(([member, state, reason]) => ({ member, state, ...(reason ? { reason } : {}) })),
  ...(removedAt === undefined ? {} : { removedAt }),
});
const object = (t: number, member: string, present: boolean, kind = 'Deployment', gap = false): SoakEvent => ({
  t,
  type: 'object',
  member,
  placement: 'p1',
  kind,
  name: 'p1-web',
  present,
  ...(gap ? { gap } : {}),
});
const intent = (t: number, members: string[]): SoakEvent => ({ t, type: 'intent', placement: 'p1', members });
const fault = (
  t: number,
  id: number,
  phase: 'start' | 'end',
  kind: FaultKind = 'member-down',
  target = 'west',
): SoakEvent => ({
  t,
  type: 'fault',
  id,
  kind,
  target,
  phase,
});

/** p1 on east and west, delivered: intent, status, a Kustomization and one object per cluster. */
const BASE: SoakEvent[] = [
  intent(0, ['east', 'west']),
  status(100, 'p1', [
    ['east', 'ACTIVE', 'Added'],
    ['west', 'ACTIVE', 'Added'],
  ]),
  { t: 200, type: 'delivery', placement: 'p1', member: 'east', name: 'p1-east', present: true },
  { t: 200, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: true },
  object(300, 'east', true),
  object(300, 'west', true),
];

describe('invariant (a): no deletion on doubt', () => {
  it('accepts a deletion after the status removed the cluster because it left the rules', () => {
    const history = [
      ...BASE,
      intent(1_000, ['east']),
      status(1_500, 'p1', [['east', 'ACTIVE', 'Added']], 1_400),
      { t: 1_600, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
      object(1_800, 'west', false),
    ];
    expect(checkDeletions(history)).toEqual([]);
  });

  it('flags a deletion while the placement lists the cluster (an adapter deleting on an empty list or on doubt)', () => {
    const history = [...BASE, fault(1_000, 0, 'start'), fault(20_000, 0, 'end'), object(21_000, 'west', false)];
    expect(checkDeletions(history)).toEqual([
      {
        invariant: 'a',
        t: 21_000,
        message: 'Deployment p1-web of p1 on west deleted while the placement lists west',
      },
    ]);
  });

  it('flags a deletion found by a re-list after a watch gap, naming it so', () => {
    const history = [...BASE, object(5_000, 'west', false, 'Deployment', true)];
    expect(checkDeletions(history)[0]?.message).toContain('(seen by a re-list after a watch gap)');
  });

  it('flags a deletion after a removal on doubt (a ClusterProfile missing, within its grace)', () => {
    const history = [
      ...BASE,
      status(1_000, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'EVICTING', 'ClusterProfileMissing'],
      ]),
      status(2_000, 'p1', [['east', 'ACTIVE', 'Added']], 2_000),
      object(2_500, 'west', false),
    ];
    expect(checkDeletions(history).map((v) => v.message)).toEqual([
      'Deployment p1-web of p1 on west deleted after west was removed on doubt (EVICTING, ClusterProfileMissing)',
    ]);
  });

  it('accepts a deletion after a removal of a cluster in doubt once the rules no longer list it', () => {
    const history = [
      ...BASE,
      status(1_000, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'EVICTING', 'ClusterProfileMissing'],
      ]),
      intent(1_500, ['east']),
      status(2_000, 'p1', [['east', 'ACTIVE', 'Added']], 2_000),
      object(2_500, 'west', false),
    ];
    expect(checkDeletions(history)).toEqual([]);
  });

  it('flags a deletion that came before the removal the status reports later', () => {
    const history = [...BASE, object(2_000, 'west', false), status(4_000, 'p1', [['east', 'ACTIVE', 'Added']], 3_500)];
    expect(checkDeletions(history).map((v) => v.message)).toEqual([
      'Deployment p1-web of p1 on west deleted before the status removed west',
    ]);
  });
});

describe("invariant (a): an earlier removal's prune landing after the cluster was listed again", () => {
  // west leaves p1's rules; its Kustomization's deletion is asked for while west is down, so Flux's
  // prune waits; west is listed again meanwhile; when west returns, the prune lands, the old
  // Kustomization goes, and the new one applies the workload again.
  const withUid = (e: SoakEvent, uid: string): SoakEvent => ({ ...e, uid }) as SoakEvent;
  const kustomization = (t: number, present: boolean, gone = false): SoakEvent => ({
    t,
    type: 'delivery',
    placement: 'p1',
    member: 'west',
    name: 'p1-west',
    present,
    ...(gone ? { gone } : {}),
  });
  const episode = (
    o: { goneAt?: number; removedAs?: [string, string, string?]; bornAt?: number; uid?: boolean } = {},
  ) => [
    intent(0, ['east', 'west']),
    status(100, 'p1', [['east', 'ACTIVE', 'Added'], o.removedAs ?? ['west', 'ACTIVE', 'Added']]),
    kustomization(200, true),
    withUid(object(300, 'east', true), 'e1'),
    ...(o.uid === false
      ? [object(o.bornAt ?? 300, 'west', true)]
      : [withUid(object(o.bornAt ?? 300, 'west', true), 'w1')]),
    fault(900, 0, 'start'),
    ...(o.removedAs ? [] : [intent(1_000, ['east'])]),
    status(1_100, 'p1', [['east', 'ACTIVE', 'Added']], 1_100),
    kustomization(1_200, false),
    intent(5_000, ['east', 'west']),
    status(5_100, 'p1', [
      ['east', 'ACTIVE', 'Added'],
      ['west', 'ACTIVE', 'Added'],
    ]),
    ...(o.goneAt !== undefined && o.goneAt < 20_000 ? [kustomization(o.goneAt, false, true)] : []),
    fault(19_000, 0, 'end'),
    o.uid === false ? object(20_000, 'west', false) : withUid(object(20_000, 'west', false), 'w1'),
    ...(o.goneAt === undefined || o.goneAt >= 20_000 ? [kustomization(o.goneAt ?? 20_100, false, true)] : []),
    kustomization(20_200, true),
    withUid(object(21_000, 'west', true), 'w2'),
  ];

  it('accepts it, and names it, while the old Kustomization still finalizes', () => {
    const judged = judgeDeletions(episode().sort((a, b) => a.t - b.t));
    expect(judged.violations).toEqual([]);
    expect(judged.latePrunes.map((p) => p.message)).toEqual([
      'Deployment p1-web of p1 on west deleted while listed again: the prune of Kustomization p1-west, whose deletion the removal of west at 1.1 s asked for, still running (it went at 20.1 s)',
    ]);
  });

  it('accepts it when the cluster is removed again within seconds after the prune landed', () => {
    // Seed 98's 3-minute run: p1 left east 6 s after the old prune deleted east's Deployment.
    const history = [
      ...episode(),
      intent(25_000, ['east']),
      status(25_100, 'p1', [['east', 'ACTIVE', 'Added']], 25_100),
    ];
    const judged = judgeDeletions(history.sort((a, b) => a.t - b.t));
    expect(judged.violations).toEqual([]);
    expect(judged.latePrunes.map((p) => p.message)).toEqual([
      'Deployment p1-web of p1 on west deleted while listed again: the prune of Kustomization p1-west, whose deletion the removal of west at 1.1 s asked for, still running (it went at 20.1 s)',
    ]);
  });

  it('accepts it when the placement changed again without the cluster before listing it again', () => {
    // Seed 2026's 60-minute run: p3 left east (down), its status changed twice more without east
    // (more than 10 s after the removal), then listed east again; the prune landed when east returned.
    const history = [
      ...episode(),
      status(3_000, 'p1', [['east', 'ACTIVE', 'EligibleAgain']], 1_100),
      status(4_000, 'p1', [['east', 'ACTIVE', 'Added']], 1_100),
    ].map((e) => (e.t >= 3_000 && e.t < 21_500 ? { ...e, t: e.t + 12_000 } : e));
    const judged = judgeDeletions(history.sort((a, b) => a.t - b.t));
    expect(judged.violations).toEqual([]);
    expect(judged.latePrunes.map((p) => p.message)).toEqual([
      'Deployment p1-web of p1 on west deleted while listed again: the prune of Kustomization p1-west, whose deletion the removal of west at 1.1 s asked for, still running (it went at 32.1 s)',
    ]);
  });

  it('flags it when that Kustomization had gone before the deletion (no prune was running)', () => {
    const judged = judgeDeletions(episode({ goneAt: 6_000 }).sort((a, b) => a.t - b.t));
    expect(judged.violations.map((v) => v.message)).toEqual([
      'Deployment p1-web of p1 on west deleted while the placement lists west',
    ]);
    expect(judged.latePrunes).toEqual([]);
  });

  it('flags it when the removal was on doubt, or the object was created after the removal, or has no uid', () => {
    for (const o of [
      { removedAs: ['west', 'EVICTING', 'ClusterProfileMissing'] as [string, string, string] },
      { bornAt: 1_150 },
      { uid: false },
    ]) {
      const judged = judgeDeletions(episode(o).sort((a, b) => a.t - b.t));
      const violations = judged.violations.filter((v) => v.message.startsWith('Deployment'));
      expect({ o, violations: violations.length, excused: judged.latePrunes.length }).toEqual({
        o,
        violations: 1,
        excused: 0,
      });
    }
  });
});

describe('invariant (b): the minimum of ACTIVE clusters', () => {
  it('allows a shortfall within the bound and reports the exempted share', () => {
    const history = [
      ...BASE,
      intent(10_000, ['east', 'west', 'north']),
      status(12_000, 'p1', [
        ['east', 'ACTIVE'],
        ['west', 'ACTIVE'],
        ['north', 'ACTIVE'],
      ]),
    ];
    const { violations, exemptedShare } = checkMinActive(history, 100_000, DEFAULT_BOUNDS);
    expect(violations).toEqual([]);
    expect(exemptedShare).toBeCloseTo(2_000 / 100_000);
  });

  it('flags a shortfall longer than the bound, and extends the bound by a controller outage', () => {
    const short = [...BASE, intent(10_000, ['east', 'west', 'north'])];
    expect(checkMinActive(short, 100_000, DEFAULT_BOUNDS).violations.map((v) => v.message)).toEqual([
      'p1 below its minimum of ACTIVE clusters for 90 s (allowed 30 s)',
    ]);
    const outage = [
      ...short,
      fault(10_000, 0, 'start', 'controller-kill', 'controller-0'),
      fault(80_000, 0, 'end', 'controller-kill', 'controller-0'),
    ];
    expect(checkMinActive(outage, 100_000, DEFAULT_BOUNDS).violations).toEqual([]);
  });

  it("extends an autoscaling placement's bound by a moved ClusterProfile (its cluster has no signal), not a cluster-list placement's", () => {
    const moved = [fault(5_000, 0, 'start', 'profile-moved', 'east'), fault(75_000, 0, 'end', 'profile-moved', 'east')];
    const listed = [...BASE, intent(10_000, ['east', 'west', 'north']), ...moved].sort((a, b) => a.t - b.t);
    expect(checkMinActive(listed, 100_000, DEFAULT_BOUNDS).violations.map((v) => v.message)).toEqual([
      'p1 below its minimum of ACTIVE clusters for 90 s (allowed 30 s)',
    ]);
    const scaling = listed.map((e) => (e.type === 'intent' ? { ...e, scaling: true } : e));
    expect(checkMinActive(scaling, 100_000, DEFAULT_BOUNDS).violations).toEqual([]);
    // Past the profile's return plus the bound, the shortfall is a violation again.
    expect(checkMinActive(scaling, 200_000, DEFAULT_BOUNDS).violations.map((v) => v.message)).toEqual([
      'p1 below its minimum of ACTIVE clusters for 190 s (allowed 95 s)',
    ]);
  });
});

const repoSync = (t: number, member: string, present: boolean): SoakEvent => ({
  t,
  type: 'delivery',
  kind: 'RepoSync',
  placement: 'p1',
  member,
  name: 'p1',
  present,
});
/** BASE delivered by Config Sync too: a RepoSync on each cluster. */
const SYNCED: SoakEvent[] = [
  { ...(BASE[0] as Extract<SoakEvent, { type: 'intent' }>), deliveries: ['Kustomization', 'RepoSync'] },
  ...BASE.slice(1),
  repoSync(200, 'east', true),
  repoSync(200, 'west', true),
];

describe('invariant (d): nothing left behind', () => {
  const left = [
    ...BASE,
    intent(1_000, ['east']),
    status(1_500, 'p1', [['east', 'ACTIVE', 'Added']], 1_400),
    { t: 1_600, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
  ];

  it('flags an object still on a cluster past the bound after it left', () => {
    expect(checkLeftovers(left, 300_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'Deployment/p1-web of p1 still for west 120 s after it left',
    ]);
  });

  it('accepts it when removed within the bound, or when the member was down meanwhile', () => {
    expect(checkLeftovers([...left, object(60_000, 'west', false)], 300_000, DEFAULT_BOUNDS, 1)).toEqual([]);
    const down = [...left, fault(1_000, 0, 'start'), fault(100_000, 0, 'end'), object(200_000, 'west', false)];
    expect(checkLeftovers(down, 300_000, DEFAULT_BOUNDS, 1)).toEqual([]);
  });
});

describe('invariant (c): convergence after a fault', () => {
  it('measures the time from the end of a fault to delivery matching status', () => {
    const history = [
      ...BASE,
      fault(1_000, 0, 'start', 'engine-kill', ''),
      intent(1_500, ['east']),
      status(2_000, 'p1', [['east', 'ACTIVE', 'Added']], 2_000),
      fault(3_000, 0, 'end', 'engine-kill', ''),
      { t: 4_000, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
      object(7_000, 'west', false),
    ];
    const { convergences, violations } = convergence(history, ['east', 'west'], 1, 10_000, DEFAULT_BOUNDS);
    expect(convergences).toEqual([{ id: 0, kind: 'engine-kill', target: '', end: 3_000, ms: 4_000 }]);
    expect(violations).toEqual([]);
  });

  it('flags a fault after which delivery never matches status within the bound', () => {
    const history = [...BASE, intent(500, ['east']), fault(1_000, 0, 'start'), fault(2_000, 0, 'end')];
    const { convergences, violations } = convergence(history, ['east', 'west'], 1, 200_000, DEFAULT_BOUNDS);
    expect(convergences[0]!.ms).toBeUndefined();
    expect(violations.map((v) => v.message)).toEqual([
      'no convergence within 120 s after member-down west (fault 0) and its busy period ended',
    ]);
  });

  it('runs the bound from the end of the faults overlapping the one that ended', () => {
    const history = [
      ...BASE,
      intent(500, ['east']),
      fault(1_000, 0, 'start'),
      fault(1_500, 1, 'start', 'engine-kill', ''),
      fault(2_000, 0, 'end'),
      fault(100_000, 1, 'end', 'engine-kill', ''),
      status(150_000, 'p1', [['east', 'ACTIVE', 'Added']], 150_000),
      { t: 150_000, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
      object(150_000, 'west', false),
    ];
    const { convergences, violations } = convergence(history, ['east', 'west'], 1, 200_000, DEFAULT_BOUNDS);
    expect(convergences.map((c) => c.ms)).toEqual([148_000, 50_000]);
    expect(violations).toEqual([]);
  });
});

describe('invariant (c): a fault starting before the state converged extends the busy period', () => {
  // Recorded in a short run: faults ended at 2 s, another started at 50 s before the state had converged,
  // and convergence came 30 s after that one ended, 180 s after the first.
  const history = [
    ...BASE,
    intent(500, ['east']),
    fault(1_000, 0, 'start', 'hub-restart', ''),
    fault(2_000, 0, 'end', 'hub-restart', ''),
    fault(50_000, 1, 'start'),
    fault(152_000, 1, 'end'),
    status(180_000, 'p1', [['east', 'ACTIVE', 'Added']], 180_000),
    { t: 181_000, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
    object(182_000, 'west', false),
  ];

  it('accepts convergence within the bound after the later fault ended', () => {
    const { convergences, violations } = convergence(history, ['east', 'west'], 1, 300_000, DEFAULT_BOUNDS);
    expect(convergences.map((c) => c.ms)).toEqual([180_000, 30_000]);
    expect(violations).toEqual([]);
  });

  it('does not extend it by a fault starting after the state converged', () => {
    const converged = [...BASE, fault(1_000, 0, 'start', 'hub-restart', ''), fault(2_000, 0, 'end', 'hub-restart', '')];
    const later = [...converged, fault(50_000, 1, 'start'), intent(51_000, ['east']), fault(60_000, 1, 'end')];
    const { violations } = convergence(later, ['east', 'west'], 1, 300_000, DEFAULT_BOUNDS);
    expect(violations.map((v) => v.message)).toEqual([
      'no convergence within 120 s after member-down west (fault 1) and its busy period ended',
    ]);
  });
});

describe('invariant (e): RSS growth', () => {
  const rss = (t: number, kb: number, pid = 1): SoakEvent => ({ t, type: 'rss', process: 'controller-0', pid, kb });
  const HOUR = 60 * 60_000;

  it('flags growth over 10% in the last 30 minutes of an hour, not in a shorter run, not across a restart', () => {
    const growing = [rss(0, 100), rss(HOUR / 2, 100), rss(HOUR, 115)];
    expect(checkRss(growing, HOUR, DEFAULT_BOUNDS).violations.map((v) => v.message)).toEqual([
      'controller-0 RSS grew 15.0% over the last 30 min',
    ]);
    expect(checkRss(growing, HOUR - 1, DEFAULT_BOUNDS).violations).toEqual([]);
    const restarted = [rss(0, 100), rss(HOUR / 2, 100), rss(HOUR / 2 + 1, 80, 2), rss(HOUR, 115, 2)];
    const { figures, violations } = checkRss(restarted, HOUR, DEFAULT_BOUNDS);
    expect(violations).toEqual([]);
    expect(figures).toEqual([{ process: 'controller-0', samples: 4, firstKb: 100, lastKb: 115, maxKb: 115 }]);
  });
});

describe('the Argo CD path: Applications and cluster Secrets under (a), (c) and (d)', () => {
  type Kind = 'Kustomization' | 'Application' | 'Secret';
  const hub = (t: number, kind: Kind, member: string, present: boolean, gap = false): SoakEvent => ({
    t,
    type: 'delivery',
    kind,
    placement: 'p1',
    member,
    name: kind === 'Secret' ? `fleet.${member}` : `${member}-p1`,
    present,
    ...(gap ? { gap } : {}),
  });
  const ARGO = ['Kustomization', 'Application', 'Secret'] as const;
  const argoIntent = (t: number, members: string[]): SoakEvent => ({
    t,
    type: 'intent',
    placement: 'p1',
    members,
    deliveries: ARGO,
  });
  /** p1 on east and west, delivered by Flux and Argo CD; north has a ClusterProfile, so its cluster Secret. */
  const ARGO_BASE: SoakEvent[] = [
    argoIntent(0, ['east', 'west']),
    status(100, 'p1', [
      ['east', 'ACTIVE', 'Added'],
      ['west', 'ACTIVE', 'Added'],
    ]),
    ...['east', 'west'].flatMap((m) => [hub(200, 'Kustomization', m, true), hub(200, 'Application', m, true)]),
    ...['east', 'west', 'north'].map((m) => hub(200, 'Secret', m, true)),
    object(300, 'east', true),
    object(300, 'west', true),
  ];
  const members = ['east', 'west', 'north'];
  const westLeaves = [argoIntent(1_000, ['east']), status(1_500, 'p1', [['east', 'ACTIVE', 'Added']], 1_400)];

  it('(a) flags an Application deleted while the placement lists its cluster (the plugin killed, say)', () => {
    const history = [
      ...ARGO_BASE,
      fault(1_000, 0, 'start', 'plugin-kill', ''),
      hub(3_000, 'Application', 'west', false, true),
    ];
    expect(checkDeletions(history).map((v) => v.message)).toEqual([
      'Application west-p1 of p1 on west (seen by a re-list after a watch gap) deleted while the placement lists west',
    ]);
  });

  it('(a) flags a cluster Secret deleted after its cluster was removed on doubt, accepts one after it left the rules', () => {
    const doubt = [
      ...ARGO_BASE,
      { t: 900, type: 'profile', member: 'west', present: false } as SoakEvent,
      status(1_000, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'EVICTING', 'ClusterProfileMissing'],
      ]),
      status(2_000, 'p1', [['east', 'ACTIVE', 'Added']], 2_000),
      hub(2_500, 'Secret', 'west', false),
    ];
    expect(checkDeletions(doubt).map((v) => v.message)).toEqual([
      'Secret fleet.west of p1 on west deleted after west was removed on doubt (EVICTING, ClusterProfileMissing)',
    ]);
    const left = [
      ...ARGO_BASE,
      ...westLeaves,
      hub(1_600, 'Application', 'west', false),
      hub(1_700, 'Secret', 'west', false),
    ];
    expect(checkDeletions(left)).toEqual([]);
  });

  it('(c) converges only once each listed cluster has its Application and Secret and no other cluster an Application', () => {
    const afterFault = [...ARGO_BASE, fault(1_000, 0, 'start', 'appset-kill', ''), ...westLeaves];
    const end = fault(2_000, 0, 'end', 'appset-kill', '');
    // Flux removed west's Kustomization and workload; Argo CD's Application of west stays until 5 s.
    const flux = [hub(3_000, 'Kustomization', 'west', false), object(3_000, 'west', false)];
    const history = [...afterFault, end, ...flux, hub(5_000, 'Application', 'west', false)];
    expect(convergence(history, members, 1, 10_000, DEFAULT_BOUNDS).convergences.map((c) => c.ms)).toEqual([3_000]);
    // Never removed: a violation.
    const stuck = [...afterFault, end, ...flux];
    expect(convergence(stuck, members, 1, 200_000, DEFAULT_BOUNDS).violations.map((v) => v.invariant)).toEqual(['c']);
    // A listed cluster without its cluster Secret is not converged.
    const noSecret = [...ARGO_BASE, fault(1_000, 0, 'start', 'plugin-kill', ''), hub(1_500, 'Secret', 'east', false)];
    const ended = [...noSecret, fault(2_000, 0, 'end', 'plugin-kill', '')];
    expect(convergence(ended, members, 1, 200_000, DEFAULT_BOUNDS).violations.map((v) => v.invariant)).toEqual(['c']);
  });

  it("(c) does not owe a cluster Secret's removal: kept for a grace period after its profile went", () => {
    const history = [
      ...ARGO_BASE,
      fault(1_000, 0, 'start', 'profiles-deleted', 'north'),
      { t: 1_100, type: 'profile', member: 'north', present: false } as SoakEvent,
      fault(2_000, 0, 'end', 'profiles-deleted', 'north'),
    ];
    expect(convergence(history, members, 1, 10_000, DEFAULT_BOUNDS).convergences.map((c) => c.ms)).toEqual([0]);
  });

  it('(d) flags an Application left past the bound after its cluster left, accepts the cluster Secret kept', () => {
    const history = [
      ...ARGO_BASE,
      ...westLeaves,
      hub(2_000, 'Kustomization', 'west', false),
      object(2_000, 'west', false),
    ];
    expect(checkLeftovers(history, 300_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'Application of p1 still for west 120 s after it left',
    ]);
    expect(checkLeftovers([...history, hub(60_000, 'Application', 'west', false)], 300_000, DEFAULT_BOUNDS, 1)).toEqual(
      [],
    );
  });
});

describe('the Config Sync path: RepoSyncs on the members under (a), (c) and (d)', () => {
  const westLeaves: SoakEvent[] = [
    { t: 1_000, type: 'intent', placement: 'p1', members: ['east'], deliveries: ['Kustomization', 'RepoSync'] },
    status(1_500, 'p1', [['east', 'ACTIVE', 'Added']], 1_400),
    { t: 1_600, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false },
    object(1_700, 'west', false),
  ];

  it('(a) flags a RepoSync deleted from a member that came back from an outage while listed', () => {
    const history = [...SYNCED, fault(1_000, 0, 'start'), fault(20_000, 0, 'end'), repoSync(21_000, 'west', false)];
    expect(checkDeletions(history).map((v) => v.message)).toEqual([
      'RepoSync p1 of p1 on west deleted while the placement lists west',
    ]);
    expect(checkDeletions([...SYNCED, ...westLeaves, repoSync(2_000, 'west', false)])).toEqual([]);
  });

  it('(c) and (d) wait for the RepoSync of a cluster that left to be removed', () => {
    const stuck = [...SYNCED, fault(500, 0, 'start', 'configsync-kill', ''), ...westLeaves];
    const ended = [...stuck, fault(2_000, 0, 'end', 'configsync-kill', '')];
    expect(convergence(ended, ['east', 'west'], 1, 200_000, DEFAULT_BOUNDS).violations.map((v) => v.invariant)).toEqual(
      ['c'],
    );
    expect(checkLeftovers(ended, 300_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'RepoSync of p1 still for west 120 s after it left',
    ]);
    const removed = [...ended, repoSync(9_000, 'west', false)];
    expect(convergence(removed, ['east', 'west'], 1, 200_000, DEFAULT_BOUNDS).convergences.map((c) => c.ms)).toEqual([
      7_000,
    ]);
    expect(checkLeftovers(removed, 300_000, DEFAULT_BOUNDS, 1)).toEqual([]);
  });
});

describe("a ClusterProfile moved to another server: its old server's objects under (c) and (d)", () => {
  // west's profile names another server from 1 s to 60 s; west leaves p1 meanwhile. Delivery removes
  // the Kustomization (its prune runs on the new server), and the old server keeps what it had.
  const movedAndLeft: SoakEvent[] = [
    ...SYNCED,
    fault(1_000, 0, 'start', 'profile-moved', 'west'),
    { t: 2_000, type: 'intent', placement: 'p1', members: ['east'], deliveries: ['Kustomization', 'RepoSync'] },
    status(2_500, 'p1', [['east', 'ACTIVE', 'Added']], 2_400),
    { t: 2_600, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false },
    fault(60_000, 0, 'end', 'profile-moved', 'west'),
  ];

  it('exempts them from (d) and (c), and reports them', () => {
    expect(checkLeftovers(movedAndLeft, 300_000, DEFAULT_BOUNDS, 1)).toEqual([]);
    expect(convergence(movedAndLeft, ['east', 'west'], 1, 300_000, DEFAULT_BOUNDS).convergences).toEqual([
      { id: 0, kind: 'profile-moved', target: 'west', end: 60_000, ms: 0 },
    ]);
    expect(strandedObjects(stateAfter(movedAndLeft))).toEqual(
      new Map([['p1|west', ['Deployment/p1-web', 'RepoSync']]]),
    );
  });

  it('still owes the removal when the cluster left with no move (the same history without the fault)', () => {
    const unmoved = movedAndLeft.filter((e) => e.type !== 'fault');
    expect(checkLeftovers(unmoved, 300_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'Deployment/p1-web, RepoSync of p1 still for west 120 s after it left',
    ]);
  });

  it('owes them again once the placement lists the cluster after the move, and they are its objects then', () => {
    const back = [
      ...movedAndLeft,
      status(70_000, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'ACTIVE', 'Added'],
      ]),
      { t: 70_100, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: true } as SoakEvent,
      status(80_000, 'p1', [['east', 'ACTIVE', 'Added']], 80_000),
      { t: 80_100, type: 'delivery', placement: 'p1', member: 'west', name: 'p1-west', present: false } as SoakEvent,
    ];
    expect(strandedObjects(stateAfter(back))).toEqual(new Map());
    expect(checkLeftovers(back, 400_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'Deployment/p1-web, RepoSync of p1 still for west 120 s after it left',
    ]);
  });

  it('does not exempt a cluster that is still listed when the profile comes back', () => {
    const stayed: SoakEvent[] = [
      ...SYNCED,
      fault(1_000, 0, 'start', 'profile-moved', 'west'),
      fault(60_000, 0, 'end', 'profile-moved', 'west'),
      { t: 61_000, type: 'intent', placement: 'p1', members: ['east'], deliveries: ['Kustomization', 'RepoSync'] },
      status(62_000, 'p1', [['east', 'ACTIVE', 'Added']], 62_000),
    ];
    expect(strandedObjects(stateAfter(stayed))).toEqual(new Map());
    expect(checkLeftovers(stayed, 400_000, DEFAULT_BOUNDS, 1).map((v) => v.message)).toEqual([
      'Deployment/p1-web, Kustomization, RepoSync of p1 still for west 120 s after it left',
    ]);
  });
});

describe("an autoscaling placement's moves on its signals", () => {
  it('counts clusters added (P1) and moved to SCALING_IN for scale-in (P2), not a reactivation, a standby or a removal', () => {
    const history: SoakEvent[] = [
      { t: 0, type: 'intent', placement: 'p1', members: ['east'], scaling: true },
      status(100, 'p1', [['east', 'ACTIVE', 'Added']]),
      status(200, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'ACTIVE', 'Added'],
      ]),
      status(300, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'SCALING_IN', 'ScaleIn'],
      ]),
      // The same SCALING_IN in the next status is not a second scale-in.
      status(350, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'SCALING_IN', 'ScaleIn'],
      ]),
      status(400, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'ACTIVE', 'Reactivated'],
      ]),
      status(500, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['west', 'SCALING_IN', 'WarmStandby'],
      ]),
      status(600, 'p1', [['east', 'ACTIVE', 'Added']]),
      status(700, 'p1', [
        ['east', 'ACTIVE', 'Added'],
        ['north', 'ACTIVE', 'Added'],
      ]),
      status(800, 'p2', [['west', 'ACTIVE', 'Added']]),
    ];
    expect(scalingMoves(history, 'p1')).toEqual({ outs: 2, ins: 1 });
    // The first status lists the placement's first clusters: no scale-out.
    expect(scalingMoves(history, 'p2')).toEqual({ outs: 0, ins: 0 });
  });
});
