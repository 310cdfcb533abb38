// npm test's closing summary (scripts/test-report.mjs) must say why a file
// failed when its beforeAll or afterAll threw: vitest's JSON report leaves
// that message out, which once left a CI log naming a failed file and nothing
// else. A real vitest run with the repository's reporters on a fixture.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script of the repository, without types
import { countReports, format } from '../../../scripts/test-report.mjs';

const FIXTURE = fileURLToPath(new URL('./fixtures/hook-error/', import.meta.url));
const VITEST = fileURLToPath(new URL('../../../node_modules/vitest/vitest.mjs', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'mco-test-report-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it("names each hook's error in the summary of a file whose beforeAll and afterAll threw", () => {
  const ws = join(root, 'packages', 'fixture');
  cpSync(FIXTURE, ws, { recursive: true });
  const run = spawnSync(
    process.execPath,
    [VITEST, 'run', '--config', join(FIXTURE, 'vitest.config.ts'), '--root', ws],
    {
      cwd: ws,
      encoding: 'utf8',
      env: { ...process.env, MCO_VITEST_REPORT: 'reports/vitest.json' },
    },
  );
  expect(run.status, run.stdout + run.stderr).toBe(1);

  const totals = countReports([ws], 'reports/vitest.json', `${root}/`);
  expect(format(totals)).toBe('1 passed, 0 failed, 1 skipped');
  expect(totals.failures).toHaveLength(1);
  const [failure] = totals.failures as string[];
  expect(failure).toMatch(/^ {2}packages\/fixture\/hook-error\.fixture\.ts \(beforeAll\/afterAll or collection\)\n/);
  expect(failure).toContain('the control plane did not start: fixture reason');
  expect(failure).toContain('fixture cleanup failed');
});
