// `npm run soak -- --minutes N --seed S [--broken delete-on-doubt]`: a chaos
// soak of mco on real control planes and Flux (docs/reliability.md). Writes
// the report to reports/soak-<seed>.txt and .html and exits 1 on any
// violation, 3 when the run does not count (too much of it exempted).
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MAX_EXEMPTED_SHARE } from './report.js';
import { runSoak, writeReports } from './run.js';
import { DEFAULT_MEAN_GAP_MS } from './schedule.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    seed: { type: 'string' },
    broken: { type: 'string' },
    'mean-gap': { type: 'string', default: String(DEFAULT_MEAN_GAP_MS / 1000) },
  },
});

function number(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < min) {
    console.error(`mco soak: --${flag} must be a number ≥ ${min}, got "${text}"`);
    process.exit(2);
  }
  return n;
}

const minutes = number('minutes', values.minutes, 1);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : number('seed', values.seed, 0);
if (values.broken !== undefined && values.broken !== 'delete-on-doubt') {
  console.error(`mco soak: --broken must be delete-on-doubt, got "${values.broken}"`);
  process.exit(2);
}
// Exit hooks stop every server the testkit started (a signal's default action would skip them).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));
console.log(`mco soak: seed ${seed}, ${minutes} min`);
const result = await runSoak({
  minutes,
  seed,
  meanGapMs: number('mean-gap', values['mean-gap'], 1) * 1000,
  ...(values.broken ? { broken: 'delete-on-doubt' as const } : {}),
  log: (line) => console.log(line),
});
const file = writeReports(join(import.meta.dirname, '..', 'reports'), seed, result);
console.log(result.report);
console.log(`report: ${file}`);
// A run that does not count shows nothing either way: neither a pass nor a violation.
process.exit(result.verdict.violations.length ? 1 : result.verdict.exemptedShare > MAX_EXEMPTED_SHARE ? 3 : 0);
