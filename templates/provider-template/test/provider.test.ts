import { silentLogger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import * as capacity from '../src/capacity.js';
import { configSchema, toClusterProfiles } from '../src/index.js';

describe('my-inventory provider', () => {
  it('maps every source cluster to a profile in the configured namespace', () => {
    const config = configSchema.parse({ namespace: 'fleet', managerName: 'team-a' });
    expect(
      toClusterProfiles(
        { complete: true, clusters: [{ name: 'eu-1', server: 'https://eu-1:6443', labels: { region: 'eu' } }] },
        config,
      ),
    ).toEqual([
      {
        namespace: 'fleet',
        name: 'eu-1',
        labels: { region: 'eu' },
        status: { accessProviders: [{ name: 'kubeconfig', cluster: { server: 'https://eu-1:6443' } }] },
      },
    ]);
  });

  it.each([
    ['no manager name', {}, 'managerName'],
    ['a manager name that is not a label value', { managerName: 'team a' }, 'managerName'],
    ['an unknown key', { managerName: 'a', namespcae: 'fleet' }, 'namespcae'],
    ['a cluster without a server', { managerName: 'a', clusters: [{ name: 'a' }] }, 'server'],
  ])('rejects %s, naming it', (_name, input, field) => {
    const result = configSchema.safeParse(input);
    expect(result.success ? 'accepted' : JSON.stringify(result.error.issues)).toContain(field);
  });
});

describe('my-capacity source', () => {
  it('answers spare replicas for the clusters it knows, unknown for the others', async () => {
    const source = capacity.create(capacity.configSchema.parse({ spareReplicas: { 'fleet/eu-1': 4 } }), {
      logger: silentLogger,
      metrics: new Registry(),
      now: () => new Date('2026-01-01T00:00:00Z'),
      hub: {
        server: 'https://hub.invalid',
        insecureSkipTlsVerify: false,
        getCredential: async () => ({}),
        invalidate() {},
      },
    });
    const profile = (n: string) => ({ metadata: { name: n, namespace: 'fleet' } });
    const result = await source.answer({
      placement: { namespace: 'app', name: 'web', spec: {} },
      clusters: ['eu-1', 'eu-2'].map((n) => ({ key: `fleet/${n}`, profile: profile(n) })),
      placed: [],
    });
    expect(result).toEqual({
      answers: [
        {
          cluster: 'fleet/eu-1',
          addableReplicas: 4,
          observedAt: '2026-01-01T00:00:00.000Z',
          reason: 'my-capacity reports 4 spare replicas',
          source: 'my-capacity',
        },
        {
          cluster: 'fleet/eu-2',
          observedAt: '2026-01-01T00:00:00.000Z',
          reason: 'my-capacity knows nothing about fleet/eu-2',
          source: 'my-capacity',
        },
      ],
      errors: [],
    });
  });

  it('rejects a negative number of spare replicas, naming it', () => {
    const result = capacity.configSchema.safeParse({ spareReplicas: { 'fleet/eu-1': -1 } });
    expect(result.success ? 'accepted' : JSON.stringify(result.error.issues)).toContain('fleet/eu-1');
  });
});
