import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/main.js';

const example = new URL('../../../examples/decide/stockout.yaml', import.meta.url).pathname;

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

function file(name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mco-decide-'));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('mco decide', () => {
  it('decides the stockout example: scales out to the next preferred GPU cluster', async () => {
    const { code, stdout, stderr } = await mco('decide', '-f', example);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.transitions).toEqual([
      {
        cluster: 'fleet/us-west1',
        id: 'P1',
        from: null,
        to: 'ACTIVE',
        reason: 'headroom 0 < min 1: added the highest-priority eligible cluster',
      },
    ]);
    expect(out.status.clusters.map((c: { name: string; state: string }) => `${c.name} ${c.state}`)).toEqual([
      'us-east1 ACTIVE',
      'us-west1 ACTIVE',
    ]);
    expect(out.requeueAfterSeconds).toBe(150);
  });

  it('continues the timeline when an output status is fed back', async () => {
    const first = JSON.parse((await mco('decide', '-f', example)).stdout);
    const input = {
      now: '2026-01-01T12:01:00Z',
      placement: {
        metadata: { name: 'p', namespace: 'default' },
        spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } } },
        status: first.status,
      },
      clusterProfiles: [
        { metadata: { name: 'us-east1', namespace: 'fleet' } },
        { metadata: { name: 'us-west1', namespace: 'fleet' } },
      ],
    };
    const { code, stdout } = await mco('decide', '-f', file('next.json', JSON.stringify(input)));
    expect(code).toBe(0);
    const next = JSON.parse(stdout);
    expect(next.transitions).toEqual([]);
    expect(next.status.lastAdditionTime).toBe('2026-01-01T12:00:00Z');
  });

  it('reports an invalid spec in status.conditions and exits 0', async () => {
    const input = {
      now: '2026-01-01T00:00:00Z',
      placement: {
        metadata: { name: 'p' },
        spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '(' } }] },
      },
      clusterProfiles: [],
    };
    const { code, stdout } = await mco('decide', '-f', file('bad-spec.json', JSON.stringify(input)));
    expect(code).toBe(0);
    expect(JSON.parse(stdout).status.conditions[0]).toMatchObject({
      type: 'Valid',
      status: 'False',
      reason: 'InvalidRegex',
    });
  });

  it.each([
    ['a missing file', ['decide', '-f', '/nonexistent/input.yaml'], /cannot read \/nonexistent\/input\.yaml/],
    ['no -f', ['decide'], /missing -f <input file>/],
    ['an unknown flag', ['decide', '--bogus'], /Unknown option '--bogus'/],
  ])('exits 2 for %s', async (_name, argv, message) => {
    const { code, stderr } = await mco(...argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it.each([
    ['unparsable YAML', 'in.yaml', 'now: [unclosed', /in\.yaml is not valid YAML/],
    ['unparsable JSON', 'in.json', '{"now": ', /in\.json is not valid JSON/],
    ['a missing now', 'in.yaml', 'placement: {metadata: {name: p}}', /invalid input .*: now: /],
    [
      'a malformed timestamp',
      'in.yaml',
      'now: yesterday\nplacement: {metadata: {name: p}}',
      /now: expected an RFC 3339 timestamp/,
    ],
    [
      'a ClusterProfile without a name',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}}\nclusterProfiles: [{metadata: {namespace: fleet}}]',
      /clusterProfiles\[0\]\.metadata\.name: /,
    ],
    [
      'a signal with a negative pending pod count',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}}\nsignals: [{cluster: fleet/a, observedAt: "2026-01-01T00:00:00Z", pendingPods: -1}]',
      /signals\[0\]\.pendingPods: /,
    ],
    [
      'a status cluster with an unknown state',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}, status: {clusters: [{name: a, state: RUNNING, lastTransitionTime: "2026-01-01T00:00:00Z"}]}}',
      /placement\.status\.clusters\[0\]\.state: /,
    ],
  ])('exits 2 naming the field for %s', async (_name, fileName, content, message) => {
    const { code, stderr, stdout } = await mco('decide', '-f', file(fileName, content));
    expect(stdout).toBe('');
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('prints help for the command and for mco itself', async () => {
    expect((await mco('decide', '--help')).stdout).toMatch(/^Usage: mco decide -f <input\.\(json\|yaml\)>/);
    const top = await mco('--help');
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/decide +Evaluate one placement/);
    expect((await mco('nope')).code).toBe(2);
  });
});
