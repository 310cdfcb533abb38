import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import type { CapacityRequest, CapacitySource } from '@mco/runtime';
import { silentLogger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { expect, it, vi } from 'vitest';
import type * as Core from '@mco/core';
import type { DecideInput } from '@mco/core';
import { createSignalSources } from '../src/commands/controller.js';
import { main } from '../src/main.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { describeWithHub, FakeSignalSource, waitFor } from '../../../packages/controller/test/support.js';
import { testController, useControllerHub } from '../../../packages/controller/test/support-controller.js';

// What the engine is handed: decide is observed, never replaced.
const decided = vi.hoisted(() => [] as DecideInput[]);
vi.mock('@mco/core', async (importOriginal) => {
  const core = await importOriginal<typeof Core>();
  return {
    ...core,
    decide: (input: DecideInput) => {
      decided.push(input);
      return core.decide(input);
    },
  };
});

const PROPERTY = 'capacity.example.com/spare-replicas';

describeWithHub('capacity sources configured in the signal sources file, on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('asks the cluster-property source about the next 3 scale-out candidates, with the placed cluster, and hands its answers to the engine; a source for other namespaces is never asked', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('shop');
    await fleet.namespace('fleet-cap');
    for (const name of ['c1', 'c2', 'c3', 'c4', 'c5']) await fleet.createProfile('fleet-cap', name, { cap: 'yes' });
    // A provider's properties: c2 is full, c3 has room for 5, c4 says nothing.
    const lastObservedTime = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    for (const [name, value] of [
      ['c2', '0'],
      ['c3', '5'],
    ] as const) {
      const profile = (await hub.custom.getNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        plural: 'clusterprofiles',
        namespace: 'fleet-cap',
        name,
      })) as { status?: object };
      await hub.custom.replaceNamespacedCustomObjectStatus({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        plural: 'clusterprofiles',
        namespace: 'fleet-cap',
        name,
        body: { ...profile, status: { properties: [{ name: PROPERTY, value, lastObservedTime }] } },
      });
    }
    const file = join(mkdtempSync(join(tmpdir(), 'mco-capacity-')), 'sources.yaml');
    writeFileSync(
      file,
      [
        'capacitySources:',
        `  - {name: inventory, plugin: cluster-property, config: {property: ${PROPERTY}}, placementNamespaces: [shop]}`,
        `  - {name: other-team, plugin: cluster-property, config: {property: ${PROPERTY}}, placementNamespaces: [team-b]}`,
      ].join('\n'),
    );
    const registry = new Registry();
    const kubeConfig = hub.controllerKubeConfig();
    const sources = await createSignalSources(file, connectionFromKubeConfig(kubeConfig), registry, silentLogger);
    // Each request is recorded on its way to the real source.
    const requests = new Map<string, CapacityRequest[]>();
    const recorded = new Map(
      [...sources.capacity.byName].map(([name, source]): [string, CapacitySource] => [
        name,
        {
          answer: (request, abort) => {
            requests.set(name, [...(requests.get(name) ?? []), request]);
            return source.answer(request, abort);
          },
        },
      ]),
    );
    const signals = new FakeSignalSource();
    env.start(
      testController(kubeConfig, {
        sources: { members: signals },
        defaultSignalSource: 'members',
        capacitySources: recorded,
        capacitySourceNamespaces: sources.capacity.namespaces,
        capacityCandidates: sources.capacity.candidates,
      }),
    );
    await fleet.createPlacement('shop', 'web', {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [
              { matchExpressions: [{ labelSelector: { key: 'cap', operator: 'In', values: ['yes'] } }] },
            ],
          },
        },
      },
      scaling: {
        autoscaleForCapacity: {
          minClustersBelowCapacityCeiling: 1,
          workloadDetails: { deploymentName: 'web', hpaName: 'web' },
        },
      },
    });
    await waitFor('one cluster listed', async () => (await fleet.states('shop', 'web')).length === 1);
    const asked = await waitFor('a request with a placed cluster', async () =>
      requests.get('inventory')?.find((r) => r.placed.length === 1),
    );
    const answered = await waitFor('the engine handed capacity answers about the candidates', async () =>
      decided.findLast((d) => d.placement.metadata.name === 'web' && d.capacity?.length === 3),
    );
    expect({
      placed: asked.placed.map((c) => c.key),
      candidates: asked.clusters.map((c) => c.key),
      capacity: answered.capacity!.map(({ cluster, addableReplicas, observedAt, reason, source }) => ({
        cluster,
        addableReplicas,
        observedAtIsTheProperty: observedAt === new Date(lastObservedTime).toISOString(),
        reason,
        source,
      })),
      otherTeamAsked: requests.has('other-team'),
    }).toEqual({
      placed: ['fleet-cap/c1'],
      candidates: ['fleet-cap/c2', 'fleet-cap/c3', 'fleet-cap/c4'],
      capacity: [
        {
          cluster: 'fleet-cap/c2',
          addableReplicas: 0,
          observedAtIsTheProperty: true,
          reason: `property ${PROPERTY} is 0`,
          source: 'inventory',
        },
        {
          cluster: 'fleet-cap/c3',
          addableReplicas: 5,
          observedAtIsTheProperty: true,
          reason: `property ${PROPERTY} is 5`,
          source: 'inventory',
        },
        {
          cluster: 'fleet-cap/c4',
          addableReplicas: undefined,
          observedAtIsTheProperty: false,
          reason: `no property ${PROPERTY} on the ClusterProfile`,
          source: 'inventory',
        },
      ],
      otherTeamAsked: false,
    });
    // c1 was a candidate too, in the first evaluation, before anything was listed.
    const answers = (await registry.getSingleMetric('mco_capacity_answers_total')!.get()).values;
    expect(new Set(answers.map((v) => `${v.labels.cluster} ${v.labels.result}`))).toEqual(
      new Set(['fleet-cap/c1 unknown', 'fleet-cap/c2 known', 'fleet-cap/c3 known', 'fleet-cap/c4 unknown']),
    );
  }, 60_000);

  it('live mco explain asks the capacity sources of the --signal-sources file as the controller does: a candidate whose property says 0 is passed over (NoCapacity)', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('explain-cap');
    await fleet.namespace('fleet-x');
    for (const name of ['a', 'b']) await fleet.createProfile('fleet-x', name, { cap: 'x' });
    // A provider says a is full; b says nothing (unknown: today's order).
    const profile = (await hub.custom.getNamespacedCustomObject({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'clusterprofiles',
      namespace: 'fleet-x',
      name: 'a',
    })) as { status?: object };
    const lastObservedTime = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    await hub.custom.replaceNamespacedCustomObjectStatus({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'clusterprofiles',
      namespace: 'fleet-x',
      name: 'a',
      body: {
        ...profile,
        status: { ...profile.status, properties: [{ name: PROPERTY, value: '0', lastObservedTime }] },
      },
    });
    const dir = mkdtempSync(join(tmpdir(), 'mco-explain-capacity-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    const file = join(dir, 'sources.yaml');
    writeFileSync(
      file,
      [
        'defaultSource: members',
        'sources:',
        '  - {name: members, plugin: kubernetes, placementNamespaces: [explain-cap]}',
        'capacitySources:',
        `  - {name: inventory, plugin: cluster-property, config: {property: ${PROPERTY}}, placementNamespaces: [explain-cap]}`,
      ].join('\n'),
    );
    await fleet.createPlacement('explain-cap', 'web', {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [
              { matchExpressions: [{ labelSelector: { key: 'cap', operator: 'In', values: ['x'] } }] },
            ],
          },
        },
      },
      scaling: {
        autoscaleForCapacity: {
          minClustersBelowCapacityCeiling: 1,
          workloadDetails: { deploymentName: 'web', hpaName: 'web' },
        },
      },
    });
    const explain = async (...flags: string[]) => {
      let stdout = '';
      let stderr = '';
      const argv = ['explain', 'web', '-n', 'explain-cap', '--kubeconfig', kubeconfig, ...flags];
      const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
      return { code, stdout, stderr };
    };
    const table = await explain('--signal-sources', file);
    const passedOver = `capacity source inventory answered 0 addable replica(s) < 1 needed: property ${PROPERTY} is 0`;
    const rows = table.stdout.split('\n').filter((l) => l.startsWith('fleet-x/'));
    expect({ code: table.code, stderr: table.stderr, rows: rows.map((r) => r.replace(/ +/g, ' ')) }).toEqual({
      code: 0,
      stderr: '',
      rows: [
        `fleet-x/a yes 1 0 missing - -> - not added (NoCapacity): ${passedOver}; not added: headroom 1 >= min 1, no cluster needed`,
        'fleet-x/b yes 2 0 missing - -> ACTIVE P1: headroom 0 < min 1: added the highest-priority eligible cluster (passed over for NoCapacity: fleet-x/a)',
      ],
    });
    expect(table.stdout).toContain(`passed over for NoCapacity: fleet-x/a (${passedOver})`);
  }, 60_000);
});
