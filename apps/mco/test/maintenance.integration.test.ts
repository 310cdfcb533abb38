import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { KubeObject } from '@mco/kube-runtime';
import { main } from '../src/main.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { describeWithHub, FakeSignalSource, waitFor } from '../../../packages/controller/test/support.js';
import { testController, useControllerHub } from '../../../packages/controller/test/support-controller.js';

// Cluster maintenance (docs/placement-rules.md §10.1) end to end: profiles declared by the
// manual provider, `mco clusters drain|uncordon|cordon|taint` writing the taints
// annotation with their own field manager, the controller evicting and
// replacing, the provider's next sync leaving the annotation alone.

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const TAINTS = 'mco.x-k8s.io/taints';
const autoscaling = (maxClusters: number) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'Exists' } }] }],
      },
    },
  },
  scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, maxClusters, useDraining: true } },
});

describeWithHub('cluster maintenance on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('drain evicts a cluster from every placement (draining, replacements where maxClusters allows), the provider leaves the taint alone, uncordon brings it back', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('fleet');
    await fleet.namespace('apps');
    const dir = mkdtempSync(join(tmpdir(), 'mco-maintenance-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    const clusters = join(dir, 'clusters.yaml');
    writeFileSync(
      clusters,
      ['a', 'b', 'c']
        .map((n) => `  - {name: ${n}, labels: {gpu: l4}, server: "https://${n}.example:6443"}`)
        .join('\n')
        .replace(/^/, 'clusters:\n'),
    );
    expect(await mco('clusters', 'apply', '-f', clusters, '--kubeconfig', kubeconfig)).toMatchObject({ code: 0 });

    const source = new FakeSignalSource();
    for (const c of ['a', 'b', 'c']) source.set(`fleet/${c}`, { hpa: { currentReplicas: 4, maxReplicas: 10 } });
    env.start(testController(hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }));
    await fleet.createPlacement('apps', 'p1', autoscaling(0));
    await fleet.createPlacement('apps', 'p2', autoscaling(3));
    await fleet.createPlacement('apps', 'p3', autoscaling(1));
    const states = async () =>
      Object.fromEntries(await Promise.all(['p1', 'p2', 'p3'].map(async (p) => [p, await fleet.states('apps', p)])));
    const until = async (what: string, expected: Record<string, string[]>) =>
      waitFor(what, async () => JSON.stringify(await states()) === JSON.stringify(expected) && expected, 60_000);
    await until('every placement on a', { p1: ['fleet/a:ACTIVE'], p2: ['fleet/a:ACTIVE'], p3: ['fleet/a:ACTIVE'] });

    const drain = await mco('clusters', 'drain', 'fleet/a', '--kubeconfig', kubeconfig);
    expect(drain).toMatchObject({ code: 0, stdout: 'fleet/a drained; taints: mco.x-k8s.io/drained:NoSelect\n' });
    // IDE placements too: a NoSelect taint is an explicit request to move. p3 (maxClusters 1) has no room for b.
    await until('a evicted everywhere, replaced where maxClusters allows', {
      p1: ['fleet/b:ACTIVE', 'fleet/a:EVICTING'],
      p2: ['fleet/b:ACTIVE', 'fleet/a:EVICTING'],
      p3: ['fleet/a:EVICTING'],
    });
    const evicting = ((await fleet.placement('apps', 'p1')).status as { clusters: Record<string, unknown>[] })
      .clusters[1]!;
    expect(evicting).toMatchObject({
      state: 'EVICTING',
      reason: 'Tainted',
      message: 'no longer eligible: the taint mco.x-k8s.io/drained:NoSelect is not tolerated',
      draining: { desiredMaxReplicas: 4 },
    });
    expect(await fleet.condition('apps', 'p3', 'Satisfied')).toMatchObject({
      status: 'False',
      reason: 'MaxClustersReached',
    });
    const tainted = await waitFor('an E1Tainted Event per placement', async () => {
      const events = (await fleet.events('apps')).filter((e) => e.reason === 'E1Tainted');
      return events.length >= 3 && events;
    });
    expect(tainted[0]!.message).toContain('fleet/a: ACTIVE -> EVICTING: no longer eligible: the taint');

    // `mco explain`, live from the hub: the same verdict, and the taint as the exclusion.
    const explained = await mco('explain', 'p1', '-n', 'apps', '--kubeconfig', kubeconfig, '-o', 'json');
    expect(explained.code).toBe(0);
    const clustersOf = (JSON.parse(explained.stdout) as { clusters: Record<string, unknown>[] }).clusters;
    expect(clustersOf.find((c) => c.cluster === 'fleet/a')).toMatchObject({
      eligible: false,
      excludedBy: 'the taint mco.x-k8s.io/drained:NoSelect is not tolerated',
      stateBefore: 'EVICTING',
      state: 'EVICTING',
    });

    // The provider's next sync (server-side apply of what it owns) neither fights nor removes the annotation.
    const profile = async () =>
      (await hub.custom.getNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        plural: 'clusterprofiles',
        namespace: 'fleet',
        name: 'a',
      })) as KubeObject & {
        metadata: { annotations?: Record<string, string>; managedFields?: { manager?: string }[] };
      };
    const resync = await mco('clusters', 'apply', '-f', clusters, '--kubeconfig', kubeconfig);
    expect(resync.code).toBe(0);
    expect(resync.stdout).toContain('unchanged  fleet/a');
    expect(resync.stdout).toContain('(0 writes)');
    expect(JSON.parse((await profile()).metadata.annotations![TAINTS]!)).toMatchObject([
      { key: 'mco.x-k8s.io/drained', effect: 'NoSelect' },
    ]);
    const managers = ((await profile()).metadata.managedFields ?? []).map((m) => m.manager);
    expect(managers).toContain('mco-clusters-taint');

    // Uncordon: eligible again, EVICTING -> ACTIVE (E2) while it is still listed.
    expect(await mco('clusters', 'uncordon', 'fleet/a', '--kubeconfig', kubeconfig)).toMatchObject({ code: 0 });
    expect((await profile()).metadata.annotations?.[TAINTS]).toBeUndefined();
    await until('a eligible again', {
      p1: ['fleet/a:ACTIVE', 'fleet/b:ACTIVE'],
      p2: ['fleet/a:ACTIVE', 'fleet/b:ACTIVE'],
      p3: ['fleet/a:ACTIVE'],
    });

    // Cordon: listed placements keep a, a new placement is not put there.
    expect(await mco('clusters', 'cordon', 'a', '--kubeconfig', kubeconfig)).toMatchObject({ code: 0 });
    await fleet.createPlacement('apps', 'p4', autoscaling(0));
    await waitFor('p4 on b, not on the cordoned a', async () => {
      const p4 = await fleet.states('apps', 'p4');
      return JSON.stringify(p4) === JSON.stringify(['fleet/b:ACTIVE']) && p4;
    });
    expect(await fleet.states('apps', 'p1')).toEqual(['fleet/a:ACTIVE', 'fleet/b:ACTIVE']);
    const removed = await mco('clusters', 'taint', 'a', 'mco.x-k8s.io/cordoned-', '--kubeconfig', kubeconfig);
    expect(removed).toMatchObject({ code: 0, stdout: 'fleet/a tainted; taints: none\n' });
  }, 180_000);

  it("live mco explain applies the controller's tenant isolation: a cross-namespace workload is invalid, a source not serving the namespace is not asked", async () => {
    const { fleet, hub } = env;
    await fleet.namespace('edge');
    await fleet.namespace('team-a');
    await fleet.createProfile('edge', 'x', { gpu: 'l4' });
    const dir = mkdtempSync(join(tmpdir(), 'mco-explain-tenancy-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    const sources = join(dir, 'signal-sources.yaml');
    writeFileSync(
      sources,
      'defaultSource: team-b\nsources:\n  - {name: team-b, plugin: kubernetes, placementNamespaces: [team-b]}\n',
    );
    env.start(testController(hub.controllerKubeConfig()));
    const spec = (namespace: string) => {
      const s = autoscaling(0);
      return {
        ...s,
        scaling: {
          autoscaleForCapacity: {
            ...s.scaling.autoscaleForCapacity,
            workloadDetails: { namespace, deploymentName: 'web', hpaName: 'web' },
          },
        },
      };
    };
    await fleet.createPlacement('team-a', 'steal', spec('team-b'));
    await fleet.createPlacement('team-a', 'own', spec('team-a'));
    const valid = await waitFor('the controller judged the cross-namespace placement', async () => {
      const c = await fleet.condition('team-a', 'steal', 'Valid');
      return c?.status === 'False' && c;
    });
    expect(valid.reason).toBe('CrossNamespaceWorkload');
    await waitFor('own placed on a', async () => (await fleet.states('team-a', 'own')).length === 1);

    const explainJson = async (name: string, ...flags: string[]) => {
      const r = await mco('explain', name, '-n', 'team-a', '--kubeconfig', kubeconfig, '-o', 'json', ...flags);
      expect(r.code).toBe(0);
      return { ...r, explanation: JSON.parse(r.stdout) as { valid?: { status: string; reason: string } } };
    };
    // The controller's verdict: invalid, no cluster changes.
    const steal = await explainJson('steal', '--signal-sources', sources);
    expect(steal.explanation.valid).toMatchObject({ status: 'False', reason: 'CrossNamespaceWorkload' });
    expect(steal.stderr).toBe('');
    // The flag mirrors the controller's --allow-cross-namespace-workloads.
    const allowed = await explainJson('steal', '--allow-cross-namespace-workloads');
    expect(allowed.explanation.valid).toMatchObject({ status: 'True' });
    // team-b's source serves team-b only: not asked for team-a's placement, every signal missing.
    const own = await explainJson('own', '--signal-sources', sources);
    expect(own.explanation.valid).toMatchObject({ status: 'True' });
    expect(own.stderr).toBe(
      'mco explain: signal source "team-b" does not serve namespace "team-a" (its placementNamespaces): every signal reads as missing\n',
    );
  }, 180_000);

  it('live mco explain without --signal-sources reports Satisfied as a controller without signal sources writes it', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('nosource');
    await fleet.createProfile('nosource', 'n1', { gpu: 'l4' });
    const dir = mkdtempSync(join(tmpdir(), 'mco-explain-nosource-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    env.start(testController(hub.controllerKubeConfig()));
    await fleet.createPlacement('nosource', 'auto', autoscaling(0));
    const written = await waitFor('the controller wrote Satisfied', async () => {
      const c = await fleet.condition('nosource', 'auto', 'Satisfied');
      return c?.reason === 'NoSignalSource' && c;
    });
    const r = await mco('explain', 'auto', '-n', 'nosource', '--kubeconfig', kubeconfig, '-o', 'json');
    const explained = (JSON.parse(r.stdout) as { satisfied: object }).satisfied;
    expect({ code: r.code, satisfied: explained }).toEqual({
      code: 0,
      satisfied: { status: written.status, reason: written.reason, message: written.message },
    });
  }, 180_000);
});
