import { describe, expect, it } from 'vitest';
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
