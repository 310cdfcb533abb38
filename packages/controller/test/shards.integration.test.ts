import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createListWatch, PLACEMENTS, type KubeObject, type ListWatch } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import { expect, it } from 'vitest';
import { LEASES } from '../src/inventory-loss-state.js';
import { shardLeaseName, shardOf } from '../src/shards.js';
import { describeWithHub, LEASE_NAME, LEASE_NAMESPACE, RELEASE_NAMESPACE, waitFor } from './support.js';
import { useControllerHub } from './support-controller.js';
import { forkScript, type ScriptProcess } from './support-process.js';

// Three controller processes share 8 shards; one is SIGKILLed in the middle of
// a change that touches every placement. Every status write is attributed to
// a replica through metadata.managedFields (each replica writes under its
// identity as field manager) and checked, by resourceVersion, against the
// history of the shard's Lease that a watch records.

const SHARDS = 8;
const ELECTION = {
  namespace: LEASE_NAMESPACE,
  name: LEASE_NAME,
  shards: SHARDS,
  leaseDurationMs: 2_000,
  renewDeadlineMs: 1_500,
  retryPeriodMs: 300,
};
const APPS = ['shard-a', 'shard-b', 'shard-c', 'shard-d'];
const PLACEMENTS_PER_NAMESPACE = 16;
const PROFILES = 12;
const FIRST_BLUE = 4;
const profileName = (i: number) => `c-${String(i).padStart(2, '0')}`;
const pool = (values: string[]) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key: 'pool', operator: 'In', values } }] }],
      },
    },
  },
});

interface LeaseVersion {
  readonly shard: number;
  readonly rv: number;
  readonly holder: string;
  /** performance.now() when the watch delivered it. */
  readonly at: number;
}

interface StatusWrite {
  readonly key: string;
  readonly rv: number;
  readonly writer: string | undefined;
  readonly at: number;
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: Record<string, Record<string, Record<string, unknown>>>;
}

/**
 * Who wrote a status: after an update, the fields it changed belong to its field manager. The status's
 * `clusters` (an atomic list) changes on every write of this test but the placement's first: there, the one
 * manager of the status subresource.
 */
function writerOf(object: KubeObject, previous: KubeObject | undefined): string | undefined {
  const entries = ((object.metadata?.managedFields ?? []) as ManagedFieldsEntry[]).filter(
    (e) => e.operation === 'Update' && e.subresource === 'status',
  );
  const clusters = (o: KubeObject | undefined) => JSON.stringify((o?.status as { clusters?: unknown })?.clusters);
  const owners = entries.filter((e) => e.fieldsV1?.['f:status']?.['f:clusters'] !== undefined);
  if (clusters(object) === clusters(previous)) return undefined;
  return owners.length === 1 ? owners[0]!.manager : `ambiguous: ${owners.map((e) => e.manager).join(', ')}`;
}

/**
 * Every version of the objects of a list-watch, unabridged (an Informer drops managedFields): the listed
 * ones, then each watch event. `objects` holds the latest version per key; `ended` says why the watch ended.
 */
async function record(
  listWatch: ListWatch<KubeObject>,
  onVersion: (object: KubeObject, previous: KubeObject | undefined) => void,
) {
  const objects = new Map<string, KubeObject>();
  const seen = (object: KubeObject) => {
    const key = `${object.metadata?.namespace}/${object.metadata?.name}`;
    onVersion(object, objects.get(key));
    objects.set(key, object);
  };
  const listed = await listWatch.list({ limit: 500 });
  for (const object of listed.items) seen(object);
  const recorded = { objects, ended: undefined as unknown, stop: () => {} };
  recorded.stop = await listWatch.watch(
    listed.resourceVersion,
    900,
    (type, object) => {
      if (type === 'ADDED' || type === 'MODIFIED') seen(object);
    },
    (error) => (recorded.ended = error ?? 'the server ended the watch'),
  );
  return recorded;
}

