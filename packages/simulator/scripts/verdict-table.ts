// Regenerates the verdict table of docs/simulator.md: every shipped scenario
// over 5 seeds (the scenario's seed and the next four), mco and mco with
// fail-back against each baseline. Run: npm run docs:verdicts -w @mco/simulator
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import {
  formatIssues,
  formatVerdictTable,
  parseScenarioText,
  replaceVerdictTable,
  simulateSeeds,
} from '../src/index.js';

const SEEDS = 5;
const scenarios = new URL('../../../examples/scenarios/', import.meta.url);
const doc = new URL('../../../docs/simulator.md', import.meta.url);

const runs = readdirSync(scenarios)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((file) => {
    const parsed = parseScenarioText(readFileSync(new URL(file, scenarios), 'utf8'));
    if (!parsed.ok) throw new Error(`${file}:\n${formatIssues(parsed.error)}`);
    process.stderr.write(`${file}: ${SEEDS} seeds\n`);
    return { file, multi: simulateSeeds(parsed.value, { seeds: SEEDS }) };
  });
writeFileSync(doc, replaceVerdictTable(readFileSync(doc, 'utf8'), formatVerdictTable(runs)));
process.stderr.write(`updated ${doc.pathname}\n`);
