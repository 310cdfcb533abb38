import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import { describe, expect, it } from 'vitest';
import { createTrustedServerOf } from '../src/index.js';
import { FakeCache } from './fakes.js';

function profile(key: string, created: string, cluster: Record<string, unknown>): ClusterProfile {
  const p = aClusterProfile(key);
  return {
    ...p,
    metadata: { ...p.metadata, creationTimestamp: created },
    status: { accessProviders: [{ name: 'google', cluster: cluster as { server: string } }] },
  };
}

const OLD = '2026-01-01T00:00:00Z';
const NEW = '2026-02-01T00:00:00Z';

describe("the plugin's server output", () => {
  it.each([
    {
      name: 'gives the server of a profile the syncer accepts',
      profiles: [profile('fleet/prod', OLD, { server: 'https://prod.example' })],
      want: { 'fleet/prod': 'https://prod.example' },
    },
    {
      name: "is null for kubernetes.default.svc, the hub's own server, loopback and plain http",
      profiles: [
        profile('fleet/in-cluster', OLD, { server: 'https://kubernetes.default.svc' }),
        profile('fleet/hub', OLD, { server: 'https://hub.example:6443' }),
        profile('fleet/loopback', OLD, { server: 'https://127.0.0.1:6443' }),
        profile('fleet/http', OLD, { server: 'http://prod.example' }),
      ],
      want: { 'fleet/in-cluster': null, 'fleet/hub': null, 'fleet/loopback': null, 'fleet/http': null },
    },
    {
      name: "is null for the newer of two profiles naming one server, so an Application cannot land on another profile's cluster",
      profiles: [
        profile('team-b/copy', NEW, { server: 'https://prod.example/' }),
        profile('fleet/prod', OLD, { server: 'https://prod.example' }),
      ],
      want: { 'team-b/copy': null, 'fleet/prod': 'https://prod.example' },
    },
    {
      name: 'is null for a server outside the provider allowlist, insecure TLS or a proxy the provider does not allow',
      profiles: [
        profile('fleet/outside', OLD, { server: 'https://attacker.example' }),
        profile('fleet/insecure', OLD, { server: 'https://b.prod.example', 'insecure-skip-tls-verify': true }),
        profile('fleet/proxied', OLD, { server: 'https://c.prod.example', 'proxy-url': 'http://attacker.example' }),
        profile('fleet/ok', OLD, { server: 'https://d.prod.example' }),
      ],
      policies: [{ name: 'google', allowedServers: ['https://*.prod.example'] }],
      want: {
        'fleet/outside': null,
        'fleet/insecure': null,
        'fleet/proxied': null,
        'fleet/ok': 'https://d.prod.example',
      },
    },
  ])('$name', ({ profiles, policies, want }) => {
    const serverOf = createTrustedServerOf({
      clusterProfiles: new FakeCache(profiles),
      policies,
      hubServer: 'https://hub.example:6443',
    });
    expect(
      Object.fromEntries(profiles.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, serverOf(p)])),
    ).toEqual(want);
  });

  it('follows the cache: when the older profile goes, the newer one gets the server', () => {
    const prod = profile('fleet/prod', OLD, { server: 'https://prod.example' });
    const copy = profile('team-b/copy', NEW, { server: 'https://prod.example' });
    const cache = new FakeCache([prod, copy]);
    const serverOf = createTrustedServerOf({ clusterProfiles: cache });
    const before = serverOf(copy);
    cache.delete('fleet/prod');
    expect({ before, after: serverOf(copy) }).toEqual({ before: null, after: 'https://prod.example' });
  });
});
