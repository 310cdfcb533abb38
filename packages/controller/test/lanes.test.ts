// The controller's two lanes over a fake hub (the writes recorded in the order they are sent): status
// writes from the queue first, PlacementDecisions and Events only while no key waits.
import { afterEach, describe, expect, it } from 'vitest';
import { objectKey, type KubeObject, type ListWatch, type WatchEventType } from '@mco/kube-runtime';
import type { KubeConnection } from '@mco/runtime';
import { createController, type Controller, type HubClient } from '../src/index.js';
import { DecisionBacklog, PeerActivity } from '../src/lanes.js';
import { waitFor } from './support.js';

/** An informer's source: a fixed listing, then whatever the test emits. */
function source(items: KubeObject[]) {
  let emit: ((type: WatchEventType, object: KubeObject) => void) | undefined;
  const listWatch: ListWatch<KubeObject> = {
    list: async () => ({ items, resourceVersion: '1' }),
    watch: async (_rv, _timeout, onEvent) => {
      emit = onEvent;
      return () => {};
    },
  };
  return { listWatch, emit: (type: WatchEventType, object: KubeObject) => emit!(type, object) };
}

interface Write {
  readonly kind: 'status' | 'create' | 'update' | 'delete' | 'event';
  readonly key: string;
  /** PlacementDecisions: the clusters listed. */
  readonly clusters?: string[];
}

type Emit = (type: WatchEventType, object: KubeObject) => void;

/**
 * A hub that records each write as it is sent, answers a moment later and then
 * echoes it on the watch, as the API server does; status writes can be held.
 */
class RecordingHub implements HubClient {
  readonly writes: Write[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** PlacementDecision writes in flight, and the most at once while placements waited in the work queue. */
  decisionsInFlight = 0;
  maxDecisionsWhileQueued = 0;
  queued: () => number = () => 0;
  /** The next PlacementDecision writes to refuse, as an API server that is down does; when each was sent. */
  refuseDecisions = 0;
  readonly refusedAt: number[] = [];
  echo: { placements: Emit; decisions: Emit } | undefined;
  private version = 100;
  private held: (() => void)[] | undefined;
  private onHeld: (() => void) | undefined;

  /** Holds status writes until `release`; resolves once one is waiting. */
  hold(): Promise<void> {
    this.held = [];
    return new Promise((resolve) => (this.onHeld = resolve));
  }

  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const go of held) go();
  }

  /** Echoes held back (a watch that lags), in order, until `releaseEchoes`. */
  heldEchoes: (() => void)[] | undefined;

  releaseEchoes(): void {
    const echoes = this.heldEchoes ?? [];
    this.heldEchoes = undefined;
    for (const echo of echoes) echo();
  }

  private async answer<T>(write: Write, value: T, echo?: () => void, wait?: Promise<void>): Promise<T> {
    this.writes.push(write);
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    const decision = write.kind === 'create' || write.kind === 'update' || write.kind === 'delete';
    if (decision) this.decisionsInFlight++;
    if (decision && this.queued() > 0)
      this.maxDecisionsWhileQueued = Math.max(this.maxDecisionsWhileQueued, this.decisionsInFlight);
    try {
      await wait;
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (echo && this.heldEchoes) this.heldEchoes.push(echo);
      else if (echo) setImmediate(echo);
      return value;
    } finally {
      this.inFlight--;
      if (decision) this.decisionsInFlight--;
    }
  }

  private stamp(object: KubeObject): KubeObject {
    return { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
  }

  replacePlacementStatus(placement: KubeObject): Promise<KubeObject> {
    let wait: Promise<void> | undefined;
    if (this.held) {
      const held = this.held;
      wait = new Promise((resolve) => held.push(resolve));
      this.onHeld?.();
    }
    const written = this.stamp(placement);
    return this.answer(
      { kind: 'status', key: objectKey(placement) },
      written,
      () => this.echo?.placements('MODIFIED', written),
      wait,
    );
  }

  createPlacementDecision(decision: KubeObject): Promise<KubeObject> {
    if (this.refuseDecisions > 0) {
      this.refuseDecisions--;
      this.refusedAt.push(performance.now());
      const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return new Promise((_, reject) => setTimeout(() => reject(refused), 1));
    }
    const written = this.stamp({ ...decision, metadata: { ...decision.metadata, uid: `uid-${objectKey(decision)}` } });
    const write: Write = { kind: 'create', key: objectKey(decision), clusters: listed(decision) };
    return this.answer(write, written, () => this.echo?.decisions('ADDED', written));
  }

  replacePlacementDecision(decision: KubeObject): Promise<KubeObject> {
    const written = this.stamp(decision);
    const write: Write = { kind: 'update', key: objectKey(decision), clusters: listed(decision) };
    return this.answer(write, written, () => this.echo?.decisions('MODIFIED', written));
  }

  deletePlacementDecision(namespace: string, name: string): Promise<void> {
    const gone = { metadata: { namespace, name, resourceVersion: String(++this.version) } };
    return this.answer({ kind: 'delete', key: `${namespace}/${name}` }, undefined, () =>
      this.echo?.decisions('DELETED', gone),
    );
  }

  createEvent(namespace: string, event: { involvedObject: { name?: string } }): Promise<void> {
    return this.answer({ kind: 'event', key: `${namespace}/${event.involvedObject.name}` }, undefined);
  }

  patchEvent(namespace: string, name: string): Promise<void> {
    return this.answer({ kind: 'event', key: `${namespace}/${name}` }, undefined);
  }
}

