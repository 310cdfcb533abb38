#!/usr/bin/env node
// `npm test`: prepares every external program the tests use (once, cached by
// version; see scripts/prepare-tools.mjs), then runs every package's tests
// through turbo and prints one closing line ("N passed, N failed, N skipped")
// summed over all packages' vitest reports.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const workspaces = ['packages', 'apps'].flatMap((dir) =>
  existsSync(join(root, dir)) ? readdirSync(join(root, dir)).map((name) => join(root, dir, name)) : [],
);
for (const ws of workspaces) rmSync(join(ws, 'reports', 'vitest.json'), { force: true });

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(0);
const prepareStart = Date.now();
const prepared = spawnSync(process.execPath, [join(root, 'scripts', 'prepare-tools.mjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (prepared.status !== 0) {
  console.log('\nprepare failed: no test was started\n0 passed, 1 failed, 0 skipped');
  process.exit(prepared.status ?? 1);
}
const testStart = Date.now();

const args = ['turbo', 'run', 'test', '--continue', '--concurrency=1', ...process.argv.slice(2)];
const result = spawnSync('npx', args, { cwd: root, stdio: 'inherit' });

const totals = { passed: 0, failed: 0, skipped: 0 };
for (const ws of workspaces) {
  const file = join(ws, 'reports', 'vitest.json');
  if (!existsSync(file)) continue;
  const report = JSON.parse(readFileSync(file, 'utf8'));
  totals.passed += report.numPassedTests ?? 0;
  totals.failed += report.numFailedTests ?? 0;
  totals.skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
const code = result.status ?? 1;
if (code !== 0 && totals.failed === 0) totals.failed = 1; // a crash outside any test still fails
console.log(`\nwall time: prepare ${((testStart - prepareStart) / 1000).toFixed(0)} s, tests ${seconds(testStart)} s`);
console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(code);
