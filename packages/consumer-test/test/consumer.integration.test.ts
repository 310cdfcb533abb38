// A user's view of the published packages: the tarballs tools/npm-packages
// packed before the tests (never built here) are installed into a scratch
// project under os.tmpdir(), outside the repository, with `npm install
// --prefer-offline` (the npm registry only, for third-party packages). Then
// plain ESM and CommonJS programs, TypeScript consumers (node16 and bundler,
// strict), `@mco/core/testing` with fast-check, and two providers copied from
// templates/provider-template, built, tested and run under `mco inventory`
// against a real kube-apiserver.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  describeWithControlPlane,
  preparedTool,
  thirdPartyCrd,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { libraryNames, publishableWorkspaces, REPO, run, type Manifest } from './workspaces.js';

const packed = preparedTool('npm-packages');
const inCi = process.env.CI === 'true' || process.env.CI === '1';
// Installs and runs real programs: not part of the unit pass on the oldest Node.js (scripts/test.mjs).
const unitOnly = process.env.MCO_UNIT_ONLY === '1';
const skip = unitOnly || (!packed && !inCi);
if (skip) {
  console.warn(
    unitOnly
      ? '[consumer-test] skipping: MCO_UNIT_ONLY=1'
      : '[consumer-test] skipping: npm-packages not prepared (run `npm test` or `node scripts/prepare-tools.mjs`)',
  );
}

interface Packed {
  readonly name: string;
  readonly tarball: string;
}

const node = (cwd: string, ...args: string[]) => run(process.execPath, args, cwd);
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as Manifest).version;

const PROVIDERS = ['alpha', 'beta'] as const;
const NEWEST = (
  JSON.parse(readFileSync(new URL('../peers.json', import.meta.url), 'utf8')) as { newest: Record<string, string> }
).newest;

/** Copies the template as a user would and renames it: package `mco-provider-<id>`, provider name `<id>`. */
function copyTemplate(to: string, id: string): void {
  cpSync(join(REPO, 'templates', 'provider-template'), to, {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|dist|reports)$/.test(src),
  });
  const manifestFile = join(to, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(manifestFile, JSON.stringify({ ...manifest, name: `mco-provider-${id}` }, null, 2));
  const source = join(to, 'src', 'index.ts');
  const text = readFileSync(source, 'utf8');
  const renamed = text.replace("export const name = 'my-inventory';", `export const name = '${id}';`);
  if (renamed === text) throw new Error('the template no longer declares `export const name`: update this test');
  writeFileSync(source, renamed);
}

let scratch: Promise<{ dir: string; packages: readonly Packed[]; installSeconds: number }> | undefined;

/**
 * The scratch project, installed once per run: every tarball as a dependency
 * (and as an override, so @mco/* dependencies between them never reach the
 * registry), the peers a user installs, and the template copies as workspaces.
 */
function installScratch(): Promise<{ dir: string; packages: readonly Packed[]; installSeconds: number }> {
  scratch ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-consumer-'));
    const packages = JSON.parse(readFileSync(join(packed!, 'packages.json'), 'utf8')) as Packed[];
    const tarballs = Object.fromEntries(packages.map((p) => [p.name, `file:${join(packed!, p.tarball)}`]));
    const thirdParty = ['zod', 'prom-client', '@kubernetes/client-node', 'fast-check', 'typescript', 'vitest'];
    for (const id of PROVIDERS) copyTemplate(join(dir, 'providers', id), id);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify(
        {
          name: 'mco-consumer',
          private: true,
          workspaces: PROVIDERS.map((id) => `providers/${id}`),
          dependencies: {
            ...tarballs,
            // The peers at the newest tested versions (peers.json); lowest-peers.integration.test.ts runs the floors.
            ...Object.fromEntries(thirdParty.map((name) => [name, NEWEST[name] ?? versionOf(name)])),
            '@types/node': versionOf('@types/node'),
            // What packages/runtime/README.md says to add for skipLibCheck: false (the type-check below).
            '@types/ws': NEWEST['@types/ws']!,
          },
          overrides: Object.fromEntries(packages.map((p) => [p.name, `$${p.name}`])),
        },
        null,
        2,
      ),
    );
    const started = Date.now();
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], dir);
    const installSeconds = (Date.now() - started) / 1000;
    console.log(
      `[consumer-test] npm install of ${packages.length} tarballs into ${dir}: ${installSeconds.toFixed(1)} s`,
    );
    return { dir, packages, installSeconds };
  })();
  return scratch;
}

afterAll(async () => {
  if (scratch) rmSync((await scratch).dir, { recursive: true, force: true });
});