const listed = (decision: KubeObject) =>
  ((decision.decisions ?? []) as { clusterProfileRef: { name: string } }[]).map((d) => d.clusterProfileRef.name);

const profile = (name: string, resourceVersion = '1'): KubeObject => ({
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ClusterProfile',
  metadata: { name, namespace: 'fleet', resourceVersion, uid: `uid-${name}` },
  spec: { displayName: name, clusterManager: { name: 'test' } },
});

/** Every cluster of the fleet (no rules, no affinity). */
const placement = (name: string): KubeObject => ({
  apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
  kind: 'MultiKubernetesClusterPlacement',
  metadata: { name, namespace: 'apps', resourceVersion: '1', uid: `uid-${name}`, generation: 1 },
  spec: {},
});

const HUB: KubeConnection = {
  server: 'https://127.0.0.1:9',
  insecureSkipTlsVerify: true,
  getCredential: async () => ({}),
  invalidate: () => {},
};

let controller: Controller | undefined;
afterEach(async () => {
  await controller?.stop();
  controller = undefined;
});

function start(placements: string[], profiles: string[], workers: number, decisionsMaxDeferMs?: number) {
  const hub = new RecordingHub();
  const sources = {
    placements: source(placements.map(placement)),
    clusterProfiles: source(profiles.map((name) => profile(name))),
    placementDecisions: source([]),
    inventoryLossConfirmation: source([]),
  };
  hub.echo = { placements: sources.placements.emit, decisions: sources.placementDecisions.emit };
  controller = createController({
    hub: HUB,
    client: hub,
    workers,
    ...(decisionsMaxDeferMs === undefined ? {} : { decisionsMaxDeferMs }),
    listWatch: {
      placements: sources.placements.listWatch,
      clusterProfiles: sources.clusterProfiles.listWatch,
      placementDecisions: sources.placementDecisions.listWatch,
      inventoryLossConfirmation: sources.inventoryLossConfirmation.listWatch,
    },
  });
  controller.start();
  return { hub, sources };
}

/** The PlacementDecisions of `key`'s placement as last written (its slice 0). */
const lastDecisionOf = (hub: RecordingHub, name: string) =>
  hub.writes.filter((w) => w.key === `apps/${name}-0` && w.kind !== 'event').at(-1);

/** Nothing in flight, queued or deferred. */
const settled = (hub: RecordingHub) =>
  waitFor('nothing left to write', () => {
    const deferred = controller!.deferred();
    return hub.inFlight === 0 && controller!.queue.length === 0 && deferred.placementDecisions + deferred.events === 0;
  });

