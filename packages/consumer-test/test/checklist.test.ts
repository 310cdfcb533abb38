// The package checklist of docs/packaging.md, checked on every publishable
// workspace's sources (the tarballs themselves are checked by
// consumer.integration.test.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishableWorkspaces, REPO } from './workspaces.js';

/** Packages whose types cross package boundaries: one copy in a project, so always peers. */
const SHARED = ['zod', '@kubernetes/client-node', 'prom-client', 'fast-check'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

function imported(dir: string): Set<string> {
  const found = new Set<string>();
  for (const file of sources(join(REPO, dir, 'src'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(/from '((?:@[^/']+\/)?[^/'.][^/']*)/g)) {
      if (!match[1]!.startsWith('node:')) found.add(match[1]!);
    }
  }
  return found;
}

const workspaces = publishableWorkspaces();

describe('package checklist (docs/packaging.md)', () => {
  it('finds the publishable workspaces itself', () => {
    expect(workspaces.map((w) => w.manifest.name)).toContain('@mco/core');
    expect(workspaces.map((w) => w.manifest.name)).not.toContain('@mco/testkit');
  });

  describe.each(workspaces.map((w) => [w.manifest.name, w] as const))('%s', (_name, { dir, manifest }) => {
    it('has a LICENSE, and a README with install, example and a link to the docs', () => {
      expect(readFileSync(join(REPO, dir, 'LICENSE'), 'utf8')).toContain('Apache License');
      const readme = readFileSync(join(REPO, dir, 'README.md'), 'utf8');
      expect(readme).toMatch(/^# /);
      expect(readme).toContain('## Install');
      expect(readme).toContain('## Example');
      expect(readme).toContain('https://github.com/mco-project/mco/blob/main/docs/');
    });

    it('names its repository folder and builds on prepack', () => {
      expect(manifest.repository).toEqual({
        type: 'git',
        url: 'git+https://github.com/mco-project/mco.git',
        directory: dir,
      });
      expect(manifest.scripts?.prepack).toBeDefined();
      expect(manifest.files).toContain('dist');
    });

    it('exports with a "default" condition (ESM and require() on Node >= 20.19), only to shipped folders', () => {
      for (const [subpath, conditions] of Object.entries(manifest.exports ?? {})) {
        expect(Object.keys(conditions), subpath).toContain('default');
        for (const target of Object.values(conditions)) {
          const top = target.replace(/^\.\//, '').split('/')[0]!;
          expect(manifest.files, `${subpath} -> ${target}`).toContain(top);
        }
      }
    });

    it("resolves under TypeScript's `--module commonjs` (node10 resolution ignores exports): main, types, typesVersions", () => {
      const exports = manifest.exports;
      if (!exports) return;
      expect({ main: manifest.main, types: manifest.types }).toEqual({
        main: exports['.']!.default,
        types: exports['.']!.types,
      });
      const subpaths = Object.entries(exports).filter(([subpath]) => subpath !== '.');
      expect(manifest.typesVersions?.['*'] ?? {}).toEqual(
        Object.fromEntries(subpaths.map(([subpath, c]) => [subpath.replace(/^\.\//, ''), [c.types]])),
      );
    });

    it('depends on ranges, with shared packages as peers (also installed for its own build)', () => {
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        expect(range, dep).toMatch(/^\^/);
        expect(SHARED, `${dep} must be a peer dependency`).not.toContain(dep);
      }
      const uses = imported(dir);
      for (const dep of SHARED.filter((d) => uses.has(d))) {
        expect(manifest.peerDependencies?.[dep], `${dep} is imported: a peer dependency`).toMatch(/^\^/);
        expect(manifest.devDependencies?.[dep], `${dep}: a dev dependency for the workspace`).toBeDefined();
      }
      for (const dep of uses) {
        const declared = manifest.dependencies?.[dep] ?? manifest.peerDependencies?.[dep];
        expect(declared, `${dep} is imported by src/ but not declared`).toBeDefined();
      }
    });
  });

  it('@mco/core/testing declares fast-check as an optional peer', () => {
    const core = workspaces.find((w) => w.manifest.name === '@mco/core')!.manifest;
    expect(core.peerDependencies?.['fast-check']).toBeDefined();
    expect(core.peerDependenciesMeta?.['fast-check']?.optional).toBe(true);
  });

  it('@mco/runtime imports @kubernetes/client-node for types only (an optional peer)', () => {
    const runtime = workspaces.find((w) => w.manifest.name === '@mco/runtime')!;
    const valueImports = sources(join(REPO, runtime.dir, 'src')).filter((f) =>
      /^import (?!type )[^;]*from '@kubernetes\/client-node'/m.test(readFileSync(f, 'utf8')),
    );
    expect(valueImports).toEqual([]);
    expect(runtime.manifest.peerDependenciesMeta?.['@kubernetes/client-node']?.optional).toBe(true);
  });

  it('@mco/kube-runtime requires @kubernetes/client-node (a peer npm installs beside it, never optional)', () => {
    // An optional peer is installed nowhere: `mco` then fails with "Cannot find module" on its first request.
    const kubeRuntime = workspaces.find((w) => w.manifest.name === '@mco/kube-runtime')!.manifest;
    expect(kubeRuntime.peerDependencies?.['@kubernetes/client-node']).toMatch(/^\^/);
    expect(kubeRuntime.peerDependenciesMeta?.['@kubernetes/client-node']?.optional).not.toBe(true);
  });

  it('declares one range per shared package across the workspaces, so npm installs one copy', () => {
    for (const dep of SHARED) {
      const ranges = new Set(workspaces.flatMap((w) => w.manifest.peerDependencies?.[dep] ?? []));
      expect(ranges.size, `${dep}: ${[...ranges].join(', ')}`).toBeLessThanOrEqual(1);
    }
  });

  it("the provider template's @mco/* ranges are the workspaces' current versions", () => {
    const template = JSON.parse(readFileSync(join(REPO, 'templates', 'provider-template', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const mcoDeps = Object.entries(template.dependencies).filter(([name]) => name.startsWith('@mco/'));
    expect(mcoDeps.length).toBeGreaterThan(0);
    for (const [name, range] of mcoDeps) {
      expect(range, name).toBe(`^${workspaces.find((w) => w.manifest.name === name)!.manifest.version}`);
    }
  });

  it('core ships the placement CRD the docs promise', () => {
    const core = workspaces.find((w) => w.manifest.name === '@mco/core')!;
    expect(core.manifest.files).toContain('crds');
    expect(
      existsSync(join(REPO, core.dir, 'crds', 'orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml')),
    ).toBe(true);
  });
});
