// @mco/runtime installed as its README says, outside the repository (its
// tarball and @mco/core's stand for the registry), then type-checked by a
// strict TypeScript consumer: with `skipLibCheck: true` as installed, and
// with `skipLibCheck: false` after the README's extra command for that case.
// Without that command `skipLibCheck: false` fails as the README explains:
// the declarations name `@kubernetes/client-node` (an optional peer), whose
// own declarations import `ws` without depending on `@types/ws`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { preparedTool } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, run } from './workspaces.js';

const packed = preparedTool('npm-packages');
const inCi = process.env.CI === 'true' || process.env.CI === '1';
const skip = process.env.MCO_UNIT_ONLY === '1' || (!packed && !inCi);

/** The `npm install …` lines of the README's sh blocks, in order, as argument lists. */
export function readmeInstalls(readme: string): string[][] {
  return [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1]!
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line.startsWith('npm install '))
      .map((line) => line.split(/\s+/).slice(2)),
  );
}

const CONSUMER = `import { createLogger, McoError, type InventoryProviderModule, type PluginDeps } from '@mco/runtime';
import { z } from 'zod';

const configSchema = z.strictObject({ source: z.string().min(1) });
export const provider: InventoryProviderModule<z.output<typeof configSchema>> = {
  kind: 'inventory',
  name: 'readme-consumer',
  configSchema,
  create: (config, deps: PluginDeps) => ({
    run: async () => {
      createLogger({ level: 'info' }).info('listing', { source: config.source, server: deps.kubeConfig.getCurrentCluster()?.server });
      throw new McoError('Unavailable', 'the CMDB answered 503', true);
    },
  }),
};
`;

describe('readmeInstalls', () => {
  it('reads the install commands of sh blocks only, without comments', () => {
    const readme = '```js\nnpm install no\n```\n```sh\nnpm install a b # why\nnpx x\n```\n```sh\nnpm install -D c\n```';
    expect(readmeInstalls(readme)).toEqual([
      ['a', 'b'],
      ['-D', 'c'],
    ]);
  });
});

describe.skipIf(skip)('@mco/runtime installed as its README says', () => {
  let dir: string;
  const installs = readmeInstalls(readFileSync(join(REPO, 'packages', 'runtime', 'README.md'), 'utf8'));
  const tsc = (skipLibCheck: boolean) => {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          target: 'ES2022',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          noEmit: true,
          skipLibCheck,
        },
        include: ['index.ts'],
      }),
    );
    return run(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], dir);
  };
  /** Runs one README install with the packed tarballs in place of the registry's @mco/* packages. */
  let tarballs: Record<string, string>;
  const install = (args: readonly string[]) =>
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...args.map((a) => tarballs[a] ?? a)], dir);

  beforeAll(async () => {
    if (!packed)
      throw new Error('npm-packages is not prepared (required under CI): run node scripts/prepare-tools.mjs');
    const packages = JSON.parse(readFileSync(join(packed, 'packages.json'), 'utf8')) as {
      name: string;
      tarball: string;
    }[];
    tarballs = Object.fromEntries(packages.map((p) => [p.name, `file:${join(packed, p.tarball)}`]));
    dir = mkdtempSync(join(tmpdir(), 'mco-runtime-readme-'));
    const typesNode = (
      JSON.parse(readFileSync(join(REPO, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'runtime-readme',
        private: true,
        type: 'module',
        // What any TypeScript project has; the README's commands add the rest.
        devDependencies: { typescript: '5.9.3', '@types/node': typesNode },
        overrides: { '@mco/core': tarballs['@mco/core'] },
      }),
    );
    writeFileSync(join(dir, 'index.ts'), CONSUMER);
    expect(installs.length, 'the README has an install command and one for skipLibCheck: false').toBe(2);
    await install(installs[0]!);
  }, 600_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the first install command type-checks a strict consumer with skipLibCheck: true', async () => {
    await expect(tsc(true)).resolves.toBe('');
  });

  it('with skipLibCheck: false it fails on @kubernetes/client-node, as the README says', async () => {
    await expect(tsc(false)).rejects.toThrow(/TS2307: Cannot find module '@kubernetes\/client-node'/);
  });

  it("after the README's command for skipLibCheck: false, a strict consumer type-checks with it", async () => {
    await install(installs[1]!);
    await expect(tsc(false)).resolves.toBe('');
  }, 300_000);
});
