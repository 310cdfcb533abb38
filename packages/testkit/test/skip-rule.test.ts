import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { controlPlaneSkipReason, ENABLE_HINT } from '../src/index.js';

// Fake directories standing in for a Go install and for envtest binaries.
const dir = mkdtempSync(join(tmpdir(), 'mco-skip-rule-'));
const executable = (path: string) => {
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
};
const goBin = join(dir, 'go-bin');
const assets = join(dir, 'assets');
const emptyAssets = join(dir, 'empty-assets');
for (const d of [goBin, assets, emptyAssets]) mkdirSync(d);
executable(join(goBin, 'go'));
executable(join(assets, 'kube-apiserver'));
executable(join(assets, 'etcd'));
const NO_STANDARD_GO = join(dir, 'nowhere', 'go');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('when integration tests run or are skipped', () => {
  it.each([
    { name: 'CI=true always runs them (missing binaries then fail the suite)', env: { CI: 'true' }, skip: undefined },
    { name: 'Go on PATH runs them (build.sh builds once)', env: { PATH: goBin }, skip: undefined },
    { name: 'KUBEBUILDER_ASSETS with both binaries runs them', env: { KUBEBUILDER_ASSETS: assets }, skip: undefined },
    {
      name: 'no Go and no KUBEBUILDER_ASSETS skips them, saying how to enable them',
      env: { PATH: emptyAssets },
      skip: `no Go toolchain and no KUBEBUILDER_ASSETS; to enable: ${ENABLE_HINT}`,
    },
    {
      name: 'KUBEBUILDER_ASSETS without the binaries and no Go skips them, naming the directory',
      env: { PATH: emptyAssets, KUBEBUILDER_ASSETS: emptyAssets },
      skip: `KUBEBUILDER_ASSETS=${emptyAssets} lacks kube-apiserver or etcd, and no Go toolchain was found; to enable: ${ENABLE_HINT}`,
    },
  ])('$name', ({ env, skip }) => {
    expect(controlPlaneSkipReason({}, env, NO_STANDARD_GO)).toBe(skip);
  });

  it('puts the reason on one line', () => {
    const reason = controlPlaneSkipReason({}, { PATH: emptyAssets }, NO_STANDARD_GO) ?? '';
    expect({
      lines: reason.split('\n').length,
      mentions: ['Go', 'KUBEBUILDER_ASSETS'].every((w) => reason.includes(w)),
    }).toEqual({
      lines: 1,
      mentions: true,
    });
  });
});
