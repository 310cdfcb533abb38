// The oldest Node.js a contributor may develop on is the one every package
// requires: the README, the root package.json and every other package.json
// (workspaces, the provider template, the example provider) state the same
// release, and `npm ci` run by that release (tools/node's oldest) checks every
// package of the lockfile and warns of no engine (EBADENGINE).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { preparedTool } from '@mco/testkit';
import { describe, expect, it } from 'vitest';
import { REPO, type Manifest } from './workspaces.js';

interface WithEngines extends Manifest {
  readonly engines?: { readonly node?: string };
}

const read = (file: string) => JSON.parse(readFileSync(join(REPO, file), 'utf8')) as WithEngines;
const root = read('package.json');
/** "Needs Node.js ≥ 22.19 and npm to develop" in the README's quick start. */
const readmeMinimum = /Needs Node\.js ≥ (\d+\.\d+) and npm to develop/.exec(
  readFileSync(join(REPO, 'README.md'), 'utf8'),
)?.[1];

/** Every package.json in the repository: the workspaces, the provider template, the example provider. */
function manifests(): [string, WithEngines][] {
  const listed = spawnSync('git', ['ls-files', '*package.json'], { cwd: REPO, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  return listed.stdout
    .split('\n')
    .filter((file) => file.endsWith('/package.json'))
    .map((file) => [file, read(file)]);
}

const nodeTool = preparedTool('node');
const inCi = process.env.CI === 'true' || process.env.CI === '1';

describe('the Node.js release to develop on', () => {
  it('is the same in the README, the root package.json and every other package.json', () => {
    expect(readmeMinimum, 'README.md: "Needs Node.js ≥ X.Y and npm to develop"').toBeDefined();
    const expected = `>=${readmeMinimum}`;
    expect(root.engines?.node, 'package.json engines.node').toBe(expected);
    const differing = manifests()
      .filter(([, manifest]) => manifest.engines?.node !== expected)
      .map(([file, manifest]) => `${file}: ${manifest.engines?.node ?? '(none)'}`);
    expect(differing).toEqual([]);
  });

  it.skipIf(!nodeTool && !inCi)(
    'npm ci on the oldest allowed release warns of no engine',
    () => {
      if (!nodeTool)
        throw new Error('tools/node is not prepared (required under CI): run node scripts/prepare-tools.mjs');
      const bin = join(nodeTool, 'min', 'bin');
      const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` };
      const version = spawnSync('node', ['--version'], { env, encoding: 'utf8' }).stdout.trim();
      expect(version.startsWith(`v${readmeMinimum}.`), `tools/node's oldest release ${version}`).toBe(true);
      // A dry run resolves the lockfile and checks every package's engines, and installs nothing.
      const ci = spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: REPO,
        env,
        encoding: 'utf8',
      });
      const output = `${ci.stdout}${ci.stderr}`;
      expect(ci.status, output).toBe(0);
      const warnings = output.split('\n').filter((line) => line.includes('EBADENGINE'));
      console.log(`[engines] npm ci --dry-run on Node.js ${version}: ${warnings.length} EBADENGINE lines`);
      expect(warnings).toEqual([]);
    },
    120_000,
  );
});