const DECIDE = `
  const { status } = decide({
    now: new Date('2026-01-01T00:00:00Z'),
    placement: {
      metadata: { name: 'web', namespace: 'default' },
      spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/eu-' } }] },
    },
    clusterProfiles: [{ metadata: { name: 'eu-1', namespace: 'fleet' } }, { metadata: { name: 'us-1', namespace: 'fleet' } }],
  });
  console.log(JSON.stringify(status.clusters.map((c) => [c.namespace + '/' + c.name, c.state])));
`;

/** One TypeScript consumer, type-checked as-is under each module resolution. */
function typescriptConsumer(names: readonly string[]): string {
  return `${names.map((name, i) => `import * as p${i} from '${name}';`).join('\n')}
import { decide, type ClusterProfile } from '@mco/core';
import type { InventoryProvider, InventoryProviderModule, PluginDeps } from '@mco/runtime';
import { syncClusterProfiles } from '@mco/provider-manual';
import { z } from 'zod';

// Every package's declarations resolve and load.
export const all: readonly object[] = [${names.map((_, i) => `p${i}`).join(', ')}];

// The consumer's zod is the packages' zod: its schema types a provider module.
const configSchema = z.strictObject({ managerName: z.string().min(1) });
export const provider: InventoryProviderModule<z.output<typeof configSchema>> = {
  kind: 'inventory',
  name: 'ts-consumer',
  configSchema,
  create: (config, deps: PluginDeps): InventoryProvider => ({
    run: async (abort) => {
      await syncClusterProfiles({ kubeConfig: deps.kubeConfig, manager: config.managerName, desired: [], prune: false, now: deps.now, abort });
    },
  }),
};

const profiles: ClusterProfile[] = [{ metadata: { name: 'eu-1', namespace: 'fleet' } }];
export const states: string[] = (
  decide({ now: new Date(), placement: { metadata: { name: 'web' }, spec: {} }, clusterProfiles: profiles }).status.clusters ?? []
).map((c) => c.state);
`;
}

/** The packed packages a program imports, in packing order: all but the `mco` command. */
const libraries = (packages: readonly Packed[]) =>
  packages.map((p) => p.name).filter((n) => libraryNames().includes(n));

const TS_CONFIGS = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
  // TypeScript 5's node10 resolution, which ignores `exports`: main, types and typesVersions. esModuleInterop
  // as `tsc --init` sets it: client-node's declarations default-import CommonJS modules (TS1259 without it).
  commonjs: { module: 'commonjs', esModuleInterop: true },
} as const;

