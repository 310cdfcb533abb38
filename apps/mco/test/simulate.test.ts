import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/main.js';

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe('mco demo and mco simulate', () => {
  it('the demo prints the stockout timeline, the comparison with the baselines and the verdicts, and writes the report it names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-demo-test-'));
    const report = join(dir, 'report.html');
    const { code, stdout, stderr } = await mco('demo', '--report', report);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Simulating gpu-stockout \(seed 7\): /);
    expect(stdout).toMatch(/P1 +fleet\/us-central1 .*added the highest-priority eligible cluster/);
    expect(stdout).toMatch(/stockout: no new nodes can be provisioned/);
    expect(stdout).toMatch(/P1 +fleet\/us-east4 /);
    expect(stdout).toMatch(/P2 +fleet\/us-east4 +ACTIVE -> SCALING_IN: wanted scale-in/);
    const figures = (label: string) => new RegExp(`^${label} +[\\d.]+ +[\\d.]+ +[\\d.]+ +[\\d.]+ +[\\d.]+$`, 'm');
    expect(stdout).toMatch(figures('GPU cost \\(node-hours × gpuHourCost\\)'));
    expect(stdout).toMatch(figures('hours on non-preferred clusters'));
    expect(stdout).toMatch(/^ {2}mco vs MCO v0\.2 as documented: (dominates|is dominated|trades off|equivalent): /m);
    expect(stdout).toMatch(/^ {2}mco vs all eligible clusters always on: dominates: cheaper by /m);
    expect(stdout).toContain(`Report: ${report}`);
    expect(readFileSync(report, 'utf8')).toMatch(/^<!doctype html>/i);
  });

  it('simulate runs several seeds: each metric as a mean and a range, and a verdict per baseline', async () => {
    const scenario = new URL('../../../examples/scenarios/fail-back-flapping.yaml', import.meta.url).pathname;
    const dir = mkdtempSync(join(tmpdir(), 'mco-sim-seeds-'));
    const policies = 'mco,mco-v0.2,mco-without-hysteresis';
    const args = ['simulate', scenario, '--quiet', '--seeds', '2', '--seed', '40', '--policies', policies];
    const { code, stdout, stderr } = await mco(...args, '--report', join(dir, 'r.html'));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Simulating fail-back-flapping \(2 seeds, 40–41\): /);
    expect(stdout).toContain('Summary (mean [min–max] over the seeds):');
    expect(stdout).toMatch(/^ +mco +MCO v0\.2 as documented +mco without hysteresis or health$/m);
    expect(stdout).toContain('Verdicts (means over 2 seeds; cost = GPU cost;');
    expect(stdout).toMatch(/^ {2}mco vs mco without hysteresis or health: /m);
    expect(stdout).not.toContain('Timeline');
  });

  it('rejects a bad --seeds or an unknown policy, naming the option', async () => {
    const scenario = new URL('../../../examples/scenarios/fail-back-flapping.yaml', import.meta.url).pathname;
    const seeds = await mco('simulate', scenario, '--seeds', '0');
    expect(seeds.code).toBe(2);
    expect(seeds.stderr).toMatch(/--seeds: expected an integer from 1 to 100, got "0"/);
    const policy = await mco('simulate', scenario, '--policies', 'mco,mco-as-documented');
    expect(policy.code).toBe(2);
    expect(policy.stderr).toMatch(
      /--policies: unknown mco-as-documented; known: mco, mco-fail-back, mco-capacity, mco-v0\.2/,
    );
  });

  it('simulate runs a shipped scenario and is deterministic for a seed', async () => {
    const scenario = new URL('../../../examples/scenarios/region-outage.yaml', import.meta.url).pathname;
    const dir = mkdtempSync(join(tmpdir(), 'mco-sim-test-'));
    const first = await mco('simulate', scenario, '--seed', '3', '--seeds', '1', '--report', join(dir, 'a.html'));
    const second = await mco('simulate', scenario, '--seed', '3', '--seeds', '1', '--report', join(dir, 'b.html'));
    expect(first.code).toBe(0);
    expect(first.stdout.replace(/\/a(-long-view)?\.html/g, '/X$1')).toBe(
      second.stdout.replace(/\/b(-long-view)?\.html/g, '/X$1'),
    );
    expect(existsSync(join(dir, 'a.html'))).toBe(true);
    // region-outage has a 72-hour long view: printed after the short one, with its own report.
    expect(first.stdout).toMatch(/Long view \(72h(00m)?\):/);
    expect(existsSync(join(dir, 'a-long-view.html'))).toBe(true);
  });

  it('exits 2 and names the field for an invalid scenario', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-sim-bad-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'name: Bad Name\ntick: fast\n');
    const { code, stderr } = await mco('simulate', file);
    expect(code).toBe(2);
    expect(stderr).toMatch(/name: /);
    expect(stderr).toMatch(/tick: /);
  });
});
