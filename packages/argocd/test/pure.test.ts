import { aClusterProfile, aPlacement } from '@mco/core/testing';
import type { ClusterProfile } from '@mco/core';
import { describe, expect, it } from 'vitest';
import { isListed } from '../src/run.js';
import {
  buildClusterSecret,
  isUpToDate,
  isValidSecretName,
  placementsOf,
  selectAccessProvider,
  type ApplicationSetLike,
} from '../src/index.js';

const plugin = (name: string, namespace: string) => ({
  plugin: {
    configMapRef: { name: 'argocd-mco-placement' },
    input: {
      parameters: { multiClusterOrchestraPlacementName: name, multiClusterOrchestraPlacementNamespace: namespace },
    },
  },
});

describe('placementsOf', () => {
  it.each<[string, ApplicationSetLike, string[]]>([
    ['a plain plugin generator', { spec: { generators: [plugin('web', 'apps')] } }, ['apps/web']],
    [
      'plugin generators nested in matrix and merge, de-duplicated and sorted',
      {
        spec: {
          generators: [
            { matrix: { generators: [plugin('b', 'x'), { list: { elements: [] } }] } },
            { merge: { generators: [{ matrix: { generators: [plugin('a', 'x'), plugin('b', 'x')] } }] } },
          ],
        },
      },
      ['x/a', 'x/b'],
    ],
    [
      'a plugin generator of another plugin (other parameter names)',
      { spec: { generators: [{ plugin: { input: { parameters: { foo: 'bar' } } } }] } },
      [],
    ],
    ['an ApplicationSet without generators', { spec: {} }, []],
  ])('finds %s', (_name, appSet, expected) => {
    expect(placementsOf(appSet)).toEqual(expected);
  });
});

const withProviders = (providers: NonNullable<ClusterProfile['status']>['accessProviders']): ClusterProfile => ({
  ...aClusterProfile('fleet/us-east1', { labels: { environment: 'production' } }),
  status: { accessProviders: providers },
});

describe('selectAccessProvider', () => {
  const profile = withProviders([
    { name: 'no-server' },
    { name: 'google', cluster: { server: 'https://connectgateway.example/a' } },
    { name: 'kubeconfig', cluster: { server: 'https://10.0.0.1' } },
  ]);
  it.each<[string, string[], string | undefined]>([
    ['the first entry with a server when no names are configured', [], 'google'],
    [
      'the first configured name the profile offers, in configured order',
      ['missing', 'kubeconfig', 'google'],
      'kubeconfig',
    ],
    ['nothing when no configured name is offered', ['missing'], undefined],
  ])('picks %s', (_name, names, expected) => {
    expect(selectAccessProvider(profile, names)?.providerName).toBe(expected);
  });
});

describe('buildClusterSecret', () => {
  const profile = aClusterProfile('fleet/us-east1', {
    labels: { environment: 'production', 'app.kubernetes.io/managed-by': 'someone-else' },
  });
  const access = {
    server: 'https://us-east1.example:6443',
    caData: 'Q0E=',
    tlsServerName: 'kubernetes.default',
    proxyUrl: 'http://proxy:3128',
    insecureSkipTlsVerify: false,
  };
  const decode = (value: string | undefined) => Buffer.from(value ?? '', 'base64').toString('utf8');

  it('maps access and credential to the Secret Argo CD reads, named and labelled as MCO did, mco labels winning', () => {
    const secret = buildClusterSecret(
      profile,
      access,
      { token: 'tok', expiresAt: new Date('2026-01-01T01:00:00Z') },
      { namespace: 'argocd' },
    );
    expect({
      ...secret,
      data: {
        name: decode(secret.data.name),
        server: decode(secret.data.server),
        config: JSON.parse(decode(secret.data.config)),
      },
    }).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'fleet.us-east1',
        namespace: 'argocd',
        labels: {
          environment: 'production',
          'app.kubernetes.io/managed-by': 'mco-argocd-cluster-sync',
          'argocd.argoproj.io/secret-type': 'cluster',
        },
        annotations: {
          'orchestra.multicluster.x-k8s.io/cluster-profile': 'fleet/us-east1',
          'orchestra.multicluster.x-k8s.io/credential-expires-at': '2026-01-01T01:00:00.000Z',
        },
      },
      data: {
        name: 'fleet.us-east1',
        server: 'https://us-east1.example:6443',
        config: {
          bearerToken: 'tok',
          tlsClientConfig: { insecure: false, serverName: 'kubernetes.default', caData: 'Q0E=' },
          proxyUrl: 'http://proxy:3128',
        },
      },
    });
  });

  it('writes a client certificate credential as base64 PEM certData/keyData', () => {
    const secret = buildClusterSecret(
      profile,
      { server: 'https://x', insecureSkipTlsVerify: true },
      { clientCertificateData: 'CERT PEM', clientKeyData: 'KEY PEM' },
      { namespace: 'argocd' },
    );
    expect(JSON.parse(decode(secret.data.config))).toEqual({
      tlsClientConfig: {
        insecure: true,
        certData: Buffer.from('CERT PEM').toString('base64'),
        keyData: Buffer.from('KEY PEM').toString('base64'),
      },
    });
  });

  it.each<[string, (s: ReturnType<typeof buildClusterSecret>) => object, boolean]>([
    [
      'an identical Secret from the server (extra metadata) is up to date',
      (s) => ({ ...s, metadata: { ...s.metadata, uid: 'u', annotations: { ...s.metadata.annotations, other: 'x' } } }),
      true,
    ],
    ['a changed token is not', (s) => ({ ...s, data: { ...s.data, config: 'e30=' } }), false],
    ['a removed label is not', (s) => ({ ...s, metadata: { ...s.metadata, labels: {} } }), false],
    [
      'a stale expiry annotation is not',
      (s) => ({
        ...s,
        metadata: {
          ...s.metadata,
          annotations: { ...s.metadata.annotations, 'orchestra.multicluster.x-k8s.io/credential-expires-at': 'old' },
        },
      }),
      false,
    ],
  ])('%s', (_name, change, expected) => {
    const desired = buildClusterSecret(
      profile,
      access,
      { token: 't', expiresAt: new Date(0) },
      { namespace: 'argocd' },
    );
    expect(isUpToDate(change(structuredClone(desired)), desired)).toBe(expected);
  });

  it.each([
    ['fleet.us-east1', true],
    [`fleet.${'a'.repeat(250)}`, false],
  ])('Secret name %s is valid: %s', (name, valid) => {
    expect(isValidSecretName(name)).toBe(valid);
  });
});

describe('isListed (may the Secret of a deleted profile be released?)', () => {
  const T = '2026-01-01T00:00:00Z';
  const listing = (key: string, cluster: string) =>
    aPlacement(
      key,
      {},
      {
        observedGeneration: 1,
        clusters: [{ namespace: 'fleet', name: cluster, state: 'EVICTING', lastTransitionTime: T }],
      },
    );
  it.each([
    ['a placement lists it', [listing('apps/web', 'east')], true],
    ['no placement lists it', [listing('apps/web', 'west')], false],
    [
      'another placement gives no information (no status): it may list it',
      [listing('apps/web', 'west'), aPlacement('apps/new')],
      undefined,
    ],
    [
      'another placement was never stamped by the controller',
      [listing('apps/web', 'west'), { ...aPlacement('apps/restored'), status: { clusters: [] } }],
      undefined,
    ],
    ['one lists it, whatever the others say', [listing('apps/web', 'east'), aPlacement('apps/new')], true],
  ])('%s', (_name, placements, expected) => {
    expect(isListed(placements, 'fleet', 'east')).toBe(expected);
  });
});
