import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/cli.js';
import { changeTaints, parseTaintChange } from '../src/commands/taint.js';
import { main } from '../src/main.js';

const example = new URL('../../../examples/decide/stockout.yaml', import.meta.url).pathname;

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe('mco explain -f', () => {
  it('prints a table per ClusterProfile: eligibility or exclusion, priority, score, signal, state and why', async () => {
    const { code, stdout, stderr } = await mco('explain', '-f', example);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'placement default/gemma-inference at 2026-01-01T12:00:00Z',
      'Valid: True (Valid): the spec is valid',
      expect.stringMatching(/^Satisfied: True \(HeadroomAvailable\)/),
    ]);
    expect(lines.find((l) => l.startsWith('CLUSTER'))).toMatch(
      /^CLUSTER +ELIGIBLE +PRIORITY +SCORE +SIGNAL +STATE +WHY$/,
    );
    expect(lines.find((l) => l.startsWith('fleet/us-east1'))).toMatch(
      /^fleet\/us-east1 +yes +1 +50 +fresh, at ceiling +ACTIVE -> ACTIVE +3 pending pod\(s\) and a FailedScaleUp$/,
    );
    expect(lines.find((l) => l.startsWith('fleet/us-west1'))).toMatch(/- -> ACTIVE +P1: headroom 0 < min 1/);
  });

  it('-o json is the explanation, whose decision is what mco decide prints', async () => {
    const explained = JSON.parse((await mco('explain', '-f', example, '-o', 'json')).stdout);
    const decided = JSON.parse((await mco('decide', '-f', example)).stdout);
    expect(explained.decision).toEqual(decided);
    expect(explained.clusters.map((c: { cluster: string; eligible: boolean }) => [c.cluster, c.eligible])).toEqual(
      expect.arrayContaining([['fleet/us-east1', true]]),
    );
  });

  it('bad usage exits 2 naming the problem', async () => {
    expect(await mco('explain')).toMatchObject({ code: 2, stderr: expect.stringContaining('give either -f') });
    expect(await mco('explain', '-f', example, '-o', 'yaml')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('-o yaml: expected table or json'),
    });
    const dir = mkdtempSync(join(tmpdir(), 'mco-explain-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ now: 'yesterday', placement: { metadata: { name: 'p' } } }));
    expect(await mco('explain', '-f', bad)).toMatchObject({ code: 2, stderr: expect.stringContaining('now') });
  });
});

describe('kubectl-like taint arguments', () => {
  it.each([
    ['maintenance:NoSelect', { add: { key: 'maintenance', effect: 'NoSelect' } }],
    ['maintenance=kernel:NoSelectIfNew', { add: { key: 'maintenance', value: 'kernel', effect: 'NoSelectIfNew' } }],
    [
      'example.com/spot=a=b:PreferNoSelect',
      { add: { key: 'example.com/spot', value: 'a=b', effect: 'PreferNoSelect' } },
    ],
    ['maintenance-', { remove: { key: 'maintenance', effect: undefined } }],
    ['maintenance:NoSelect-', { remove: { key: 'maintenance', effect: 'NoSelect' } }],
  ])('%s', (text, change) => {
    expect(parseTaintChange(text)).toEqual(change);
  });

  it.each([
    ['maintenance', 'expected KEY[=VALUE]:EFFECT or KEY[:EFFECT]-'],
    ['maintenance:NoExecute', 'unknown effect "NoExecute"'],
    ['bad key!:NoSelect', 'is not a valid key'],
    ['a:b:c-', 'expected KEY[:EFFECT]-'],
  ])('%s is a usage error', (text, message) => {
    expect(() => parseTaintChange(text)).toThrow(UsageError);
    expect(() => parseTaintChange(text)).toThrow(message);
  });

  const NOW = new Date('2026-01-01T00:00:00.500Z');
  it('adds with timeAdded, keeps an identical taint, needs --overwrite for another value, removes by key or key:effect', () => {
    const added = changeTaints(
      [],
      [parseTaintChange('m=x:NoSelect'), parseTaintChange('m:PreferNoSelect')],
      NOW,
      false,
    );
    expect(added).toEqual([
      { key: 'm', value: 'x', effect: 'NoSelect', timeAdded: '2026-01-01T00:00:00Z' },
      { key: 'm', effect: 'PreferNoSelect', timeAdded: '2026-01-01T00:00:00Z' },
    ]);
    expect(changeTaints(added, [parseTaintChange('m=x:NoSelect')], new Date(0), false)).toEqual(added);
    expect(() => changeTaints(added, [parseTaintChange('m=y:NoSelect')], NOW, false)).toThrow('use --overwrite');
    expect(changeTaints(added, [parseTaintChange('m=y:NoSelect')], NOW, true)[0]).toMatchObject({ value: 'y' });
    expect(changeTaints(added, [parseTaintChange('m:NoSelect-')], NOW, false)).toEqual([added[1]]);
    expect(changeTaints(added, [parseTaintChange('m-')], NOW, false)).toEqual([]);
    expect(() => changeTaints(added, [parseTaintChange('other-')], NOW, false)).toThrow('taint other not found');
  });
});