describe('the lanes of the controller', () => {
  it('writes every status of a backlog before any PlacementDecision or Event, and each once', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `p${i}`);
    const { hub } = start(names, ['c0', 'c1', 'c2'], 1);
    await waitFor(
      'every PlacementDecision and Event',
      () => names.every((n) => lastDecisionOf(hub, n)) && hub.writes.filter((w) => w.kind === 'event').length >= 12,
    );
    const kinds = hub.writes.map((w) => w.kind);
    const lastStatus = kinds.lastIndexOf('status');
    expect({
      statuses: kinds.filter((k) => k === 'status').length,
      statusesFirst: kinds.slice(0, lastStatus + 1).every((k) => k === 'status'),
      decisions: hub.writes.filter((w) => w.kind === 'create').map((w) => [w.key, w.clusters]),
      // Decisions before Events in the lower lane.
      decisionsBeforeEvents: kinds.lastIndexOf('create') < kinds.indexOf('event'),
    }).toEqual({
      statuses: 12,
      statusesFirst: true,
      decisions: names.map((n) => [`apps/${n}-0`, ['c0', 'c1', 'c2']]),
      decisionsBeforeEvents: true,
    });
  });

  it('keeps every write, status or deferred, within the worker count', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const { hub } = start(names, ['c0', 'c1'], 3);
    await waitFor('every PlacementDecision', () => names.every((n) => lastDecisionOf(hub, n)));
    await waitFor('every Event', () => hub.writes.filter((w) => w.kind === 'event').length >= 20);
    expect(hub.maxInFlight).toBeGreaterThan(1);
    expect(hub.maxInFlight).toBeLessThanOrEqual(3);
  });

  it('writes overdue PlacementDecisions ahead of waiting status work with one worker, no more', async () => {
    // Overdue at once: every PlacementDecision behind may jump ahead of the statuses still queued.
    const names = Array.from({ length: 40 }, (_, i) => `p${i}`);
    const { hub } = start(names, ['c0', 'c1'], 8, 0);
    hub.queued = () => controller!.queue.length;
    await waitFor('every PlacementDecision', () => names.every((n) => lastDecisionOf(hub, n)));
    const kinds = hub.writes.map((w) => w.kind);
    expect({
      decisionBeforeLastStatus: kinds.indexOf('create') < kinds.lastIndexOf('status'),
      maxDecisionsWhileQueued: hub.maxDecisionsWhileQueued,
    }).toEqual({ decisionBeforeLastStatus: true, maxDecisionsWhileQueued: 1 });
  });

  it('writes PlacementDecisions once, from the latest status, after the status changed twice', async () => {
    const { hub, sources } = start(['p0', 'p1'], ['c0', 'c1'], 1);
    await waitFor('the first PlacementDecisions', () => lastDecisionOf(hub, 'p0') && lastDecisionOf(hub, 'p1'));
    await controller!.waitForSync();
    await settled(hub);
    const before = hub.writes.length;

    // c2 arrives; while p0's status write for it is held, c3 arrives too.
    const held = hub.hold();
    sources.clusterProfiles.emit('ADDED', profile('c2', '2'));
    await held;
    sources.clusterProfiles.emit('ADDED', profile('c3', '3'));
    await new Promise((resolve) => setImmediate(resolve)); // the change queues its placements
    hub.release();
    await waitFor('p0 and p1 list c3 in their PlacementDecisions', () =>
      ['p0', 'p1'].every((n) => lastDecisionOf(hub, n)?.clusters?.includes('c3')),
    );
    await settled(hub);
    const after = hub.writes.slice(before).filter((w) => w.kind !== 'event');
    expect(after).toEqual([
      { kind: 'status', key: 'apps/p0' }, // with c2
      { kind: 'status', key: 'apps/p1' }, // with c2 and c3
      { kind: 'status', key: 'apps/p0' }, // with c2 and c3
      { kind: 'update', key: 'apps/p0-0', clusters: ['c0', 'c1', 'c2', 'c3'] },
      { kind: 'update', key: 'apps/p1-0', clusters: ['c0', 'c1', 'c2', 'c3'] },
    ]);
  });

  it('writes from its latest status when the watch has not shown its last two status writes', async () => {
    const { hub, sources } = start(['p0'], ['c0'], 1);
    await waitFor('the first PlacementDecision', () => lastDecisionOf(hub, 'p0'));
    await controller!.waitForSync();
    await settled(hub);
    const before = hub.writes.length;

    hub.heldEchoes = [];
    sources.clusterProfiles.emit('ADDED', profile('c1', '2'));
    await waitFor('p0-0 lists c1', () => lastDecisionOf(hub, 'p0')?.clusters?.includes('c1'));
    sources.clusterProfiles.emit('ADDED', profile('c2', '3'));
    // Before, the overlay gave way to the cache's older status here: p0-0 went back to c0 alone.
    await waitFor('p0-0 lists c2', () => lastDecisionOf(hub, 'p0')?.clusters?.includes('c2'));
    await settled(hub);
    hub.releaseEchoes();
    await settled(hub);
    // Each status written once, on top of the one before; no PlacementDecision from the cached status.
    expect(hub.writes.slice(before).filter((w) => w.kind !== 'event')).toEqual([
      { kind: 'status', key: 'apps/p0' },
      { kind: 'update', key: 'apps/p0-0', clusters: ['c0', 'c1'] },
      { kind: 'status', key: 'apps/p0' },
      { kind: 'update', key: 'apps/p0-0', clusters: ['c0', 'c1', 'c2'] },
    ]);
  });

  it('deletes the PlacementDecisions of a placement deleted while they were behind, and writes none', async () => {
    const { hub, sources } = start(['p0', 'p1'], ['c0'], 1);
    await waitFor('the first PlacementDecisions', () => lastDecisionOf(hub, 'p0') && lastDecisionOf(hub, 'p1'));
    await settled(hub);
    const before = hub.writes.length;

    const held = hub.hold();
    sources.clusterProfiles.emit('ADDED', profile('c1', '2'));
    await held;
    sources.placements.emit('DELETED', placement('p1'));
    hub.release();
    await waitFor('p1-0 deleted', () => lastDecisionOf(hub, 'p1')?.kind === 'delete');
    await settled(hub);
    expect(hub.writes.slice(before).filter((w) => w.kind !== 'event')).toEqual([
      { kind: 'status', key: 'apps/p0' },
      { kind: 'update', key: 'apps/p0-0', clusters: ['c0', 'c1'] },
      { kind: 'delete', key: 'apps/p1-0' },
    ]);
  });
});

