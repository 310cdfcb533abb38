import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithControlPlane, renderChart, requireTool } from '@mco/testkit';
import { expect, it } from 'vitest';
import { builtMco } from './built.js';

const APP = new URL('..', import.meta.url).pathname;

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
}
const controllerContainer = (values: Record<string, string> = {}): Container => {
  const deployment = renderChart(values).find(
    (o) => o.kind === 'Deployment' && o.metadata?.labels?.['app.kubernetes.io/component'] === 'controller',
  ) as { spec: { template: { spec: { containers: Container[] } } } } | undefined;
  return deployment!.spec.template.spec.containers.find((c) => c.name === 'controller')!;
};

describeWithControlPlane("the chart's controller process", { tools: ['helm'] }, () => {
  it("runs the image's entrypoint with controller.nodeFlags on node's command line, and node accepts them", () => {
    const container = controllerContainer();
    const nodeOptions = container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    const entrypoint = JSON.parse(
      /^ENTRYPOINT (.*)$/m.exec(readFileSync(join(APP, 'Dockerfile'), 'utf8'))![1]!,
    ) as string[];
    expect({
      command: container.command,
      nodeOptions,
    }).toEqual({
      command: [entrypoint[0], '--no-maglev', ...entrypoint.slice(1)],
      nodeOptions: '--max-semi-space-size=1 --max-old-space-size=64',
    });
    // The same command line on the built bundle (NODE_OPTIONS refuses --no-maglev; node's argv does not).
    const run = spawnSync(
      process.execPath,
      [...container.command!.slice(1, -1), builtMco(), ...container.args!.slice(0, 1), '--help'],
      { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: nodeOptions }, timeout: 60_000 },
    );
    expect({ status: run.status, stderr: run.stderr, usage: run.stdout.includes('mco controller') }).toEqual({
      status: 0,
      stderr: '',
      usage: true,
    });
  });

  it("sizes V8's heap by fleetSize: semi-spaces of 16 MiB from large on (fewer young-generation collections under load)", () => {
    const nodeOptions = (fleetSize: string) =>
      controllerContainer({ fleetSize }).env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    expect(['small', 'medium', 'large', 'xlarge'].map(nodeOptions)).toEqual([
      '--max-semi-space-size=1 --max-old-space-size=64',
      '--max-semi-space-size=1 --max-old-space-size=128',
      '--max-semi-space-size=16 --max-old-space-size=320',
      '--max-semi-space-size=16 --max-old-space-size=640',
    ]);
  });

  it('runs replicaCount 3 over the shards: --shards, the Lease RBAC for every shard, a PodDisruptionBudget; refuses 0 shards', () => {
    const objects = renderChart({ replicaCount: '3', 'controller.leaderElection.shards': '4' });
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === 'mco-controller') as
      { spec: { replicas: number; template: { spec: { containers: Container[] } } } } | undefined;
    const lock = objects.find((o) => o.kind === 'Role' && o.metadata?.name?.endsWith('.leader-election')) as
      { rules: { resourceNames?: string[]; verbs: string[] }[] } | undefined;
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget') as
      { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } } | undefined;
    const single = renderChart({ replicaCount: '1' }).filter((o) => o.kind === 'PodDisruptionBudget');
    const refused = spawnSync(
      requireTool('helm'),
      ['template', 'mco', join(APP, 'chart'), '--set', 'controller.leaderElection.shards=0'],
      { encoding: 'utf8' },
    );
    expect({
      replicas: deployment?.spec.replicas,
      shards: deployment?.spec.template.spec.containers[0]?.args?.filter((a) => a.startsWith('--shards')),
      leases: lock?.rules.map((r) => [r.resourceNames ?? [], r.verbs]),
      pdb: pdb && { maxUnavailable: pdb.spec.maxUnavailable, selects: pdb.spec.selector.matchLabels },
      single,
      refused: refused.stderr.includes('controller.leaderElection.shards must be at least 1'),
    }).toEqual({
      replicas: 3,
      shards: ['--shards=4'],
      leases: [
        [[], ['create']],
        [
          [
            'mco-controller',
            'mco-controller-1',
            'mco-controller-2',
            'mco-controller-3',
            'mco-controller-members',
            'mco-controller-inventory-loss',
          ],
          ['get', 'update'],
        ],
        [['mco-controller-inventory-loss'], ['list', 'watch']],
      ],
      pdb: {
        maxUnavailable: 1,
        selects: {
          'app.kubernetes.io/name': 'mco',
          'app.kubernetes.io/instance': 'mco',
          'app.kubernetes.io/component': 'controller',
        },
      },
      single: [],
      refused: true,
    });
  });

  it('keeps the image entrypoint when controller.nodeFlags is empty', () => {
    expect(controllerContainer({ 'controller.nodeFlags': 'null' }).command).toBeUndefined();
  });
});
