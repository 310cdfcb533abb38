// A test run that is killed (Ctrl-C, a CI timeout, the OOM killer) must leave
// no server of the testkit's running: each signal is sent to a real `vitest
// run` whose test holds servers started with startServer (as the Flux engines
// and kube-apiservers are), and every one of their process groups must be gone.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../src/index.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/vitest-run/', import.meta.url));
const VITEST = fileURLToPath(new URL('../../../node_modules/vitest/vitest.mjs', import.meta.url));

const alive = (group: number) => {
  try {
    process.kill(-group, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a killed vitest run leaves no testkit server behind', () => {
  const cleanup: (() => void)[] = [];
  afterEach(() => cleanup.splice(0).forEach((f) => f()));

  it.each([
    ['SIGINT', 'its process group (Ctrl-C in a terminal)'],
    ['SIGTERM', 'the vitest process only (a timeout)'],
    ['SIGKILL', 'the vitest process only (nothing runs on exit)'],
  ] as const)('%s to %s', async (signal, target) => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-signals-'));
    const vitest = spawn(process.execPath, [VITEST, 'run', '--config', join(FIXTURE, 'vitest.config.ts')], {
      cwd: FIXTURE,
      detached: true, // a process group of its own, like a terminal's foreground job
      stdio: 'ignore',
      env: { ...process.env, MCO_FIXTURE_DIR: dir },
    });
    cleanup.push(() => {
      try {
        process.kill(-vitest.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
      rmSync(dir, { recursive: true, force: true });
    });
    const groupsFile = join(dir, 'groups');
    await eventually(
      'the fixture to start its servers',
      async () => existsSync(groupsFile) && readFileSync(groupsFile, 'utf8').trim().split('\n').length === 2,
      (started) => started,
      120_000,
      100,
    );
    const groups = readFileSync(groupsFile, 'utf8').trim().split('\n').map(Number);
    cleanup.push(() => groups.filter(alive).forEach((group) => process.kill(-group, 'SIGKILL')));
    expect(groups.map(alive)).toEqual([true, true]);

    process.kill(target.startsWith('its process group') ? -vitest.pid! : vitest.pid!, signal);
    const left = await eventually(
      `every server group to be gone after ${signal}`,
      async () => groups.filter(alive),
      (still) => still.length === 0,
      30_000,
      100,
    );
    expect(left).toEqual([]);
  });
});
