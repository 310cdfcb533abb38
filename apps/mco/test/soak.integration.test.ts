// The soak in `npm test` (docs/reliability.md, "In npm test"): three minutes
// of seeded, overlapping faults on the real stack (every delivery path), so
// that CI catches a regression the hour-long run would. Seed 27 draws 25
// overlapping faults of all 19 kinds in three minutes; the load moves every
// placement in turn, the autoscaling ones through their signals.
import { join } from 'node:path';
import { describeWithControlPlane } from '@mco/testkit';
import { expect, it, vi } from 'vitest';
import { MAX_EXEMPTED_SHARE } from '../soak/report.js';
import { runSoak, writeReports } from '../soak/run.js';
import { FAULT_KINDS } from '../soak/schedule.js';
import { SCALING_PLACEMENTS, SOAK_TOOLS } from '../soak/stack.js';

vi.setConfig({ testTimeout: 900_000 });

const SEED = 27;

describeWithControlPlane(`the 3-minute soak, seed ${SEED}`, { tools: SOAK_TOOLS }, () => {
  it('injects overlapping faults of every kind and finds no invariant violated, in a run that counts', async () => {
    const result = await runSoak({ minutes: 3, seed: SEED });
    // Kept for a failure seen in CI: the report, its HTML page and the history the checkers judged.
    writeReports(join(import.meta.dirname, '..', 'reports'), SEED, result);
    const { verdict, report, history } = result;
    const faults = history.flatMap((e) => (e.type === 'fault' && e.phase === 'start' ? [e] : []));
    expect(verdict.violations, report).toEqual([]);
    expect(new Set(faults.map((f) => f.kind)).size, report).toBe(FAULT_KINDS.length);
    expect(
      faults.filter((f) => f.error),
      report,
    ).toEqual([]);
    expect(verdict.exemptedShare, report).toBeLessThanOrEqual(MAX_EXEMPTED_SHARE);
    // The load moved each autoscaling placement through its signals, and between them both ways.
    expect(verdict.scaling.map((s) => s.placement).sort(), report).toEqual([...SCALING_PLACEMENTS].sort());
    for (const s of verdict.scaling) expect(s.outs + s.ins, `${s.placement}'s moves\n${report}`).toBeGreaterThan(0);
    expect(
      verdict.scaling.map((s) => s.outs).reduce((a, b) => a + b),
      `scale-outs\n${report}`,
    ).toBeGreaterThan(0);
    expect(
      verdict.scaling.map((s) => s.ins).reduce((a, b) => a + b),
      `scale-ins\n${report}`,
    ).toBeGreaterThan(0);
    // Every fault's effects converged before the run ended.
    expect(
      verdict.convergences.filter((c) => c.ms === undefined),
      report,
    ).toEqual([]);
  });
});