describe('a PlacementDecision write that fails', () => {
  it('is retried with a backoff that grows, though the reconciles between the tries succeed', async () => {
    const { hub } = start(['p0'], ['c0'], 1);
    hub.refuseDecisions = 8;
    await waitFor('p0-0 written after eight refusals', () => lastDecisionOf(hub, 'p0')?.kind === 'create');
    // The queue's backoff: 5 ms doubled at each retry, less up to 10% jitter, less a millisecond for the
    // timers' granularity. A busy machine only adds.
    const gaps = hub.refusedAt.slice(1).map((at, i) => at - hub.refusedAt[i]!);
    const atLeast = gaps.map((_, i) => 5 * 2 ** i * 0.9 - 1);
    expect({
      refusals: hub.refusedAt.length,
      shortGaps: gaps.filter((gap, i) => gap < atLeast[i]!).map(Math.round),
    }).toEqual({
      refusals: 8,
      shortGaps: [],
    });
    expect(hub.writes.filter((w) => w.kind === 'status')).toHaveLength(1);
  });
});

describe('PlacementDecision slices', () => {
  it('rewrites one slice when a cluster joins in the middle of the status order', async () => {
    const profiles = Array.from({ length: 150 }, (_, i) => `c${String(i).padStart(3, '0')}`);
    const { hub, sources } = start(['wide'], profiles, 2);
    await waitFor('two slices', () => hub.writes.filter((w) => w.kind === 'create').length === 2);
    await settled(hub);
    const before = hub.writes.length;
    sources.clusterProfiles.emit('ADDED', profile('c050a', '2'));
    await waitFor('c050a listed', () =>
      hub.writes.slice(before).some((w) => w.kind === 'update' && w.clusters?.includes('c050a')),
    );
    await settled(hub);
    expect(
      hub.writes
        .slice(before)
        .filter((w) => w.kind !== 'event')
        .map((w) => [w.kind, w.key]),
    ).toEqual([
      ['status', 'apps/wide'],
      // The first slice is full: the new cluster goes to the second, and the first stays as it is.
      ['update', 'apps/wide-1'],
    ]);
  });
});

describe('DecisionBacklog', () => {
  it('holds a placement once, oldest first, and never hands out one that is busy', () => {
    let now = 0;
    const backlog = new DecisionBacklog(() => now++);
    backlog.add('a');
    backlog.add('b');
    backlog.add('a'); // coalesced: keeps its place and its time
    backlog.begin('a'); // being reconciled
    expect(backlog.take()).toEqual({ key: 'b', since: 1 });
    expect(backlog.take()).toBeUndefined();
    backlog.end('a');
    expect(backlog.take()).toEqual({ key: 'a', since: 0 });
    expect(backlog.size).toBe(0);
  });

  it('hands out an overdue placement only once it has been behind long enough, the oldest first', () => {
    let now = 0;
    const backlog = new DecisionBacklog(() => now);
    backlog.add('a');
    now = 10;
    backlog.add('b');
    now = 29;
    expect(backlog.take(30)).toBeUndefined();
    now = 30;
    expect(backlog.take(30)).toEqual({ key: 'a', since: 0 });
    expect(backlog.take(30)).toBeUndefined(); // b: 20 of 30
    now = 40;
    expect(backlog.take(30)).toEqual({ key: 'b', since: 10 });
  });
});

describe('PeerActivity', () => {
  it('holds the lane from a peer status write until the peers have been quiet for the window', () => {
    let now = 0;
    const peers = new PeerActivity(500, () => now);
    expect(peers.waitMs()).toBe(0); // nothing seen: open
    peers.seen();
    now = 200;
    expect(peers.waitMs()).toBe(300);
    peers.seen(); // another write restarts the window
    now = 600;
    expect(peers.waitMs()).toBe(100);
    now = 700;
    expect(peers.waitMs()).toBe(0);
  });
});
