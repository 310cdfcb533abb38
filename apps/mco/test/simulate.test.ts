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
  it('the demo prints the stockout and fail-back timeline, cost and non-preferred hours, and writes the report it names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-demo-test-'));
    const report = join(dir, 'report.html');
    const { code, stdout, stderr } = await mco('demo', '--report', report);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/P1 +fleet\/us-central1 .*added the highest-priority eligible cluster/);
    expect(stdout).toMatch(/stockout: no new nodes can be provisioned/);
    expect(stdout).toMatch(/P1 +fleet\/us-east4 /);
    expect(stdout).toMatch(/P2 +fleet\/us-east4 +ACTIVE -> SCALING_IN: fail-back: higher-priority fleet\/us-central1/);
    expect(stdout).toMatch(/^GPU cost \(node-hours × gpuHourCost\) +[\d.]+ +[\d.]+ +[\d.]+$/m);
    expect(stdout).toMatch(/^hours on non-preferred clusters +[\d.]+ +[\d.]+ +[\d.]+$/m);
    expect(stdout).toContain(`Report: ${report}`);
    expect(readFileSync(report, 'utf8')).toMatch(/^<!doctype html>/i);
  });

  it('simulate runs a shipped scenario and is deterministic for a seed', async () => {
    const scenario = new URL('../../../examples/scenarios/region-outage.yaml', import.meta.url).pathname;
    const dir = mkdtempSync(join(tmpdir(), 'mco-sim-test-'));
    const first = await mco('simulate', scenario, '--seed', '3', '--report', join(dir, 'a.html'));
    const second = await mco('simulate', scenario, '--seed', '3', '--report', join(dir, 'b.html'));
    expect(first.code).toBe(0);
    expect(first.stdout.replace(/a\.html/g, 'X')).toBe(second.stdout.replace(/b\.html/g, 'X'));
    expect(existsSync(join(dir, 'a.html'))).toBe(true);
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
