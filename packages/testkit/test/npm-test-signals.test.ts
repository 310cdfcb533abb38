// `npm test` (scripts/test.mjs) killed at any moment must leave nothing of its
// own behind: a copy of the script in a fixture root, whose prepare step is a
// fixture running a vitest run that holds testkit servers in a process group of
// its own (as turbo runs a task), gets SIGINT (to its process group, as Ctrl-C
// does), SIGTERM or SIGKILL (to the script only, as a timeout does) at a random
// moment once everything runs; every process it started and every server must be gone.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../src/index.js';

const TEST_SCRIPT = fileURLToPath(new URL('../../../scripts/test.mjs', import.meta.url));
const TEST_REPORT = fileURLToPath(new URL('../../../scripts/test-report.mjs', import.meta.url));
const PREPARE = fileURLToPath(new URL('./fixtures/npm-test/prepare-tools.mjs', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/vitest-run/vitest.config.ts', import.meta.url));
const VITEST = fileURLToPath(new URL('../../../node_modules/vitest/vitest.mjs', import.meta.url));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const linesOf = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];

describe('a killed npm test leaves no process behind', () => {
  const cleanup: (() => void)[] = [];
  afterEach(() => cleanup.splice(0).forEach((f) => f()));

  it.each([
    ['SIGINT', 'its process group (Ctrl-C in a terminal)', 130],
    ['SIGTERM', 'the script only (a timeout)', 143],
    ['SIGKILL', 'the script only (nothing runs on exit)', null],
  ] as const)('%s to %s', async (signal, target, code) => {
    const root = mkdtempSync(join(tmpdir(), 'mco-npm-test-'));
    const dir = join(root, 'fixture');
    mkdirSync(join(root, 'scripts'));
    mkdirSync(dir);
    copyFileSync(TEST_SCRIPT, join(root, 'scripts', 'test.mjs'));
    copyFileSync(TEST_REPORT, join(root, 'scripts', 'test-report.mjs'));
    copyFileSync(PREPARE, join(root, 'scripts', 'prepare-tools.mjs'));
    const script = spawn(process.execPath, [join(root, 'scripts', 'test.mjs')], {
      cwd: root,
      detached: true, // a process group of its own, like a terminal's foreground job
      stdio: 'ignore',
      env: { ...process.env, MCO_FIXTURE_DIR: dir, MCO_FIXTURE_CONFIG: CONFIG, MCO_FIXTURE_VITEST: VITEST },
    });
    const exited = new Promise<number | null>((resolve) => script.once('exit', (status) => resolve(status)));
    const everything = () => [...linesOf(join(dir, 'pids')), ...linesOf(join(dir, 'groups')).map((g) => -g)];
    cleanup.push(() => {
      for (const pid of [-script.pid!, ...everything()].filter(alive)) process.kill(pid, 'SIGKILL');
      rmSync(root, { recursive: true, force: true });
    });
    await eventually(
      'the fixture to start its servers',
      async () => linesOf(join(dir, 'groups')).length,
      (servers) => servers === 2,
      120_000,
      100,
    );
    const started = everything();
    expect(started.map(alive)).toEqual([true, true, true, true]);

    await new Promise((resolve) => setTimeout(resolve, Math.random() * 1000)); // any moment
    process.kill(target.startsWith('its process group') ? -script.pid! : script.pid!, signal);
    expect(await exited).toBe(code);
    const left = await eventually(
      `every process to be gone after ${signal}`,
      async () => started.filter(alive),
      (still) => still.length === 0,
      30_000,
      100,
    );
    expect(left).toEqual([]);
  });
});
