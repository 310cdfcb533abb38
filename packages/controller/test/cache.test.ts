import { describe, expect, it } from 'vitest';
import { PLACEMENT_API_VERSION, PLACEMENT_DECISION_API_VERSION, PLACEMENT_KEY_LABEL, PLACEMENT_KIND } from '@mco/core';
import {
  Informer,
  ResponseTooLargeError,
  type KubeObject,
  type ListWatch,
  type WatchEventType,
} from '@mco/kube-runtime';
import { createLogger } from '@mco/runtime';
import type { HubClient } from '../src/kube.js';
import {
  isStub,
  readWhole,
  ShardedInformer,
  stubPlacement,
  stubPlacementDecision,
  trimPlacement,
  trimPlacementDecision,
} from '../src/cache.js';
import { Reconciler } from '../src/reconciler.js';

const placement = (name: string, rv: string): KubeObject => ({
  apiVersion: PLACEMENT_API_VERSION,
  kind: PLACEMENT_KIND,
  metadata: { name, namespace: 'apps', uid: `uid-${name}`, resourceVersion: rv, generation: 1, labels: { a: 'b' } },
  spec: { workload: { name } },
  status: { clusters: [{ name: 'c1', namespace: 'fleet', state: 'ACTIVE' }] },
});

const decision = (name: string, rv: string): KubeObject => ({
  apiVersion: PLACEMENT_DECISION_API_VERSION,
  kind: 'PlacementDecision',
  metadata: {
    name: `${name}-0`,
    namespace: 'apps',
    uid: `uid-${name}-0`,
    resourceVersion: rv,
    labels: { [PLACEMENT_KEY_LABEL]: name, 'app.kubernetes.io/managed-by': 'mco' },
    ownerReferences: [
      { apiVersion: PLACEMENT_API_VERSION, kind: PLACEMENT_KIND, name, uid: `uid-${name}`, controller: true },
    ],
  },
  schedulerName: 'mco',
  decisions: [{ clusterProfileRef: { name: 'c1', namespace: 'fleet' }, reason: 'ACTIVE' }],
});

/** A list/watch over fixed objects whose watch the test drives. */
function fakeListWatch(items: KubeObject[]) {
  let emit: ((type: WatchEventType, object: KubeObject) => void) | undefined;
  const listWatch: ListWatch<KubeObject> = {
    list: async () => ({ items: items.map((o) => structuredClone(o)), resourceVersion: '10' }),
    watch: async (_rv, _timeout, onEvent) => {
      emit = onEvent;
      return () => (emit = undefined);
    },
  };
  const watching = async () => {
    while (!emit) await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    listWatch,
    watching,
    emit: (type: WatchEventType, object: KubeObject) => emit!(type, structuredClone(object)),
  };
}

/** A placements informer holding the keys in `held`, reading from `api` (counting reads). */
function placementsInformer(items: KubeObject[], held: Set<string>, api: Map<string, KubeObject>) {
  const fake = fakeListWatch(items);
  const reads: string[] = [];
  const informer = new ShardedInformer({
    name: 'placements',
    listWatch: fake.listWatch,
    transform: trimPlacement,
    holds: (o) => held.has(`${o.metadata?.namespace}/${o.metadata?.name}`),
    stub: stubPlacement,
    read: async (key) => {
      reads.push(key);
      const object = api.get(key);
      return object && structuredClone(object);
    },
  });
  return { informer, reads, ...fake };
}

