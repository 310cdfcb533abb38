// The soak catches a broken delivery (docs/reliability.md): on the real stack,
// with `broken: 'delete-on-doubt'` the harness plays an adapter that deletes
// a member's workload when that member's apiserver comes back from an
// outage. Invariant (a) must flag that deletion within one soak minute.
import { describeWithControlPlane } from '@mco/testkit';
import { expect, it, vi } from 'vitest';
import { runSoak } from '../soak/run.js';
import { SOAK_TOOLS } from '../soak/stack.js';

vi.setConfig({ testTimeout: 900_000 });

describeWithControlPlane('the soak against a delivery that deletes on doubt', { tools: SOAK_TOOLS }, () => {
  it('reports a violation of invariant (a) naming the deleted object, within one soak minute', async () => {
    const { verdict, report } = await runSoak({
      minutes: 1,
      // Seed 324 draws three member outages (east, west, north), all over within the first 33 s.
      seed: 324,
      kinds: ['member-down'],
      meanGapMs: 5_000,
      broken: 'delete-on-doubt',
    });
    const deletions = verdict.violations.filter((v) => v.invariant === 'a');
    expect(deletions.length, report).toBeGreaterThan(0);
    expect(deletions[0]!.message).toMatch(/^Deployment p\d-web of p\d on \w+ deleted while the placement lists \w+$/);
    expect(deletions[0]!.t).toBeLessThan(60_000);
  });
});
