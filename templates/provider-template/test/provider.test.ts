import { describe, expect, it } from 'vitest';
import { configSchema, name, toClusterProfiles } from '../src/index.js';

describe('my-inventory provider', () => {
  it('maps every source cluster to a profile in the configured namespace', () => {
    const config = configSchema.parse({ namespace: 'fleet' });
    expect(
      toClusterProfiles({ complete: true, clusters: [{ name: 'eu-1', server: 'https://eu-1:6443' }] }, config),
    ).toEqual([
      {
        namespace: 'fleet',
        name: 'eu-1',
        labels: { 'example.com/source': name },
        status: { accessProviders: [{ name: 'kubeconfig', cluster: { server: 'https://eu-1:6443' } }] },
      },
    ]);
  });

  it.each([
    ['an unknown key', { namespcae: 'fleet' }, 'namespcae'],
    ['a cluster without a server', { clusters: [{ name: 'a' }] }, 'server'],
  ])('rejects %s, naming it', (_name, input, field) => {
    const result = configSchema.safeParse(input);
    expect(result.success ? 'accepted' : JSON.stringify(result.error.issues)).toContain(field);
  });
});