describe('caches that follow the shards a replica holds', () => {
  it('keeps the placements and PlacementDecisions of shards held whole, and stubs of the others', async () => {
    const held = new Set(['apps/mine']);
    const { informer: placements } = placementsInformer(
      [placement('mine', '1'), placement('theirs', '2')],
      held,
      new Map(),
    );
    const decisions = new ShardedInformer({
      name: 'placementdecisions',
      listWatch: fakeListWatch([decision('mine', '3'), decision('theirs', '4')]).listWatch,
      transform: trimPlacementDecision,
      holds: (d) => held.has(Reconciler.placementKeyOf(d) ?? ''),
      stub: stubPlacementDecision,
      read: async () => undefined,
    });
    placements.start();
    decisions.start();
    await Promise.all([placements.waitForSync(), decisions.waitForSync()]);
    const theirs = decisions.get('apps/theirs-0')!;
    expect({
      mine: [isStub(placements.get('apps/mine')!), placements.get('apps/mine')?.status !== undefined],
      theirs: { keys: Object.keys(placements.get('apps/theirs')!), metadata: placements.get('apps/theirs')?.metadata },
      stubs: placements.list().map(isStub),
      decisionMine: decisions.get('apps/mine-0')?.decisions,
      decisionTheirs: {
        stub: isStub(theirs),
        decisions: theirs.decisions,
        placement: Reconciler.placementKeyOf(theirs),
      },
    }).toEqual({
      mine: [false, true],
      theirs: {
        keys: ['metadata'],
        metadata: { name: 'theirs', namespace: 'apps', uid: 'uid-theirs', resourceVersion: '2' },
      },
      stubs: [false, true],
      decisionMine: decision('mine', '3').decisions,
      decisionTheirs: { stub: true, decisions: undefined, placement: 'apps/theirs' },
    });
    await Promise.all([placements.stop(), decisions.stop()]);
  });

  it('a metadata-only list: every item a stub, of shards held too; a reconcile reads it whole, and a watch event keeps it whole', async () => {
    const partial = (object: KubeObject): KubeObject => ({
      apiVersion: 'meta.k8s.io/v1',
      kind: 'PartialObjectMetadata',
      metadata: object.metadata!,
    });
    const mine = placement('mine', '1');
    const api = new Map([['apps/mine', mine]]);
    const { informer, reads, watching, emit } = placementsInformer(
      [partial(mine), partial(placement('theirs', '2'))],
      new Set(['apps/mine']),
      api,
    );
    informer.start();
    await informer.waitForSync();
    const listed = informer.list().map(isStub);
    const readHeldKeepsNone = (await informer.readHeld(), isStub(informer.get('apps/mine')!));
    await readWhole(informer, informer, 'apps/mine', []);
    const read = { stub: isStub(informer.get('apps/mine')!), spec: informer.get('apps/mine')?.spec, reads: [...reads] };
    await watching();
    emit('MODIFIED', placement('mine', '5'));
    await new Promise((resolve) => setImmediate(resolve));
    expect({
      listed,
      readHeldKeepsNone,
      read,
      watched: [isStub(informer.get('apps/mine')!), informer.get('apps/mine')?.metadata?.resourceVersion],
    }).toEqual({
      listed: [true, true],
      readHeldKeepsNone: true,
      read: { stub: false, spec: mine.spec, reads: ['apps/mine'] },
      watched: [false, '5'],
    });
    await informer.stop();
  });

  it('a shard taken later: a reconcile reads its stubs whole from the API server once, its events keep them whole, and losing it brings stubs back', async () => {
    const held = new Set<string>();
    const api = new Map([['apps/p', placement('p', '5')]]);
    const { informer, reads, watching, emit } = placementsInformer([placement('p', '5')], held, api);
    informer.start();
    await informer.waitForSync();
    await watching();
    const before = isStub(informer.get('apps/p')!);

    held.add('apps/p'); // the shard is taken
    const first = await informer.readWhole('apps/p');
    const again = await informer.readWhole('apps/p');
    const afterRead = { whole: !isStub(informer.get('apps/p')!), listed: informer.list()[0]?.spec, reads: [...reads] };

    // The API server is ahead of the cache: no whole copy, the reconcile is told to retry.
    emit('MODIFIED', placement('p', '6'));
    const afterEvent = {
      whole: !isStub(informer.get('apps/p')!),
      rv: informer.get('apps/p')?.metadata?.resourceVersion,
    };

    held.delete('apps/p'); // the shard is lost
    informer.dropUnheld();
    emit('MODIFIED', placement('p', '7'));
    const afterLoss = isStub(informer.get('apps/p')!);
    await informer.stop();
    expect({ before, first, again, afterRead, afterEvent, afterLoss }).toEqual({
      before: true,
      first: true,
      again: true,
      afterRead: { whole: true, listed: { workload: { name: 'p' } }, reads: ['apps/p'] },
      afterEvent: { whole: true, rv: '6' },
      afterLoss: true,
    });
  });

  it('shards taken: one list makes the stubs now held whole, without a read per placement', async () => {
    const held = new Set<string>();
    const { informer, reads } = placementsInformer([placement('a', '1'), placement('b', '2')], held, new Map());
    informer.start();
    await informer.waitForSync();
    held.add('apps/a'); // a's shard is taken; b's is another replica's
    await informer.readHeld();
    const read = await informer.readWhole('apps/a');
    expect({ read, stubs: informer.list().map(isStub), spec: informer.get('apps/a')?.spec, reads }).toEqual({
      read: true,
      stubs: [false, true],
      spec: { workload: { name: 'a' } },
      reads: [],
    });
    await informer.stop();
  });

  it('shards taken: the list pages as the cache learned to (a page larger than the client accepts is listed smaller)', async () => {
    // Two placements per page is more than the client accepts (at 10,000 placements, 500 of their statuses were
    // over 16 MiB: the list failed, and every reconcile read its placement and decisions one by one).
    const items = [placement('a', '1'), placement('b', '2'), placement('c', '3')];
    const limits: number[] = [];
    const listWatch: ListWatch<KubeObject> = {
      list: async ({ limit, continue: from }) => {
        limits.push(limit);
        if (limit > 1) throw new ResponseTooLargeError('the answer is larger than 100 bytes', 100);
        const at = Number(from ?? 0);
        return {
          items: [structuredClone(items[at]!)],
          resourceVersion: '10',
          continue: at + 1 < items.length ? String(at + 1) : undefined,
        };
      },
      watch: async () => () => {},
    };
    const held = new Set<string>();
    const informer = new ShardedInformer({
      name: 'placements',
      listWatch,
      transform: trimPlacement,
      holds: (o) => held.has(`${o.metadata?.namespace}/${o.metadata?.name}`),
      stub: stubPlacement,
      read: async () => undefined,
      logger: createLogger({ write: () => {} }),
    });
    informer.start();
    await informer.waitForSync();
    const synced = limits.splice(0);
    held.add('apps/a').add('apps/c');
    await informer.readHeld();
    expect({ synced, readHeld: limits, stubs: informer.list().map(isStub) }).toEqual({
      synced: [500, 250, 125, 62, 31, 15, 7, 3, 1, 1, 1],
      readHeld: [1, 1, 1],
      stubs: [false, true, false],
    });
    await informer.stop();
  });

  it('never keeps a copy of another version than the stub: the reconcile gets a Conflict (and writes nothing)', async () => {
    const held = new Set<string>();
    // The cache holds version 5 of p and of q; the API server has version 9 of p, and q is gone.
    const api = new Map([['apps/p', placement('p', '9')]]);
    const { informer: placements, reads } = placementsInformer([placement('p', '5'), placement('q', '5')], held, api);
    const { informer: decisions } = placementsInformer([], held, new Map());
    placements.start();
    decisions.start();
    await Promise.all([placements.waitForSync(), decisions.waitForSync()]);
    held.add('apps/p').add('apps/q');
    const codes = [];
    for (const key of ['apps/p', 'apps/q'])
      codes.push(
        ((await readWhole(placements, decisions, key, []).catch((e: unknown) => e)) as { code?: string }).code,
      );
    // A key the cache does not hold needs no read.
    const absent = await placements.readWhole('apps/r');
    expect({ codes, stubs: placements.list().map(isStub), absent, reads }).toEqual({
      codes: ['Conflict', 'Conflict'],
      stubs: [true, true],
      absent: true,
      reads: ['apps/p', 'apps/q'],
    });
    await Promise.all([placements.stop(), decisions.stop()]);
  });

  it('a reconcile of a stub writes from the whole object it read, with its resourceVersion; from a stub it writes nothing', async () => {
    const held = new Set<string>();
    const selecting = (name: string, rv: string): KubeObject => {
      const { status: _status, ...rest } = placement(name, rv);
      return {
        ...rest,
        spec: {
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingRequiredDuringExecution: {
                clusterSelectorTerms: [
                  { matchExpressions: [{ labelSelector: { key: 'region', operator: 'In', values: ['r0'] } }] },
                ],
              },
            },
          },
        },
      };
    };
    // p: the API server has the version the cache's stub is of; q: the API server is ahead of the cache.
    const api = new Map([
      ['apps/p', selecting('p', '5')],
      ['apps/q', selecting('q', '9')],
    ]);
    const { informer: placements } = placementsInformer([selecting('p', '5'), selecting('q', '5')], held, api);
    const { informer: decisions } = placementsInformer([], held, new Map());
    const profile: KubeObject = {
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name: 'c1', namespace: 'fleet', resourceVersion: '1', labels: { region: 'r0' } },
      spec: { displayName: 'c1', clusterManager: { name: 'test' } },
      status: { conditions: [{ type: 'ControlPlaneHealthy', status: 'True' }] },
    };
    const clusterProfiles = new Informer<KubeObject>({
      name: 'clusterprofiles',
      listWatch: fakeListWatch([profile]).listWatch,
    });
    const writes: { kind: string; object: KubeObject }[] = [];
    const written = (kind: string) => async (object: KubeObject) => {
      writes.push({ kind, object });
      return { ...object, metadata: { ...object.metadata, resourceVersion: String(100 + writes.length) } };
    };
    const client = {
      replacePlacementStatus: written('status'),
      createPlacementDecision: written('decision'),
      replacePlacementDecision: written('decision'),
    } as unknown as HubClient;
    const lines: string[] = [];
    const reconciler = new Reconciler({
      placements,
      clusterProfiles,
      placementDecisions: decisions,
      client,
      logger: createLogger({ write: (line) => lines.push(line) }),
      isLeader: (key) => held.has(key),
      readWhole: (key, decisionKeys, signal) => readWhole(placements, decisions, key, decisionKeys, signal),
    });
    for (const informer of [placements, decisions, clusterProfiles]) informer.start();
    await Promise.all([placements, decisions, clusterProfiles].map((i) => i.waitForSync()));
    held.add('apps/p').add('apps/q'); // their shard is taken
    const p = await reconciler.reconcile('apps/p');
    await reconciler.writeDecisions('apps/p'); // deferred behind status work (lanes.ts)
    const q = await reconciler.reconcile('apps/q').catch((e: unknown) => (e as { code?: string }).code);
    expect({
      statusWritten: p.statusWritten,
      q,
      writes: writes.map(({ kind, object }) => ({
        kind,
        name: object.metadata?.name,
        resourceVersion: object.metadata?.resourceVersion,
        spec: kind === 'status' ? object.spec : undefined,
        clusters:
          kind === 'status'
            ? (object.status as { clusters?: { name: string }[] }).clusters?.map((c) => c.name)
            : undefined,
      })),
    }).toEqual({
      statusWritten: true,
      q: 'Conflict',
      writes: [
        { kind: 'status', name: 'p', resourceVersion: '5', spec: api.get('apps/p')!.spec, clusters: ['c1'] },
        { kind: 'decision', name: 'p-0', resourceVersion: undefined, spec: undefined, clusters: undefined },
      ],
    });
    // One info line per transition (docs/operations.md#logs).
    const transitions = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'transition');
    expect(transitions).toEqual([
      expect.objectContaining({
        level: 'info',
        placement: 'apps/p',
        cluster: 'fleet/c1',
        from: 'not listed',
        to: 'ACTIVE',
        transition: expect.any(String),
        reason: expect.any(String),
      }),
    ]);
    await Promise.all([placements, decisions, clusterProfiles].map((i) => i.stop()));
  });
});
