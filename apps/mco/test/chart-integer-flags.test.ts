import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithControlPlane, helmTemplate } from '@mco/testkit';
import { expect, it } from 'vitest';
import { parseIntegerFlag } from '../src/cli.js';

// Helm reads numbers in a values file as float64 and prints those of a million or more in e-notation
// (1.048576e+06), which the commands' integer flags refuse: the chart renders each with `int`.
const VALUES = `
controller:
  workers: 16
  leaderElection:
    shards: 12
argocd:
  plugin:
    enabled: true
    existingSecret: argocd-plugin-token
    maxBodyBytes: 1048576
configsync:
  enabled: true
  workers: 12
  memberTimeoutSeconds: 1000000
  statusIntervalSeconds: 86400
flux:
  enabled: true
  providers:
    - name: gke
      execConfig: { apiVersion: client.authentication.k8s.io/v1, command: gke-gcloud-auth-plugin }
      allowedServers: [https://member.example]
  secretHoldTimeoutSeconds: 2592000
`;
const INTEGER_FLAGS = [
  'max-body-bytes',
  'workers',
  'member-timeout',
  'status-interval',
  'secret-hold-timeout',
  'shards',
];

describeWithControlPlane("the chart's integer flags", { tools: ['helm'] }, () => {
  it('render as digits from a values file, a million and more too, and the commands read them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-values-'));
    writeFileSync(join(dir, 'values.yaml'), VALUES);
    const rendered = await helmTemplate(['-f', join(dir, 'values.yaml')]).finally(() =>
      rmSync(dir, { recursive: true, force: true }),
    );
    expect(rendered.stderr).toBe('');
    const flags = [...rendered.stdout.matchAll(/^\s+- --([a-z-]+)=(.*)$/gm)]
      .filter(([, flag]) => INTEGER_FLAGS.includes(flag!))
      .map(([, flag, value]) => ({ flag: flag!, value: value! }))
      .sort((a, b) => `${a.flag}=${a.value}`.localeCompare(`${b.flag}=${b.value}`));
    expect({
      args: flags.map(({ flag, value }) => `${flag}=${value}`),
      read: flags.map(({ flag, value }) => parseIntegerFlag(flag, value, 0)),
    }).toEqual({
      args: [
        'max-body-bytes=1048576',
        'member-timeout=1000000',
        'secret-hold-timeout=2592000',
        'shards=12',
        'status-interval=86400',
        'workers=12',
        'workers=16',
      ],
      read: [1048576, 1000000, 2592000, 12, 86400, 12, 16],
    });
  });

  it("refuses a value that is not an integer, naming it, where Helm's int would render 0", async () => {
    const enable = ['argocd.plugin.enabled=true', 'argocd.plugin.existingSecret=token', 'configsync.enabled=true'];
    const cases = [
      'controller.workers=four',
      'controller.leaderElection.shards=8.5',
      'argocd.plugin.maxBodyBytes=1Mi',
      'configsync.workers=',
      'configsync.memberTimeoutSeconds=2m',
    ];
    const failures = await Promise.all(
      cases.map(async (value) => {
        const rendered = await helmTemplate([...enable.flatMap((v) => ['--set', v]), '--set-string', value]);
        return {
          code: rendered.code,
          error: /Error: .*: (\S+: expected an integer, got .*)/.exec(rendered.stderr)?.[1],
        };
      }),
    );
    const shards = await helmTemplate(['--set-json', 'controller.leaderElection.shards=8.5']);
    expect({ failures, shards: /(\S+: expected an integer, got .*)/.exec(shards.stderr)?.[1] }).toEqual({
      failures: [
        { code: 1, error: 'controller.workers: expected an integer, got "four"' },
        { code: 1, error: 'controller.leaderElection.shards: expected an integer, got "8.5"' },
        { code: 1, error: 'argocd.plugin.maxBodyBytes: expected an integer, got "1Mi"' },
        { code: 1, error: 'configsync.workers: expected an integer, got ""' },
        { code: 1, error: 'configsync.memberTimeoutSeconds: expected an integer, got "2m"' },
      ],
      shards: 'controller.leaderElection.shards: expected an integer, got 8.5',
    });
  });
});
