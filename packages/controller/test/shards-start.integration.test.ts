import { expect, it } from 'vitest';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { createLogger } from '@mco/runtime';
import { createListWatch, KubeClient, PLACEMENTS, type KubeObject, type ListWatch } from '@mco/kube-runtime';
import { connectionFromKubeConfig, kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import type { Controller } from '../src/index.js';
import { MEMBERS_ANNOTATION, membersLeaseName, ShardCoordinator } from '../src/shards.js';
import { describeWithHub, LEASE_NAME, LEASE_NAMESPACE, waitFor } from './support.js';
import { testController, useControllerHub } from './support-controller.js';

// When replicas take their shards, measured from their placement lists and logs: in a cold start
// before they list (one list each), also when a replica's first read of the members fails; beside
// synced replicas only once synced.

const SHARDS = 8;
// The chart's retry period (2 s, also each Lease request's deadline): three replicas' first rounds
// (their announcements) all land before any second round, on a loaded machine too.
const ELECTION = {
  namespace: LEASE_NAMESPACE,
  name: LEASE_NAME,
  shards: SHARDS,
  leaseDurationMs: 8_000,
  renewDeadlineMs: 6_000,
  retryPeriodMs: 2_000,
};
const allClusters = { clusterSelectorRules: [{ type: 'all-clusters' }] };
const PLACEMENT_COUNT = 24;

interface Replica {
  readonly controller: Controller;
  /** The shards it owned as each full list of placements began (no continue token). */
  readonly listsBegan: number[][];
  readonly logs: { msg: string; [field: string]: unknown }[];
}

describeWithHub('when replicas take their shards, on a real kube-apiserver', () => {
  const env = useControllerHub();

  const replica = (identity: string, gate?: Promise<void>): Replica => {
    const listsBegan: number[][] = [];
    const logs: Replica['logs'] = [];
    const inner = createListWatch(kubeClientFromKubeConfig(env.hub.controllerKubeConfig()), PLACEMENTS);
    const placements: ListWatch<KubeObject> = {
      list: async (options) => {
        if (!options.continue) listsBegan.push([...controller.ownedShards()]);
        await gate;
        return inner.list(options);
      },
      watch: (...args) => inner.watch(...args),
    };
    const controller = testController(env.hub.controllerKubeConfig(), {
      identity,
      leaderElection: ELECTION,
      listWatch: { placements },
      logger: createLogger({ level: 'info', write: (line) => void logs.push(JSON.parse(line)) }),
    });
    return { controller, listsBegan, logs };
  };
  const owned = (replicas: readonly Replica[]) => replicas.map((r) => r.controller.ownedShards().length);
  const balanced = (counts: number[], of: number) =>
    counts.reduce((a, b) => a + b, 0) === SHARDS && counts.every((n) => n >= Math.floor(SHARDS / of));
  const setUp = async (ns: string) => {
    await env.fleet.namespace(ns);
    await env.fleet.namespace(`fleet-${ns}`);
    await env.fleet.createProfile(`fleet-${ns}`, 'one');
    const names = Array.from({ length: PLACEMENT_COUNT }, (_, i) => `app-${i}`);
    for (const name of names) await env.fleet.createPlacement(ns, name, allClusters);
    return async () => {
      const states = await Promise.all(names.map((name) => env.fleet.states(ns, name)));
      return states.every((s) => s.includes(`fleet-${ns}/one:ACTIVE`));
    };
  };
  const members = async () => {
    const lease = await env.hub.admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: LEASE_NAMESPACE, name: membersLeaseName(LEASE_NAME) });
    return JSON.parse(lease.metadata?.annotations?.[MEMBERS_ANNOTATION] ?? '{}') as Record<string, string>;
  };

  it('three replicas started together hold their shares before they list: one list each (metadata only with 8 shards), no list again', async () => {
    const decided = await setUp('cold');
    const replicas = ['cold-a', 'cold-b', 'cold-c'].map((id) => replica(id));
    for (const r of replicas) env.start(r.controller);
    await waitFor('every placement decided', decided, 60_000);
    const counts = await waitFor('the shards shared out', () => balanced(owned(replicas), 3) && owned(replicas));
    const heldAtList = replicas.map((r) => r.listsBegan[0] ?? []);
    console.log(
      `[bench] cold start, 3 replicas, ${SHARDS} shards: held ${heldAtList.map((h) => h.join(',')).join(' | ')} as each began its list; ` +
        `now ${counts.join('+')}`,
    );
    expect({
      lists: replicas.map((r) => r.listsBegan.length),
      // Every shard was held by the replica that keeps it when the lists began.
      heldWhenListing: heldAtList.flat().sort((a, b) => a - b),
      keptSinceThen: replicas.map((r, i) => heldAtList[i]!.every((s) => r.controller.ownedShards().includes(s))),
      listedAgain: replicas.flatMap((r) => r.logs.filter((l) => l.msg === 'listed the objects of shards taken')),
      syncedHolding: replicas.map(
        (r) => (r.logs.find((l) => l.msg === 'caches synced')?.shards as number[]).length > 0,
      ),
    }).toEqual({
      lists: [1, 1, 1],
      heldWhenListing: [0, 1, 2, 3, 4, 5, 6, 7],
      keptSinceThen: [true, true, true],
      listedAgain: [],
      syncedHolding: [true, true, true],
    });
  }, 90_000);

  it('a replica starting beside synced ones stays out of the members and takes no shard until its caches synced, then gets its share', async () => {
    const decided = await setUp('rolling');
    const [a, b] = [replica('rolling-a'), replica('rolling-b')];
    env.start(a.controller);
    env.start(b.controller);
    await waitFor('every placement decided', decided, 60_000);
    await waitFor('two replicas share the shards', () => balanced(owned([a, b]), 2));

    let open = () => {};
    const c = replica('rolling-c', new Promise<void>((resolve) => (open = resolve)));
    env.start(c.controller);
    await waitFor('the third replica lists (held at its gate)', () => c.listsBegan.length > 0);
    // Two more heartbeats of each synced replica: time for c to have announced itself, had it.
    const before = await members();
    await waitFor(
      'a and b renewed their membership twice',
      async () => {
        const now = await members();
        return ['rolling-a', 'rolling-b'].every((id) => now[id] !== before[id]) && now;
      },
      15_000,
    );
    const during = await members();
    await waitFor('another heartbeat', async () => (await members())['rolling-a'] !== during['rolling-a'], 15_000);
    const whileListing = { members: Object.keys(await members()).sort(), owned: owned([a, b, c]) };
    open();
    const after = await waitFor(
      'three replicas share the shards',
      () => balanced(owned([a, b, c]), 3) && owned([a, b, c]),
      30_000,
    );
    expect({
      whileListing,
      heldWhenListing: c.listsBegan[0],
      cHasShare: after[2]! >= 2,
      cMember: (await members())['rolling-c']?.startsWith('starting') === false,
      stillDecided: await decided(),
    }).toEqual({
      whileListing: { members: ['rolling-a', 'rolling-b'], owned: [4, 4, 0] },
      heldWhenListing: [],
      cHasShare: true,
      cMember: true,
      stillDecided: true,
    });
  }, 120_000);

  it('a replica whose first read of the members Lease fails lists only once it announced itself and took its shards, not at once as beside a synced member', async () => {
    const members = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases/${membersLeaseName(LEASE_NAME)}`;
    let failed = 0;
    // The API server's answer to its first read of the members Lease is lost (a deadline on a loaded hub).
    class FirstMembersReadFails extends KubeClient {
      override get<T>(path: string, options?: Parameters<KubeClient['get']>[1]): Promise<T> {
        if (path === members && failed++ === 0) return Promise.reject(new Error('request timed out'));
        return super.get<T>(path, options);
      }
    }
    const coordinator = new ShardCoordinator({
      ...ELECTION,
      identity: 'first-read-fails-a',
      client: new FirstMembersReadFails(connectionFromKubeConfig(env.hub.controllerKubeConfig())),
    });
    coordinator.start();
    try {
      await coordinator.tookFirst();
      const heldWhenListing = coordinator.owned();
      const lease = await env.hub.admin
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: LEASE_NAMESPACE, name: membersLeaseName(LEASE_NAME) });
      expect({
        failedReads: failed > 0,
        heldWhenListing,
        announced: Object.keys(JSON.parse(lease.metadata?.annotations?.[MEMBERS_ANNOTATION] ?? '{}')),
      }).toEqual({ failedReads: true, heldWhenListing: [0, 1, 2, 3, 4, 5, 6, 7], announced: ['first-read-fails-a'] });
    } finally {
      await coordinator.stop();
    }
  }, 30_000);

  it('a take whose answer is lost still holds its shard, and a take that never reached the API server is tried again, both before the list', async () => {
    const faults = { landed: 0, refused: 0 };
    const name = (body: unknown) => (body as KubeObject).metadata?.name;
    // On a loaded hub a deadline can pass after the API server applied a write, or before it got it.
    // A take creates the shard's Lease, or replaces it when an earlier test left it released.
    class TakesTimeOut extends KubeClient {
      private async take<T>(body: unknown, write: () => Promise<T>): Promise<T> {
        if (name(body) === `${LEASE_NAME}-3` && faults.landed++ === 0) {
          await write();
          throw new Error('request timed out');
        }
        if (name(body) === `${LEASE_NAME}-5` && faults.refused++ === 0) throw new Error('request timed out');
        return write();
      }
      override create<T>(path: string, body: unknown, options?: Parameters<KubeClient['create']>[2]): Promise<T> {
        return this.take(body, () => super.create<T>(path, body, options));
      }
      override replace<T>(path: string, body: unknown, options?: Parameters<KubeClient['replace']>[2]): Promise<T> {
        return this.take(body, () => super.replace<T>(path, body, options));
      }
    }
    const leases = env.hub.admin.makeApiClient(CoordinationV1Api);
    const transitions = () =>
      leases
        .readNamespacedLease({ namespace: LEASE_NAMESPACE, name: `${LEASE_NAME}-3` })
        .then((l) => ({ holder: l.spec?.holderIdentity, transitions: l.spec?.leaseTransitions ?? 0 }))
        .catch(() => ({ holder: undefined, transitions: 0 }));
    const before = await transitions();
    const coordinator = new ShardCoordinator({
      ...ELECTION,
      identity: 'takes-time-out-a',
      client: new TakesTimeOut(connectionFromKubeConfig(env.hub.controllerKubeConfig())),
    });
    coordinator.start();
    try {
      await coordinator.tookFirst();
      const heldWhenListing = coordinator.owned();
      expect({
        faults: { landed: faults.landed > 0, refused: faults.refused > 0 },
        heldWhenListing,
        // Taken once, by the write whose answer was lost: not again after it expired.
        shard3: await transitions(),
      }).toEqual({
        faults: { landed: true, refused: true },
        heldWhenListing: [0, 1, 2, 3, 4, 5, 6, 7],
        shard3: { holder: 'takes-time-out-a', transitions: before.transitions + 1 },
      });
    } finally {
      await coordinator.stop();
    }
  }, 30_000);
});
