// npm test's closing summary (scripts/test.mjs): the counts of each package's
// vitest JSON report, and each failure with the first lines of its error.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The summed counts of `<workspace>/<report>` over the workspaces, and each failure. */
export function countReports(workspaces, report, root) {
  const totals = { passed: 0, failed: 0, skipped: 0, failures: [] };
  for (const ws of workspaces) {
    const file = join(ws, report);
    if (!existsSync(file)) continue;
    const json = JSON.parse(readFileSync(file, 'utf8'));
    totals.passed += json.numPassedTests ?? 0;
    totals.failed += json.numFailedTests ?? 0;
    totals.skipped += (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
    const errorsFile = file.replace(/\.json$/, '-errors.json'); // vitest.hook-errors.ts
    const hookErrors = existsSync(errorsFile) ? JSON.parse(readFileSync(errorsFile, 'utf8')) : {};
    totals.failures.push(...failuresOf(ws, json, hookErrors, root));
  }
  return totals;
}

// Each failed test (or a file that failed outside any test, with what its
// beforeAll/afterAll threw, which the JSON report leaves out) with the first
// lines of its error (a timeout's message carries the logs that say why), so
// the last lines of a CI log name what failed and why.
function failuresOf(ws, json, hookErrors, root) {
  const out = [];
  const firstLines = (text) =>
    (text ?? '')
      .split('\n')
      .filter((line) => line.trim() && !/node_modules|node:internal|<anonymous>/.test(line))
      .slice(0, 40)
      .map((line) => `      ${line.trim().slice(0, 600)}`)
      .join('\n');
  for (const file of json.testResults ?? []) {
    const where = file.name?.startsWith(root) ? file.name.slice(root.length) : (file.name ?? ws);
    const failed = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failed) out.push(`  ${where} > ${a.fullName}\n${firstLines(a.failureMessages?.[0])}`);
    const hooks = (hookErrors[file.name] ?? []).map(firstLines);
    if (hooks.length) out.push(`  ${where} (beforeAll/afterAll or collection)\n${hooks.join('\n')}`);
    else if (failed.length === 0 && file.status === 'failed') out.push(`  ${where}\n${firstLines(file.message)}`);
  }
  for (const message of hookErrors['(outside any file)'] ?? [])
    out.push(`  ${ws.startsWith(root) ? ws.slice(root.length) : ws} (outside any test)\n${firstLines(message)}`);
  return out;
}

export function format({ passed, failed, skipped }) {
  return `${passed} passed, ${failed} failed, ${skipped} skipped`;
}
