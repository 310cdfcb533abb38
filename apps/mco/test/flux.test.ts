import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Orphan } from '@mco/flux';
import { probes } from '../src/commands/flux.js';
import { main } from '../src/main.js';

function file(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'mco-flux-cli-')), name);
  writeFileSync(path, content);
  return path;
}

async function mco(...argv: string[]) {
  let stderr = '';
  const code = await main(argv, { stdout: () => {}, stderr: (t) => void (stderr += t) });
  return { code, stderr };
}

describe('mco flux configuration errors', () => {
  const providers = file(
    'providers.yaml',
    'providers: [{name: p, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}, allowedServers: [https://member.example]}]',
  );

  it('exits 2 without --provider-file', async () => {
    const { code, stderr } = await mco('flux', '--input-providers');
    expect(stderr).toMatch(/missing --provider-file <path>/);
    expect(code).toBe(2);
  });

  it('exits 2 with nothing to write', async () => {
    const { code, stderr } = await mco('flux', '--provider-file', providers);
    expect(stderr).toMatch(/give --input-providers, --templates <path>, or both/);
    expect(code).toBe(2);
  });

  it('exits 2 for a helmRelease template with --no-helm-releases', async () => {
    const templates = file(
      'templates.yaml',
      'templates: [{placement: {namespace: apps, name: web}, helmRelease: {metadata: {name: web}, spec: {}}}]',
    );
    const { code, stderr } = await mco(
      'flux',
      '--provider-file',
      providers,
      '--templates',
      templates,
      '--no-helm-releases',
    );
    expect(stderr).toMatch(/--no-helm-releases: the templates file has a helmRelease/);
    expect(code).toBe(2);
  });

  it.each([
    [
      'a name that is no DNS label',
      'templates: [{placement: {namespace: apps, name: web}, kustomization: {metadata: {name: Web}, spec: {}}}]',
      /templates\[0\]\.kustomization\.metadata\.name: must be a DNS label/,
    ],
    [
      'a template that sets kubeConfig',
      'templates: [{placement: {namespace: apps, name: web}, kustomization: {metadata: {name: web}, spec: {kubeConfig: {}}}}]',
      /spec\.kubeConfig is set by mco per cluster/,
    ],
    [
      'a template without objects',
      'templates: [{placement: {namespace: apps, name: web}}]',
      /templates\[0\]: give a kustomization, a helmRelease or both/,
    ],
  ])('exits 2 for %s, naming the field', async (_name, content, message) => {
    const { code, stderr } = await mco(
      'flux',
      '--provider-file',
      providers,
      '--templates',
      file('templates.yaml', content),
    );
    expect(stderr).toMatch(message);
    expect(code).toBe(2);
  });
});

describe('mco flux metrics', () => {
  it('counts the orphaned Flux objects the delivery reports, by kind and ResourceSet', async () => {
    const orphan = (name: string, kind: Orphan['kind'] = 'Kustomization'): Orphan => ({
      kind,
      namespace: 'flux-system',
      name,
      uid: name,
      secretName: 'mco-kubeconfig-x',
      resourceSet: { namespace: 'flux-system', name: 'web' },
      inInventory: false,
    });
    let orphans: Orphan[] = [orphan('a'), orphan('b'), orphan('c', 'HelmRelease')];
    let deleted = 0;
    const { registry, isReady } = probes({ orphans: () => orphans, orphansDeleted: () => deleted, ready: () => true });
    const text = await registry.metrics();
    expect(text).toContain(
      'mco_flux_orphaned_objects{kind="Kustomization",resourceset_namespace="flux-system",resourceset="web"} 2',
    );
    expect(text).toContain(
      'mco_flux_orphaned_objects{kind="HelmRelease",resourceset_namespace="flux-system",resourceset="web"} 1',
    );
    expect(text).toContain('mco_flux_orphans_deleted_total 0');
    orphans = [];
    deleted = 3;
    const after = await registry.metrics();
    expect(after).not.toMatch(/^mco_flux_orphaned_objects\{/m);
    expect(after).toContain('mco_flux_orphans_deleted_total 3');
    expect(isReady()).toBe(true);
  });
});
