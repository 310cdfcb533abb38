// Issue 43's drill as a benchmark: each step's latency with a real Karpenter
// (kwok provider), real HPAs, mco's controller and Flux delivery (the stack of
// test/autoscaler-drill.integration.test.ts). Prints figures; asserts nothing.
//
//   npm run bench -w mco              (BENCH_DRILLS=3 drills)
//
// Scale-out steps run from the first unschedulable pod on east, scale-in
// steps from the load falling. docs/performance.md ("Real autoscaler drill")
// sets them beside the simulator's assumed delays.
import { loadavg } from 'node:os';
import { controlPlaneSkipReason, summarize } from '@mco/testkit';
import { baseline, DrillStack, DRILL_TOOLS, runDrill, SCALE_IN_STEPS, SCALE_OUT_STEPS } from '../test/drill/stack.js';

const DRILLS = Number(process.env.BENCH_DRILLS ?? 3);

const skip = controlPlaneSkipReason({ tools: DRILL_TOOLS });
if (skip !== undefined) {
  console.log(`autoscaler drill bench skipped: ${skip}`);
  process.exit(0);
}

const stack = await DrillStack.start();
const out = new Map<string, number[]>(SCALE_OUT_STEPS.map((s) => [s, []]));
const back = new Map<string, number[]>(SCALE_IN_STEPS.map((s) => [s, []]));
try {
  for (let i = 0; i < DRILLS; i++) {
    await baseline(stack);
    const run = await runDrill(stack);
    for (const s of SCALE_OUT_STEPS) out.get(s)!.push(run.scaleOut[s]);
    for (const s of SCALE_IN_STEPS) back.get(s)!.push(run.scaleIn[s]);
    process.stderr.write(`drill ${i + 1}/${DRILLS} done\n`);
  }
} catch (error) {
  console.error(stack.logs());
  throw error;
} finally {
  await stack.stop();
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
console.log(
  `\nload average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}\n`,
);
console.log('| step | from | drills | p50 | min | max |');
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
for (const [from, rows] of [
  ['first unschedulable pod', out],
  ['load falls', back],
] as const) {
  for (const [step, samples] of rows) {
    const { min, p50, max } = summarize(step, samples);
    console.log(`| ${step} | ${from} | ${samples.length} | ${s(p50)} | ${s(min)} | ${s(max)} |`);
  }
}
process.exit(0);
