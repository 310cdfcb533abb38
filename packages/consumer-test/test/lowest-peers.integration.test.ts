// The peer dependency floors are real: the packed packages, installed outside
// the repository with the LOWEST version every package's peer range allows
// (the floors of package.json, not a list kept here), decide from ESM and
// CommonJS, load in every package, type-check a strict TypeScript consumer and
// run `mco demo`. consumer.integration.test.ts runs the newest tested versions,
// pinned in peers.json.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { preparedTool } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { libraryNames, lowestPeers, publishableWorkspaces, REPO, run } from './workspaces.js';

const packed = preparedTool('npm-packages');
const inCi = process.env.CI === 'true' || process.env.CI === '1';
const skip = process.env.MCO_UNIT_ONLY === '1' || (!packed && !inCi);

describe.skipIf(skip)('the packed packages with the lowest peer versions they allow', () => {
  let dir: string;
  const peers = lowestPeers(publishableWorkspaces().map((w) => w.manifest));
  beforeAll(async () => {
    if (!packed)
      throw new Error('npm-packages is not prepared (required under CI): run node scripts/prepare-tools.mjs');
    dir = mkdtempSync(join(tmpdir(), 'mco-lowest-peers-'));
    const packages = JSON.parse(readFileSync(join(packed, 'packages.json'), 'utf8')) as {
      name: string;
      tarball: string;
    }[];
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'mco-lowest-peers',
        private: true,
        type: 'module',
        dependencies: {
          ...Object.fromEntries(packages.map((p) => [p.name, `file:${join(packed, p.tarball)}`])),
          ...peers,
          typescript: '5.9.3',
          '@types/node': (
            JSON.parse(readFileSync(join(REPO, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as {
              version: string;
            }
          ).version,
        },
        overrides: Object.fromEntries(packages.map((p) => [p.name, `$${p.name}`])),
      }),
    );
    // No --legacy-peer-deps: a floor below a package's peer range is an ERESOLVE here.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], dir);
  }, 600_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('installs exactly the floors', () => {
    for (const [name, version] of Object.entries(peers)) {
      const installed = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(installed.version, name).toBe(version);
    }
  });

  it('decides from ESM and CommonJS, and every package loads', async () => {
    const decide = `({ now: new Date('2026-01-01T00:00:00Z'), placement: { metadata: { name: 'web', namespace: 'default' },
      spec: { clusterSelectorRules: [{ type: 'all-clusters' }] } }, clusterProfiles: [{ metadata: { name: 'eu-1', namespace: 'fleet' } }] })`;
    writeFileSync(
      join(dir, 'a.mjs'),
      `import { decide } from '@mco/core';\nconsole.log(decide${decide}.status.clusters[0].state);\n`,
    );
    writeFileSync(
      join(dir, 'b.cjs'),
      `const names = ${JSON.stringify(libraryNames())};\n` +
        `for (const name of names) require(name);\nconsole.log(require('@mco/core').decide${decide}.status.clusters[0].state);\n`,
    );
    expect((await run(process.execPath, ['a.mjs'], dir)).trim()).toBe('ACTIVE');
    expect((await run(process.execPath, ['b.cjs'], dir)).trim()).toBe('ACTIVE');
  });

  it('type-checks a strict consumer whose zod schema types a provider module', async () => {
    writeFileSync(
      join(dir, 'index.ts'),
      `import type { InventoryProviderModule } from '@mco/runtime';
import { z } from 'zod';
const configSchema = z.strictObject({ managerName: z.string().min(1) });
export const provider: InventoryProviderModule<z.output<typeof configSchema>> = {
  kind: 'inventory', name: 'lowest', configSchema, create: () => ({ run: async () => {} }),
};
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          moduleResolution: 'node16',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        include: ['index.ts'],
      }),
    );
    await expect(
      run(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], dir),
    ).resolves.toBe('');
  });

  it('runs mco demo', async () => {
    expect(await run(join(dir, 'node_modules', '.bin', 'mco'), ['demo'], dir)).toMatch(/stockout/i);
  });
});
