import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterFromKubeconfig, parseClustersFile, resolveClusterDeclarations } from '../src/index.js';

const fixtures = fileURLToPath(new URL('./fixtures', import.meta.url));
const caPem = readFileSync(`${fixtures}/ca.pem`);
const caData = caPem.toString('base64');
const resolveOptions = { namespace: 'fleet', baseDir: fixtures };

describe('parseClustersFile', () => {
  it.each([
    [
      'an unknown field names itself',
      { clusters: [{ name: 'a', lables: {} }] },
      'clusters[0]: Unrecognized key: "lables"',
    ],
    [
      'an upper-case name is rejected',
      { clusters: [{ name: 'EU' }] },
      'clusters[0].name: must be a lower-case DNS subdomain',
    ],
    [
      'the manager label is reserved',
      { clusters: [{ name: 'a', labels: { 'x-k8s.io/cluster-manager': 'me' } }] },
      'clusters[0].labels.x-k8s.io/cluster-manager: is set by the provider; remove it',
    ],
    [
      'an invalid label value is rejected',
      { clusters: [{ name: 'a', labels: { tier: '-gold' } }] },
      'clusters[0].labels.tier: is not a valid label value',
    ],
    [
      'a CA that is not base64 PEM is rejected',
      { clusters: [{ name: 'a', server: 'https://a', certificateAuthorityData: 'bm90IGEgY2VydA==' }] },
      'clusters[0].certificateAuthorityData: must be base64 of a PEM certificate bundle',
    ],
    [
      'a server that is not http(s) is rejected',
      { clusters: [{ name: 'a', server: 'ftp://a' }] },
      'clusters[0].server:',
    ],
    [
      'CA fields without a server are rejected',
      { clusters: [{ name: 'a', certificateAuthorityData: caData }] },
      'clusters[0].server: is required with certificateAuthorityData',
    ],
    [
      'explicit access providers exclude the shorthand',
      { clusters: [{ name: 'a', server: 'https://a', accessProviders: [{ name: 'x' }] }] },
      'clusters[0].accessProviders: cannot be combined with server',
    ],
    [
      'a kubeconfig context excludes a server',
      { clusters: [{ name: 'a', server: 'https://a', fromKubeconfig: { path: 'k', context: 'c' } }] },
      'clusters[0].fromKubeconfig: cannot be combined with server: the context provides them',
    ],
    [
      'a repeated cluster is rejected',
      { clusters: [{ name: 'a' }, { name: 'b' }, { name: 'a' }] },
      'clusters[2].name: repeats clusters[0]',
    ],
    [
      'a negative health flag must be a boolean',
      { clusters: [{ name: 'a', controlPlaneHealthy: 'no' }] },
      'clusters[0].controlPlaneHealthy:',
    ],
  ])('%s', (_name, input, message) => {
    expect(() => parseClustersFile(input, 'clusters.yaml')).toThrow(`invalid clusters.yaml: ${message}`);
  });

  it.each([
    ['an empty or comments-only document', null, 'the file is empty'],
    ['{}', {}, 'clusters: Invalid input: expected array, received undefined'],
  ])('%s is an error naming the file, never zero clusters', (_name, input, message) => {
    expect(() => parseClustersFile(input, 'clusters.yaml')).toThrow(`invalid clusters.yaml: ${message}`);
  });

  it('an explicit empty list declares no cluster', () => {
    expect(parseClustersFile({ clusters: [] })).toEqual({ clusters: [] });
  });
});