describeWithHub('shards across three controller processes on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('a replica SIGKILLed in the middle of a change: its shards are taken over, every status write came from the holder of its shard Lease, no update is lost', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('fleet-shard');
    for (const ns of APPS) await fleet.namespace(ns);
    for (let i = 0; i < PROFILES; i++)
      await fleet.createProfile('fleet-shard', profileName(i), { pool: i < FIRST_BLUE ? 'blue' : 'green' });
    const keys = APPS.flatMap((ns) =>
      Array.from({ length: PLACEMENTS_PER_NAMESPACE }, (_, i) => `${ns}/app-${String(i).padStart(2, '0')}`),
    );
    for (const key of keys) {
      const [ns, name] = key.split('/') as [string, string];
      await fleet.createPlacement(ns, name, pool(['blue']));
    }

    // What the test sees: every version of the Leases and of the placements.
    const admin = kubeClientFromKubeConfig(hub.admin);
    const leaseHistory: LeaseVersion[] = [];
    const shardByLease = new Map(Array.from({ length: SHARDS }, (_, i) => [shardLeaseName(LEASE_NAME, i), i]));
    const leases = await record(createListWatch(admin, LEASES, { namespace: LEASE_NAMESPACE }), (lease) => {
      const shard = shardByLease.get(String(lease.metadata?.name));
      if (shard === undefined) return;
      const holder = String((lease.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '');
      leaseHistory.push({ shard, rv: Number(lease.metadata?.resourceVersion), holder, at: performance.now() });
    });
    const writes: StatusWrite[] = [];
    const placements = await record(createListWatch(admin, PLACEMENTS), (object, previous) => {
      const writer = previous && writerOf(object, previous);
      if (writer === undefined) return;
      const key = `${object.metadata?.namespace}/${object.metadata?.name}`;
      writes.push({ key, rv: Number(object.metadata?.resourceVersion), writer, at: performance.now() });
    });

    const script = new URL('./fixtures/replica.ts', import.meta.url);
    const dir = mkdtempSync(join(tmpdir(), 'mco-shards-'));
    const kubeconfig = join(dir, 'kubeconfig.json');
    writeFileSync(kubeconfig, hub.controllerKubeConfig().exportConfig(), { mode: 0o600 });
    const identities = ['a', 'b', 'c'].map((r) => `${RELEASE_NAMESPACE}/mco/replica-${r}`);
    const replicas: ScriptProcess[] = [];
    try {
      for (const identity of identities)
        replicas.push(
          await forkScript(script, {
            REPLICA_KUBECONFIG: kubeconfig,
            REPLICA_IDENTITY: identity,
            REPLICA_LEADER_ELECTION: JSON.stringify(ELECTION),
          }),
        );
      const clustersOf = (key: string) =>
        (
          (placements.objects.get(key)?.status as { clusters?: { state: string }[] } | undefined)?.clusters ?? []
        ).filter((c) => c.state === 'ACTIVE').length;
      await waitFor('every placement on the 4 blue clusters', () => keys.every((k) => clustersOf(k) === 4), 60_000);
      const owned = async () => Promise.all(replicas.map((r) => r.call<number>('owned')));
      // ceil(8 / 3) = 3 at most each: 3 + 3 + 2.
      const balanced = await waitFor(
        'the shards shared out',
        async () => {
          const counts = await owned();
          return counts.reduce((a, b) => a + b, 0) === SHARDS && counts.every((n) => n >= 2 && n <= 3) && counts;
        },
        30_000,
      );

      // The change: the green clusters join the pool one by one; every placement gains each of them.
      const victim = 1;
      let killedAt = 0;
      const changeStarted = performance.now();
      for (let i = FIRST_BLUE; i < PROFILES; i++) {
        await fleet.labelProfile('fleet-shard', profileName(i), { pool: 'blue' });
        if (i === FIRST_BLUE + 3) {
          // In the middle: some placements already show this step, not all, and the victim has written
          // some of it (killed before its first write, it would not be a writer at all).
          await waitFor(
            'the change under way, the victim writing it',
            () =>
              keys.some((k) => clustersOf(k) > FIRST_BLUE + 1) &&
              writes.some((w) => w.writer === identities[victim] && w.at > changeStarted),
            30_000,
          );
          replicas[victim]!.child.kill('SIGKILL');
          killedAt = performance.now();
        }
      }
      const lastBeforeKill = new Map<number, LeaseVersion>();
      for (const v of leaseHistory) if (v.at <= killedAt) lastBeforeKill.set(v.shard, v);
      const victimShards = [...lastBeforeKill.values()]
        .filter((v) => v.holder === identities[victim])
        .map((v) => v.shard);
      await waitFor('every placement on all 12 clusters', () => keys.every((k) => clustersOf(k) === PROFILES), 60_000);
      await waitFor(
        'every PlacementDecision lists 12 clusters',
        async () => {
          const decisions = await Promise.all(APPS.map((ns) => fleet.decisions(ns)));
          const listed = decisions.flat().map((d) => (d.decisions as unknown[] | undefined)?.length ?? 0);
          return listed.length === keys.length && listed.every((n) => n === PROFILES);
        },
        30_000,
      );

      // Takeover: from the kill to the first version of each of its Leases held by a survivor.
      const takeoverMs = victimShards.map((shard) => {
        const next = leaseHistory.find(
          (v) => v.shard === shard && v.at > killedAt && v.holder !== '' && v.holder !== identities[victim],
        );
        return next ? next.at - killedAt : Infinity;
      });
      // The holder of a shard at a write: the Lease's latest version before it, by resourceVersion.
      const holderAt = (shard: number, rv: number) =>
        leaseHistory
          .filter((v) => v.shard === shard && v.rv < rv)
          .reduce<LeaseVersion | undefined>((last, v) => (!last || v.rv > last.rv ? v : last), undefined)?.holder;
      const violations = writes.filter((w) => holderAt(shardOf(w.key, SHARDS), w.rv) !== w.writer);
      const writers = new Set(writes.map((w) => w.writer));
      const afterKill = writes.filter((w) => w.at > killedAt + 500);
      const final = keys.map((k) => {
        const p = placements.objects.get(k)!;
        const status = p.status as { observedGeneration?: number; clusters?: { state: string }[] };
        return status.observedGeneration === p.metadata?.generation && clustersOf(k) === PROFILES;
      });
      const firstWriteMs = victimShards.map((shard) => {
        const first = writes.find(
          (w) => w.at > killedAt && w.writer !== identities[victim] && shardOf(w.key, SHARDS) === shard,
        );
        return first ? (first.at - killedAt).toFixed(0) : 'none needed';
      });
      const bound = ELECTION.leaseDurationMs + 2 * 1.2 * ELECTION.retryPeriodMs;
      console.log(
        `[bench] 3 replicas, ${SHARDS} shards: balanced ${balanced.join('+')}; ${writes.length} status writes ` +
          `(${identities.map((id) => writes.filter((w) => w.writer === id).length).join(' + ')} by a, b, c; b killed); ` +
          `the killed replica's ${victimShards.length} shards taken over after ${takeoverMs.map((ms) => ms.toFixed(0)).join(', ')} ms, ` +
          `first status write there by a survivor after ${firstWriteMs.join(', ')} ms ` +
          `(lease ${ELECTION.leaseDurationMs} ms, retry ${ELECTION.retryPeriodMs} ms)`,
      );
      expect({
        watchesRan: leases.ended === undefined && placements.ended === undefined,
        victimHeldShards: victimShards.length > 0,
        takenOverInTime: takeoverMs.every((ms) => ms <= bound + 1_000),
        writersAreReplicas: [...writers].every((w) => identities.includes(String(w))),
        everyReplicaWrote: identities.every((id) => writers.has(id)),
        violations,
        victimWroteAfterKill: afterKill.filter((w) => w.writer === identities[victim]),
        lost: keys.filter((_, i) => !final[i]),
      }).toEqual({
        watchesRan: true,
        victimHeldShards: true,
        takenOverInTime: true,
        writersAreReplicas: true,
        everyReplicaWrote: true,
        violations: [],
        victimWroteAfterKill: [],
        lost: [],
      });
    } finally {
      for (const r of replicas) r.child.kill('SIGKILL');
      leases.stop();
      placements.stop();
    }
  }, 240_000);
});
