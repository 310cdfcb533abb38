// tools/lib.sh, the steps every tools/<name>/build.sh shares: what the prepare
// step of `npm test` stands on before any test runs, on a fresh machine too.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const LIB = fileURLToPath(new URL('../../../tools/lib.sh', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mco-tools-lib-'));
const GO_MOD = join(dir, 'go.mod');
writeFileSync(
  GO_MOD,
  [
    'module example.com/wrapper',
    '',
    'go 1.26',
    '',
    'require sigs.k8s.io/controller-tools v0.21.0',
    '',
    'require (',
    '\tsigs.k8s.io/kwok v0.8.0',
    '\tgolang.org/x/net v0.40.0 // indirect',
    ')',
    '',
  ].join('\n'),
);

/** Runs `script` in bash with errexit, after sourcing the library as a build named `t` does. */
const bash = (script: string, env: Record<string, string> = {}) => {
  const run = spawnSync('bash', ['-c', `set -euo pipefail; tool=t; source "${LIB}"; ${script}`], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
};

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tools/lib.sh', () => {
  it('go_mod_version reads a module version from a require block and from a require line', () => {
    expect(
      bash(`go_mod_version sigs.k8s.io/kwok "${GO_MOD}"; go_mod_version sigs.k8s.io/controller-tools "${GO_MOD}"`),
    ).toEqual({ status: 0, stdout: 'v0.8.0\nv0.21.0\n', stderr: '' });
  });

  it('a module go.mod does not require stops the build, naming the module and the file', () => {
    expect(bash(`v="$(go_mod_version example.com/missing "${GO_MOD}")"; echo "went on with '$v'"`)).toEqual({
      status: 1,
      stdout: '',
      stderr: `t: error: cannot read the example.com/missing version from ${GO_MOD}\n`,
    });
  });

  it('require_go stops the build when GO is not a Go, naming GO and the variable that gives the tool itself', () => {
    const missing = join(dir, 'no-go');
    expect(bash('require_go kwok; echo "went on"', { GO: missing })).toEqual({
      status: 1,
      stdout: '',
      stderr: 't: error: Go is needed to build kwok (set GO)\n',
    });
    expect(bash('require_go helm MCO_HELM', { GO: missing }).stderr).toBe(
      't: error: Go is needed to build helm (set GO or MCO_HELM)\n',
    );
    expect(bash('require_go kwok; printf %s "$go_cmd"', { GO: '/bin/sh' })).toEqual({
      status: 0,
      stdout: '/bin/sh',
      stderr: '',
    });
  });

  it('lock holds its file until the build exits, and creates the directory it is in', async () => {
    const file = join(dir, 'cache', 'v1', '.lock');
    // The holder locks, says so, and waits for its stdin to close.
    const holder = spawn('bash', ['-c', `tool=t; source "${LIB}"; lock "${file}"; echo locked; cat >/dev/null`], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const tryLock = () => spawnSync('flock', ['-n', file, 'true']).status;
    const whileHeld = tryLock();
    holder.stdin.end();
    await new Promise((resolve) => holder.once('exit', resolve));
    expect({ whileHeld, afterExit: tryLock() }).toEqual({ whileHeld: 1, afterExit: 0 });
  });
});
