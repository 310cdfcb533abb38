import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { controlPlaneSkipReason, ENABLE_HINT, locateBinaries, PREPARE_HINT, preparedTool } from '../src/index.js';

// Fake directories standing in for prepared tools and envtest binaries, and
// manifests as scripts/prepare-tools.mjs writes them.
const dir = mkdtempSync(join(tmpdir(), 'mco-skip-rule-'));
const executable = (path: string) => {
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
};
const assets = join(dir, 'assets');
const emptyAssets = join(dir, 'empty-assets');
for (const d of [assets, emptyAssets]) mkdirSync(d);
executable(join(assets, 'kube-apiserver'));
executable(join(assets, 'etcd'));
const helm = executable(join(dir, 'helm'));
const manifest = (name: string, tools: Record<string, string>) => {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(tools));
  return path;
};
const prepared = manifest('prepared', { 'k8s-testbin': assets, helm });
const preparedWithoutHelm = manifest('no-helm', { 'k8s-testbin': assets });
const gone = manifest('gone', { 'k8s-testbin': join(dir, 'deleted-cache'), helm: join(dir, 'deleted-helm') });
const none = join(dir, 'never-written.json');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('when integration tests run or are skipped', () => {
  it.each([
    {
      name: 'CI=true always runs them (missing binaries then fail the suite)',
      env: { CI: 'true', MCO_TOOLS_MANIFEST: none },
      skip: undefined,
    },
    { name: 'prepared binaries run them', env: { MCO_TOOLS_MANIFEST: prepared }, skip: undefined },
    {
      name: 'MCO_UNIT_ONLY=1 skips them even under CI with everything prepared (the pass on the oldest Node.js)',
      env: { CI: 'true', MCO_UNIT_ONLY: '1', MCO_TOOLS_MANIFEST: prepared },
      skip: 'MCO_UNIT_ONLY=1 (the unit pass on the oldest supported Node.js)',
    },
    {
      name: 'KUBEBUILDER_ASSETS with both binaries runs them without any preparation',
      env: { KUBEBUILDER_ASSETS: assets, MCO_TOOLS_MANIFEST: none },
      skip: undefined,
    },
    {
      name: 'nothing prepared skips them, saying how to prepare',
      env: { MCO_TOOLS_MANIFEST: none },
      skip: `kube-apiserver and etcd are not prepared; to enable: ${ENABLE_HINT}`,
    },
    {
      name: 'a prepared path that has since been deleted skips them',
      env: { MCO_TOOLS_MANIFEST: gone },
      skip: `kube-apiserver and etcd are not prepared; to enable: ${ENABLE_HINT}`,
    },
    {
      name: 'KUBEBUILDER_ASSETS without the binaries and nothing prepared skips them, naming the directory',
      env: { KUBEBUILDER_ASSETS: emptyAssets, MCO_TOOLS_MANIFEST: none },
      skip: `KUBEBUILDER_ASSETS=${emptyAssets} lacks kube-apiserver or etcd, and none were prepared; to enable: ${ENABLE_HINT}`,
    },
  ])('$name', ({ env, skip }) => {
    expect(controlPlaneSkipReason({}, env)).toBe(skip);
  });

  it('skips a suite that needs another tool which was not prepared, naming the tool', () => {
    expect({
      withHelm: controlPlaneSkipReason({ tools: ['helm'] }, { MCO_TOOLS_MANIFEST: prepared }),
      withoutHelm: controlPlaneSkipReason({ tools: ['helm'] }, { MCO_TOOLS_MANIFEST: preparedWithoutHelm }),
    }).toEqual({ withHelm: undefined, withoutHelm: `helm not prepared; to enable: ${PREPARE_HINT}` });
  });

  it('puts the reason on one line', () => {
    const reason = controlPlaneSkipReason({}, { MCO_TOOLS_MANIFEST: none }) ?? '';
    expect({
      lines: reason.split('\n').length,
      mentions: ['npm test', 'KUBEBUILDER_ASSETS'].every((w) => reason.includes(w)),
    }).toEqual({ lines: 1, mentions: true });
  });
});

describe('finding prepared tools never builds', () => {
  it('reads paths from the manifest and refuses missing ones with a clear error', () => {
    expect({
      helm: preparedTool('helm', { MCO_TOOLS_MANIFEST: prepared }),
      deleted: preparedTool('helm', { MCO_TOOLS_MANIFEST: gone }),
      binaries: locateBinaries({ MCO_TOOLS_MANIFEST: prepared }),
    }).toEqual({ helm, deleted: undefined, binaries: assets });
    expect(() => locateBinaries({ MCO_TOOLS_MANIFEST: none })).toThrow(
      `kube-apiserver and etcd are not prepared; to enable: ${ENABLE_HINT}`,
    );
  });
});