describe.skipIf(skip)('the packed packages, installed outside the repository', () => {
  let dir: string;
  let packages: readonly Packed[];
  beforeAll(async () => {
    if (!packed)
      throw new Error('npm-packages is not prepared (required under CI): run node scripts/prepare-tools.mjs');
    ({ dir, packages } = await installScratch());
  }, 600_000);

  it('packs every publishable workspace, found without a list', () => {
    expect(packages.map((p) => p.name).sort()).toEqual(
      publishableWorkspaces()
        .map((w) => w.manifest.name)
        .sort(),
    );
  });

  it('ships LICENSE, README and every file its exports name, and installs one copy of zod', () => {
    for (const { name } of packages) {
      const root = join(dir, 'node_modules', name);
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
      expect(existsSync(join(root, 'LICENSE')), `${name} LICENSE`).toBe(true);
      expect(existsSync(join(root, 'README.md')), `${name} README.md`).toBe(true);
      for (const [subpath, conditions] of Object.entries(manifest.exports ?? {})) {
        for (const [condition, target] of Object.entries(conditions)) {
          expect(existsSync(join(root, target)), `${name} ${subpath} "${condition}" -> ${target}`).toBe(true);
        }
      }
      expect(existsSync(join(root, 'node_modules', 'zod')), `${name} has its own zod`).toBe(false);
    }
    expect(existsSync(join(dir, 'node_modules', '@mco', 'core', 'crds'))).toBe(true);
    // @mco/crds ships the chart's crds/, the one source of them, byte for byte.
    const chartCrds = join(REPO, 'apps', 'mco', 'chart', 'crds');
    const shipped = join(dir, 'node_modules', '@mco', 'crds', 'crds');
    expect(readdirSync(shipped).sort()).toEqual(readdirSync(chartCrds).sort());
    for (const file of readdirSync(chartCrds)) {
      expect(readFileSync(join(shipped, file), 'utf8'), file).toBe(readFileSync(join(chartCrds, file), 'utf8'));
    }
    expect(existsSync(join(dir, 'node_modules', '@mco', 'provider-manual', 'deploy', 'rbac.yaml'))).toBe(true);
  });

  it('decides from plain ESM, and every package imports', async () => {
    writeFileSync(join(dir, 'decide.mjs'), `import { decide } from '@mco/core';\n${DECIDE}`);
    expect(JSON.parse(await node(dir, 'decide.mjs'))).toEqual([['fleet/eu-1', 'ACTIVE']]);
    const names = libraries(packages);
    writeFileSync(
      join(dir, 'import-all.mjs'),
      `for (const name of ${JSON.stringify(names)}) console.log(name, Object.keys(await import(name)).length);\n`,
    );
    const lines = (await node(dir, 'import-all.mjs')).trim().split('\n');
    expect(lines.map((l) => l.split(' ')[0])).toEqual(names);
    for (const line of lines) expect(Number(line.split(' ')[1]), line).toBeGreaterThan(0);
  });

  it('decides from CommonJS with require(), and every package requires', async () => {
    writeFileSync(join(dir, 'decide.cjs'), `const { decide } = require('@mco/core');\n${DECIDE}`);
    expect(JSON.parse(await node(dir, 'decide.cjs'))).toEqual([['fleet/eu-1', 'ACTIVE']]);
    const names = libraries(packages);
    writeFileSync(
      join(dir, 'require-all.cjs'),
      `for (const name of ${JSON.stringify(names)}) console.log(name, Object.keys(require(name)).length);\n`,
    );
    const lines = (await node(dir, 'require-all.cjs')).trim().split('\n');
    expect(lines.map((l) => l.split(' ')[0])).toEqual(names);
    for (const line of lines) expect(Number(line.split(' ')[1]), line).toBeGreaterThan(0);
  });

  it.each(Object.keys(TS_CONFIGS))(
    'type-checks a strict TypeScript consumer under module resolution %s',
    async (kind) => {
      const project = join(dir, 'ts', kind);
      mkdirSync(project, { recursive: true });
      writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(join(project, 'index.ts'), typescriptConsumer(libraries(packages)));
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            ...TS_CONFIGS[kind as keyof typeof TS_CONFIGS],
            target: 'ES2022',
            lib: ['ES2023'],
            types: ['node'],
            strict: true,
            noEmit: true,
            // Every package's declarations checked too; client-node's need @types/ws (installed above).
            skipLibCheck: false,
          },
          include: ['index.ts'],
        }),
      );
      await expect(node(project, join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.')).resolves.toBe('');
    },
    // Every declaration file is checked (skipLibCheck: false): about a minute alone, 4-5 at load average 40.
    600_000,
  );

  it('runs a fast-check property with @mco/core/testing', async () => {
    writeFileSync(
      join(dir, 'property.mjs'),
      `import fc from 'fast-check';
import { decide } from '@mco/core';
import { aPlacement, arbFleet } from '@mco/core/testing';
let runs = 0;
fc.assert(fc.property(arbFleet(), (fleet) => {
  runs++;
  const { status } = decide({ now: new Date(), placement: aPlacement('web', { clusterSelectorRules: [{ type: 'all-clusters' }] }), clusterProfiles: fleet });
  const keys = new Set(fleet.map((p) => p.metadata.namespace + '/' + p.metadata.name));
  return (status.clusters ?? []).every((c) => keys.has(c.namespace + '/' + c.name));
}), { numRuns: 50 });
console.log(runs);
`,
    );
    expect(Number(await node(dir, 'property.mjs'))).toBe(50);
  });

  // The second copy differs only by its name: it is built for the suite below.
  it('the template copied as mco-provider-alpha passes its tests, type-checks and builds', async () => {
    const id = PROVIDERS[0];
    const npm = (...args: string[]) => run('npm', [...args, '-w', `providers/${id}`], dir);
    await npm('test');
    await npm('run', 'typecheck');
    await npm('run', 'build');
    expect(existsSync(join(dir, 'providers', id, 'dist', 'index.js'))).toBe(true);
    expect(existsSync(join(dir, 'providers', id, 'dist', 'index.d.ts'))).toBe(true);
  });
});

