import { HubServerRefusedError } from '@mco/cluster-access';
import { aClusterProfile } from '@mco/core/testing';
import { McoError } from '@mco/runtime';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CREDENTIAL_EXPIRES_ANNOTATION,
  createSecretSyncer,
  refreshDelay,
  type ClusterAccessLike,
} from '../src/index.js';
import { FakeCache, FakeSecrets } from './fakes.js';

const until = async (condition: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('refreshDelay (when a credential is refreshed)', () => {
  it('lies between the latest refresh point brought forward by the jitter share and that point, and at least 1 s', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 7 * 24 * 3600_000 }),
        fc.integer({ min: 0, max: 3600_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (lifetime, before, jitter, r) => {
          const latest = lifetime - Math.min(before, lifetime / 2);
          const delay = refreshDelay(lifetime, before, jitter, () => r);
          expect(delay).toBeGreaterThanOrEqual(Math.max(1000, Math.floor(latest * (1 - jitter))));
          expect(delay).toBeLessThanOrEqual(Math.max(1000, Math.ceil(latest)));
        },
      ),
    );
  });

  it('spreads credentials that expire together over the jitter window', () => {
    // 1000 one-hour tokens minted at once, 5 min margin, jitter 0.2: refreshes fall in [44 min, 55 min].
    const delays = Array.from({ length: 1000 }, () => refreshDelay(3600_000, 300_000, 0.2));
    const minutes = new Set(delays.map((d) => Math.floor(d / 60_000)));
    expect({
      min: Math.min(...delays) >= 44 * 60_000,
      max: Math.max(...delays) <= 55 * 60_000,
      distinctMinutes: minutes.size >= 10,
    }).toEqual({ min: true, max: true, distinctMinutes: true });
  });
});

describe('the cluster Secret syncer under load', () => {
  it('runs at most `concurrency` reconciles (credential plugins) at once, and never one key twice at once', async () => {
    const profiles = Array.from({ length: 40 }, (_, i) =>
      aClusterProfile(`fleet/c${i}`, { server: `https://c${i}.example` }),
    );
    const cache = new FakeCache(profiles);
    const secrets = new FakeSecrets();
    let running = 0;
    let peak = 0;
    const runningKeys = new Set<string>();
    let overlap = false;
    const syncer = createSecretSyncer({
      clusterProfiles: cache,
      secrets,
      namespace: 'argocd',
      concurrency: 6,
      resolveAccess: async (profile) => ({
        server: `https://${profile.metadata.name}.example`,
        insecureSkipTlsVerify: false,
        async getCredential() {
          const key = profile.metadata.name;
          if (runningKeys.has(key)) overlap = true;
          runningKeys.add(key);
          peak = Math.max(peak, ++running);
          await new Promise((resolve) => setTimeout(resolve, 20));
          running--;
          runningKeys.delete(key);
          return { token: `t-${key}` };
        },
      }),
    });
    await syncer.start();
    // Events for keys already queued or running must not start a second reconcile of them.
    for (const p of profiles.slice(0, 10)) cache.set(p);
    await until(() => secrets.store.size === 40);
    await syncer.idle();
    syncer.stop();
    expect({ peak, overlap, secrets: secrets.store.size }).toEqual({ peak: 6, overlap: false, secrets: 40 });
  });

  it('refreshes a credential at its jittered time, before the credential cache would, and rewrites the Secret', async () => {
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    const secrets = new FakeSecrets();
    // The syncer and the cache read one clock that stops where the cache would mint again by itself (500 ms
    // before expiry: 7.5 s after the first credential is minted). The syncer plans its refresh halfway to that
    // point from when it plans (jitter 0.5, random 0.999): about 3.75 s after the mint when it plans at once,
    // and short of the stopped clock as long as it plans within 6.5 s of the mint (its 1 s minimum). So a
    // second credential can only come from the syncer invalidating the first at its own time, however late a
    // loaded machine runs it. (A clock stopped 2.5 s after the mint left 1.5 s, and a loaded CI took more.)
    const LIFETIME_MS = 8000;
    let firstMintedAt: number | undefined;
    const clock = () =>
      firstMintedAt === undefined ? Date.now() : Math.min(Date.now(), firstMintedAt + LIFETIME_MS - 500);
    let minted = 0;
    let cached: { token: string; expiresAt: Date } | undefined;
    let invalidations = 0;
    const access: ClusterAccessLike = {
      server: 'https://a.example',
      insecureSkipTlsVerify: false,
      async getCredential() {
        if (!cached || cached.expiresAt.getTime() - clock() < 500) {
          firstMintedAt ??= Date.now();
          minted++;
          cached = { token: `t${minted}`, expiresAt: new Date(clock() + LIFETIME_MS) };
        }
        return cached;
      },
      invalidate() {
        invalidations++;
        cached = undefined;
      },
    };
    const syncer = createSecretSyncer({
      clusterProfiles: new FakeCache([profile]),
      secrets,
      namespace: 'argocd',
      refreshBeforeMs: 500,
      refreshJitter: 0.5,
      random: () => 0.999,
      now: clock,
      resolveAccess: async () => access,
    });
    await syncer.start();
    // Latest refresh point 7.5 s after minting, brought forward by ~50%: a timer of about 3.75 s.
    await until(() => secrets.writes.length === 2, 30_000);
    syncer.stop();
    const expires = secrets.store.get('fleet.a')!.metadata!.annotations![CREDENTIAL_EXPIRES_ANNOTATION]!;
    expect({
      writes: secrets.writes,
      invalidations,
      minted,
      token: cached!.token,
      expiresAt: expires === cached!.expiresAt.toISOString(),
    }).toEqual({
      writes: ['create fleet.a', 'replace fleet.a'],
      invalidations: 1,
      minted: 2,
      token: 't2',
      expiresAt: true,
    });
  });

  it("deletes the Secret of a profile whose server turns out to be the hub's own, and keeps it on any other refusal", async () => {
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    const cache = new FakeCache([profile]);
    const secrets = new FakeSecrets();
    let refusal: Error | undefined;
    const syncer = createSecretSyncer({
      clusterProfiles: cache,
      secrets,
      namespace: 'argocd',
      retryMs: 60_000,
      resolveAccess: async () => {
        if (refusal) throw refusal;
        return {
          server: 'https://a.example',
          insecureSkipTlsVerify: false,
          getCredential: async () => ({ token: 't' }),
        };
      },
    });
    await syncer.start();
    await until(() => secrets.store.has('fleet.a'));
    // Another refusal (a doubt): the Secret stays.
    refusal = new McoError(
      'Invalid',
      'ClusterProfile fleet/a: cluster.server "https://a.example" is refused: it matches no allowedServers entry',
      false,
    );
    cache.set({ ...profile, metadata: { ...profile.metadata, resourceVersion: '2' } });
    await syncer.idle();
    const keptOnDoubt = secrets.store.has('fleet.a');
    // The name now resolves to the hub: the Secret goes.
    refusal = new HubServerRefusedError(
      'ClusterProfile fleet/a: cluster.server "https://a.example" is refused: its host resolves to 10.0.0.1, which is the hub\'s own API server',
    );
    cache.set({ ...profile, metadata: { ...profile.metadata, resourceVersion: '3' } });
    await until(() => !secrets.store.has('fleet.a'));
    await syncer.idle();
    syncer.stop();
    expect({ keptOnDoubt, writes: secrets.writes }).toEqual({
      keptOnDoubt: true,
      writes: ['create fleet.a', 'delete fleet.a'],
    });
  });
});
