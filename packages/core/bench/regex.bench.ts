// cluster-name-regex benchmark: `npm run bench:regex -w @mco/core` (also the
// last part of `npm run bench`). One placement with one cluster-name-regex
// rule over 1,000 clusters, for the costliest patterns the limits accept and
// for pathological ones that they refuse; the figures in docs/performance.md
// ("Regex cost") come from here. Not a test: no assertions.
import { performance } from 'node:perf_hooks';
import { compileRe2, createInventory, decide, type ClusterProfile, type PlacementSpec } from '@mco/core';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import { percentile } from '@mco/testkit';
// Same package: the bench empties the regex caches to time a first evaluation.
import { clearRe2Caches } from '../src/selection/regex.js';
import { randomName } from '../test/helpers.js';
import { fmt, load, measure } from './support.js';

const NOW = new Date('2026-01-01T12:00:00Z');
const PATTERNS: [string, string][] = [
  // Every position live on every character, for every name (the worst case of the matcher).
  ['a class of every character, 63 positions', '[\\pL\\pN\\pP\\pS]{62}[^\\pL\\pN\\pP\\pS]'],
  ['an alternation of every character, 63 positions', '(?:\\PL|\\pL){62}\\s'],
  // re2js's lazy DFA built a state per character on these.
  ['DFA blow-up, 22 positions', '[0-9][a-z0-9-]{20}9'],
  ['DFA blow-up, 62 positions', '[0-9][a-z0-9-]{60}9'],
  ['nested {0,30}{0,2}', '(?:.{0,30}-){0,2}q'],
  // Empty-width assertions: a table per context.
  ['word boundaries, 61 positions', '\\b[a-z0-9]{1,30}\\b-\\b[a-z0-9]{1,30}\\b'],
  ['an MCO sample', '^fleet-cluster-inventory/mco-cluster-(asia|eu)$'],
  // Accepted before the position limit: seconds on the longest names.
  ['pathological: a class, 1,000 copies', '[\\pL\\pN\\pP\\pS]{1000}'],
  ['pathological: an alternation, 999 copies', '(?:\\PL|\\pL){999}'],
];
const namesOf = (ns: number, name: number): ClusterProfile[] =>
  Array.from({ length: 1_000 }, (_, i) =>
    aClusterProfile(`${randomName(ns, i * 7 + 1)}/${randomName(name, i * 13 + 5)}`, { controlPlaneHealthy: true }),
  );
const NAME_SETS: [string, ClusterProfile[]][] = [
  [
    'bench fleet (21 characters)',
    Array.from({ length: 1_000 }, (_, i) =>
      aClusterProfile(`fleet-${i % 10}/cluster-${String(i).padStart(5, '0')}`, { controlPlaneHealthy: true }),
    ),
  ],
  ['random (64 characters)', namesOf(20, 43)],
  ['longest legal (317 characters)', namesOf(63, 253)],
];

const median = (xs: number[]) => percentile('regex time', xs, 50);
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};
// The median of 5 cold runs, and the best one: on a loaded machine the closest to the undisturbed cost.
const rows = [
  '| pattern | names | positions | first evaluation (cold) | best of 5 | its CPU time | next evaluations (warm) |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
];
let worstCold = { ms: 0, best: 0, cpu: 0, what: '' };
for (const [names, profiles] of NAME_SETS) {
  const inventory = createInventory(profiles);
  for (const [what, regex] of PATTERNS) {
    const compiled = compileRe2(regex);
    const spec = (): PlacementSpec => ({
      clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex } }],
    });
    const evaluate = (s: PlacementSpec) =>
      decide({ now: NOW, placement: aPlacement('apps/re', s), clusterProfiles: inventory });
    const colds: number[] = [];
    const cpus: number[] = [];
    for (let run = 0; run < 5; run++) {
      clearRe2Caches();
      const s = spec(); // a new object: the compiled-spec cache is per object
      const cpu = process.cpuUsage();
      const start = performance.now();
      evaluate(s);
      colds.push(performance.now() - start);
      cpus.push(cpuMs(cpu));
    }
    const s = spec();
    const warm = measure(() => evaluate(s), 20, 20);
    const cold = median(colds);
    const best = Math.min(...colds);
    if (cold > worstCold.ms && compiled.ok)
      worstCold = { ms: cold, best: Math.max(worstCold.best, best), cpu: median(cpus), what: `${what}, ${names}` };
    else if (compiled.ok) worstCold.best = Math.max(worstCold.best, best);
    const shown = (regex.length > 28 ? `${regex.slice(0, 28)}…` : regex).replaceAll('|', '\\|'); // a Markdown table cell
    rows.push(
      `| ${what} (\`${shown}\`) | ${names} | ${compiled.ok ? compiled.value.positions : 'refused'} | ${fmt(cold)} | ${fmt(best)} | ${fmt(median(cpus))} | ${fmt(warm.median)} |`,
    );
  }
}
console.log(`Node ${process.version}, ${process.arch}; load average ${load()}\n`);
console.log('One placement with one cluster-name-regex rule over 1,000 clusters (cold: median of 5 runs)\n');
console.log(rows.join('\n'));
for (const [what, regex] of PATTERNS) {
  const compiled = compileRe2(regex);
  if (!compiled.ok) console.log(`\n${what}: refused: ${compiled.error}`);
}
console.log(
  `\nWorst first evaluation of an accepted pattern: ${fmt(worstCold.ms)} (CPU ${fmt(worstCold.cpu)}; ${worstCold.what}); ` +
    `worst best of 5: ${fmt(worstCold.best)}; target ≤ 50 ms. Load average at the end: ${load()}.`,
);