describe('resolveClusterDeclarations', () => {
  it('a full declaration becomes labels, annotations, access provider, sorted properties, health and version', async () => {
    const file = parseClustersFile({
      clusters: [
        {
          name: 'eu-1',
          displayName: 'EU 1',
          labels: { region: 'eu' },
          annotations: { 'example.com/owner': 'team-a' },
          properties: { zone: 'eu-west1-b', 'cpu.capacity': '64' },
          server: 'https://eu-1.example.test:6443',
          certificateAuthorityFile: 'ca.pem',
          tlsServerName: 'api.eu-1',
          proxyUrl: 'http://proxy.example.test:3128',
          accessProvider: 'kubeconfig',
          extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'eu-1' } }],
          controlPlaneHealthy: false,
          kubernetesVersion: 'v1.34.1',
        },
        { name: 'inventory-only', namespace: 'other' },
      ],
    });
    expect(await resolveClusterDeclarations(file.clusters, resolveOptions)).toEqual([
      {
        namespace: 'fleet',
        name: 'eu-1',
        displayName: 'EU 1',
        labels: { region: 'eu' },
        annotations: { 'example.com/owner': 'team-a' },
        status: {
          accessProviders: [
            {
              name: 'kubeconfig',
              cluster: {
                server: 'https://eu-1.example.test:6443',
                'certificate-authority-data': caData,
                'tls-server-name': 'api.eu-1',
                'proxy-url': 'http://proxy.example.test:3128',
                extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'eu-1' } }],
              },
            },
          ],
          properties: [
            { name: 'cpu.capacity', value: '64' },
            { name: 'zone', value: 'eu-west1-b' },
          ],
          conditions: [
            {
              type: 'ControlPlaneHealthy',
              status: 'False',
              reason: 'DeclaredUnhealthy',
              message: 'declared in the clusters file',
            },
          ],
          version: { kubernetes: 'v1.34.1' },
        },
      },
      { namespace: 'other', name: 'inventory-only', status: { accessProviders: [], properties: [], conditions: [] } },
    ]);
  });

  it('a kubeconfig context gives server, inlined CA and TLS name, never credentials', async () => {
    const file = parseClustersFile({
      clusters: [{ name: 'dev', fromKubeconfig: { path: 'kubeconfig.yaml', context: 'dev' }, accessProvider: 'token' }],
    });
    const [profile] = await resolveClusterDeclarations(file.clusters, resolveOptions);
    expect(profile?.status?.accessProviders).toEqual([
      {
        name: 'token',
        cluster: {
          server: 'https://dev.example.test:6443',
          'certificate-authority-data': caData,
          'tls-server-name': 'api.dev.example.test',
        },
      },
    ]);
    expect(JSON.stringify(profile)).not.toContain('not-a-real-secret');
  });

  it.each([
    [
      'a missing CA file names the field',
      { name: 'a', server: 'https://a', certificateAuthorityFile: 'missing.pem' },
      'clusters[0].certificateAuthorityFile: cannot read',
    ],
    [
      'a CA file without a certificate names the field',
      { name: 'a', server: 'https://a', certificateAuthorityFile: 'kubeconfig.yaml' },
      'clusters[0].certificateAuthorityFile: ',
    ],
    [
      'an unknown context lists the known ones',
      { name: 'a', fromKubeconfig: { path: 'kubeconfig.yaml', context: 'nope' } },
      'clusters[0].fromKubeconfig: context "nope" not found (contexts: dev, prod, dangling)',
    ],
    [
      'a context naming an undefined cluster is reported',
      { name: 'a', fromKubeconfig: { path: 'kubeconfig.yaml', context: 'dangling' } },
      'clusters[0].fromKubeconfig: context "dangling" names cluster "nowhere", which is not defined',
    ],
    [
      'a missing kubeconfig names the field',
      { name: 'a', fromKubeconfig: { path: 'nope.yaml', context: 'dev' } },
      'clusters[0].fromKubeconfig: ',
    ],
  ])('%s', async (_name, declaration, message) => {
    const file = parseClustersFile({ clusters: [declaration] });
    await expect(resolveClusterDeclarations(file.clusters, resolveOptions)).rejects.toThrow(message);
  });

  it('publishes only the X.509 certificates of a CA file: a private key beside them never reaches the profile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-ca-'));
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const key = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    writeFileSync(join(dir, 'bundle.pem'), `${key}${caPem.toString()}`);
    writeFileSync(join(dir, 'fake.pem'), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n');
    writeFileSync(join(dir, 'key-only.pem'), key);
    const resolveCa = (file: string) =>
      resolveClusterDeclarations(
        parseClustersFile({ clusters: [{ name: 'a', server: 'https://a', certificateAuthorityFile: file }] }).clusters,
        { namespace: 'fleet', baseDir: dir },
      ).then(
        ([p]) => p!.status!.accessProviders![0]!.cluster!['certificate-authority-data'],
        (error: Error) => error.message,
      );
    expect({
      bundle: await resolveCa('bundle.pem'),
      fake: await resolveCa('fake.pem'),
      keyOnly: await resolveCa('key-only.pem'),
    }).toEqual({
      bundle: caData,
      fake: `clusters[0].certificateAuthorityFile: ${join(dir, 'fake.pem')} holds a CERTIFICATE block that is not an X.509 certificate`,
      keyOnly: `clusters[0].certificateAuthorityFile: ${join(dir, 'key-only.pem')} holds no PEM certificate`,
    });
  });

  it('the same name in the default namespace and named explicitly is a repeat', async () => {
    const file = parseClustersFile({ clusters: [{ name: 'a' }, { name: 'a', namespace: 'fleet' }] });
    await expect(resolveClusterDeclarations(file.clusters, resolveOptions)).rejects.toThrow(
      'clusters[1].name: fleet/a repeats clusters[0]',
    );
  });
});

describe('clusterFromKubeconfig', () => {
  it('an insecure context says so', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(`${fixtures}/kubeconfig.yaml`);
    expect(await clusterFromKubeconfig(kc, 'prod')).toEqual({
      server: 'https://prod.example.test',
      'insecure-skip-tls-verify': true,
    });
  });
});
