import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithControlPlane, renderChart } from '@mco/testkit';
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

  it('keeps the image entrypoint when controller.nodeFlags is empty', () => {
    expect(controllerContainer({ 'controller.nodeFlags': 'null' }).command).toBeUndefined();
  });
});
