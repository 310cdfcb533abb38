// Issue 43's drill, end to end with real components: two member clusters in
// two regions whose nodes come from Karpenter (its kwok provider: kwok's fake
// nodes are the only imitation) and whose HPAs are kube-controller-manager's,
// a hub with mco's controller (the `kubernetes` signal source, Karpenter
// detected) and mco's Flux delivery, and Flux's own controllers applying the
// workload from Git. The test writes nothing into a member but the load (the
// external metric the HPAs read): no pod condition, Event or HPA status.
import { describeWithControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { baseline, DrillStack, DRILL_TOOLS, METRIC, runDrill, SCALE_IN_STEPS, SCALE_OUT_STEPS } from './drill/stack.js';

// Some 15 processes on two shared cores: generous timeouts, every step waits on a condition.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describeWithControlPlane(
  'autoscaler drill: Karpenter NodePool limits → mco adds a region → Flux delivers → Karpenter provisions; and back',
  { tools: DRILL_TOOLS },
  () => {
    let stack: DrillStack;

    beforeAll(async () => {
      stack = await DrillStack.start();
    });

    afterAll(async () => {
      await stack?.stop();
    });

    const failing = async (what: () => Promise<void>) => {
      try {
        await what();
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${stack.logs()}`);
      }
    };

    it('starts on east alone, its real HPA at 2 replicas on Karpenter nodes', async () => {
      await failing(() => baseline(stack));
      const east = await stack.view('east');
      expect(east.hpa?.status?.desiredReplicas).toBe(2);
      // kube-controller-manager read the load through the aggregated external metrics API.
      expect(east.hpa?.status?.currentMetrics?.[0]?.external?.metric.name).toBe(METRIC);
      expect([...stack.members.east.metrics.reads.keys()].some((p) => p.endsWith(`/${METRIC}`))).toBe(true);
      // One node, or two when the Deployment's first pod and the HPA's second came in separate batches.
      expect(east.nodes).toBeGreaterThanOrEqual(1);
      expect(east.nodes).toBeLessThanOrEqual(2);
    });

    it('load past east’s NodePool limits adds west, where Karpenter provisions nodes; load falling removes it and its nodes', async () => {
      let run: Awaited<ReturnType<typeof runDrill>> | undefined;
      await failing(async () => {
        run = await runDrill(stack);
      });
      console.log(
        [
          'drill, ms from the first unschedulable pod on east:',
          ...SCALE_OUT_STEPS.map((s) => `  ${s}: ${run!.scaleOut[s].toFixed(0)}`),
          'ms from the load falling:',
          ...SCALE_IN_STEPS.map((s) => `  ${s}: ${run!.scaleIn[s].toFixed(0)}`),
        ].join('\n'),
      );
      // Each step after the one it depends on, within the polls' resolution (one round under load).
      const slack = run!.resolutionMs;
      const out = SCALE_OUT_STEPS.map((s) => run!.scaleOut[s]);
      for (let i = 1; i < out.length; i++) expect(out[i]).toBeGreaterThanOrEqual(out[i - 1]! - slack);
      const back = SCALE_IN_STEPS.map((s) => run!.scaleIn[s]);
      for (let i = 1; i < back.length; i++) expect(back[i]).toBeGreaterThanOrEqual(back[i - 1]! - slack);

      // What told mco: Karpenter's own Event on an east pod it could not place (written by Karpenter, not the test).
      const events = await stack.podEvents('east');
      expect(
        events.some(
          (e) =>
            e.reason === 'FailedScheduling' &&
            e.source?.component === 'karpenter' &&
            /all available instance types exceed limits for nodepool/.test(e.message ?? ''),
        ),
      ).toBe(true);
      // East's NodePool stopped at its limits (2 CPU: two 1-CPU nodes).
      const east = await stack.view('east');
      expect(east.nodes).toBeLessThanOrEqual(2);
      expect(east.hpa?.status?.desiredReplicas).toBe(2);
      // West is empty again: no workload, no nodes, not listed.
      const west = await stack.view('west');
      expect(west.deployment).toBe(false);
      expect(west.nodes).toBe(0);
      expect((await stack.placement()).map((c) => c.name)).toEqual(['east']);
    });
  },
);