async function eventually<T>(
  what: () => string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 120_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read().catch(() => undefined);
    if (last !== undefined && ok(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what()}; last: ${JSON.stringify(last)}`);
}

interface Profile {
  metadata: {
    name: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    managedFields?: { manager?: string }[];
  };
  spec?: { clusterManager?: { name?: string } };
  status?: { accessProviders?: unknown[] };
}

describeWithControlPlane(
  'two providers made from the template, run by mco inventory in one namespace',
  { tools: ['npm-packages'] },
  () => {
    let cp: ControlPlane;
    let dir: string;
    let kubeconfig: string;
    let api: CustomObjectsApi;
    let mco: ChildProcess | undefined;
    let mcoLog = '';

    beforeAll(async () => {
      ({ dir } = await installScratch());
      cp = await startControlPlane();
      await cp.hub.installCrds([thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
      const admin: KubeConfig = cp.hub.adminKubeConfig();
      await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'fleet' } } });
      api = admin.makeApiClient(CustomObjectsApi);
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, admin.exportConfig(), { mode: 0o600 });
      // alpha is built by the suite above (when it ran), beta only here.
      for (const id of PROVIDERS) {
        if (!existsSync(join(dir, 'providers', id, 'dist', 'index.js'))) {
          await run('npm', ['run', 'build', '-w', `providers/${id}`], dir);
        }
      }
    }, 600_000);
    afterAll(async () => {
      await stopMco();
      await cp?.stop();
    });

    const profiles = async () =>
      (
        (await api.listNamespacedCustomObject({
          group: 'multicluster.x-k8s.io',
          version: 'v1alpha1',
          namespace: 'fleet',
          plural: 'clusterprofiles',
        })) as { items: Profile[] }
      ).items;
    const byName = (items: Profile[]) =>
      Object.fromEntries(items.map((p) => [p.metadata.name, p.spec?.clusterManager?.name]));

    function startMco(clusters: Record<(typeof PROVIDERS)[number], string[]>, allowMassPrune = false): void {
      const file = join(dir, 'providers.yaml');
      const entry = (id: (typeof PROVIDERS)[number]) => ({
        name: id,
        module: `mco-provider-${id}`, // a package name, resolved from this file's folder
        config: {
          managerName: id,
          namespace: 'fleet',
          pollSeconds: 1,
          allowMassPrune,
          clusters: clusters[id].map((name) => ({ name, server: `https://${name}.example:6443` })),
        },
      });
      writeFileSync(file, JSON.stringify({ providers: PROVIDERS.map(entry) }));
      mcoLog = '';
      const child = spawn(
        process.execPath,
        [
          join(dir, 'node_modules', 'mco', 'bin', 'mco.js'), // the installed mco, from its tarball
          'inventory',
          '--config',
          file,
          '--kubeconfig',
          kubeconfig,
          '--http-port',
          '0',
        ],
        { cwd: tmpdir(), stdio: ['ignore', 'ignore', 'pipe'] },
      );
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (mcoLog += chunk));
      mco = child;
    }

    async function stopMco(): Promise<number | null> {
      const child = mco;
      mco = undefined;
      if (!child || child.exitCode !== null) return child?.exitCode ?? null;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      return exited;
    }

    it('each owns only its profiles; one pruning all of its own leaves the other untouched', async () => {
      startMco({ alpha: ['a-1', 'a-2'], beta: ['b-1'] });
      // Created, then their status written: wait for both, so that run 2 has nothing left to write.
      const first = await eventually(
        () => `three profiles with their status (mco log: ${mcoLog})`,
        profiles,
        (items) => items.length === 3 && items.every((p) => p.status?.accessProviders?.length === 1),
      );
      expect(byName(first)).toEqual({ 'a-1': 'alpha', 'a-2': 'alpha', 'b-1': 'beta' });
      for (const p of first) {
        expect(p.metadata.labels?.['x-k8s.io/cluster-manager']).toBe(p.spec?.clusterManager?.name);
      }
      expect(await stopMco()).toBe(0);

      // alpha's source is now empty and complete: a decommission, so allowed explicitly (the
      // mass-prune guard refuses an empty source otherwise); it prunes its own profiles;
      // beta (pruning too, with one more cluster) keeps b-1 as it was.
      const b1 = first.find((p) => p.metadata.name === 'b-1')!.metadata.resourceVersion;
      startMco({ alpha: [], beta: ['b-1', 'b-2'] }, true);
      const second = await eventually(
        () => `alpha's profiles gone and b-2 added (mco log: ${mcoLog})`,
        profiles,
        (items) => items.length === 2 && items.some((p) => p.metadata.name === 'b-2'),
      );
      expect(byName(second)).toEqual({ 'b-1': 'beta', 'b-2': 'beta' });
      // Every write is logged, the deletions of a template provider included.
      const logged = (what: string, key: string) =>
        mcoLog.split('\n').some((line) => line.includes(`ClusterProfile ${what}`) && line.includes(key));
      await eventually(
        () => `a log line for each deletion and the creation (mco log: ${mcoLog})`,
        async () => ['a-1', 'a-2'].every((n) => logged('deleted', `fleet/${n}`)) && logged('created', 'fleet/b-2'),
        (ok) => ok,
      );
      expect(second.find((p) => p.metadata.name === 'b-1')!.metadata.resourceVersion).toBe(b1);
      // Nobody but its owner (field managers mco-<managerName>[-create]) ever wrote a profile.
      for (const p of [...first, ...second]) {
        const owner = `mco-${p.spec?.clusterManager?.name}`;
        for (const field of p.metadata.managedFields ?? []) {
          expect([owner, `${owner}-create`], p.metadata.name).toContain(field.manager);
        }
      }
      expect(await stopMco()).toBe(0);
    });
  },
);
