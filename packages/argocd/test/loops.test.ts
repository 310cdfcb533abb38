import type { ClusterProfile, Placement, PlacementStatus } from '@mco/core';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import { describe, expect, it } from 'vitest';
import { KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import { createLogger } from '@mco/runtime';
import {
  buildClusterSecret,
  createApplicationSetRefresher,
  createCachedPlacementView,
  createSecretSyncer,
  REFRESH_ANNOTATION,
  RELEASED_AT_ANNOTATION,
  type ApplicationSetLike,
  type ClusterAccessLike,
} from '../src/index.js';
import { FakeCache, FakeSecrets } from './fakes.js';

const T = '2026-01-01T00:00:00Z';
const listed = (...names: string[]): PlacementStatus => ({
  observedGeneration: 1,
  clusters: names.map((name) => ({ name, namespace: 'fleet', state: 'ACTIVE' as const, lastTransitionTime: T })),
});
const appSet = (name: string, placement: string): ApplicationSetLike => ({
  metadata: { name, namespace: 'argocd' },
  spec: {
    generators: [
      {
        plugin: {
          input: {
            parameters: {
              multiClusterOrchestraPlacementName: placement,
              multiClusterOrchestraPlacementNamespace: 'apps',
            },
          },
        },
      },
    ],
  },
});

describe('the ApplicationSet refresher', () => {
  function setup() {
    const placements = new FakeCache<Placement>([
      aPlacement('apps/web', {}, listed('a')),
      aPlacement('apps/api', {}, listed('a')),
    ]);
    const profiles = new FakeCache<ClusterProfile>([aClusterProfile('fleet/a'), aClusterProfile('fleet/b')]);
    const refreshed: string[] = [];
    const refresher = createApplicationSetRefresher({
      placements,
      clusterProfiles: profiles,
      applicationSets: {
        list: async () => [appSet('web-set', 'web'), appSet('api-set', 'api')],
        refresh: async (namespace, name) => void refreshed.push(`${namespace}/${name}`),
      },
      debounceMs: 5,
    });
    refresher.start();
    return { placements, profiles, refreshed, refresher };
  }

  it('takes the first synced view as the baseline and refreshes nothing for it', async () => {
    const { refreshed, refresher } = setup();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await refresher.idle();
    refresher.stop();
    expect(refreshed).toEqual([]);
  });

  it.each<[string, (s: ReturnType<typeof setup>) => void, string[]]>([
    [
      'a cluster joining refreshes the ApplicationSets of that placement only',
      (s) => s.placements.set(aPlacement('apps/web', {}, listed('a', 'b'))),
      ['argocd/web-set'],
    ],
    [
      'a desiredMaxReplicas change refreshes',
      (s) =>
        s.placements.set(
          aPlacement(
            'apps/web',
            {},
            {
              observedGeneration: 1,
              clusters: [
                {
                  name: 'a',
                  namespace: 'fleet',
                  state: 'SCALING_IN',
                  lastTransitionTime: T,
                  draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T },
                },
              ],
            },
          ),
        ),
      ['argocd/web-set'],
    ],
    [
      'a label change of a listed profile refreshes every placement listing it',
      (s) => s.profiles.set(aClusterProfile('fleet/a', { labels: { tier: 'gold' } })),
      ['argocd/api-set', 'argocd/web-set'],
    ],
    [
      'an update that changes nothing in the answer refreshes nothing',
      (s) =>
        s.placements.set({ ...aPlacement('apps/web', {}, listed('a')), spec: { rules: [{ type: 'all-clusters' }] } }),
      [],
    ],
    [
      'a placement whose status someone else wrote in an odd shape is skipped, never a crash',
      (s) =>
        s.placements.set({ ...aPlacement('apps/web'), status: { clusters: 'not a list' } } as unknown as Placement),
      [],
    ],
    [
      'an answer the plugin would refuse (ACTIVE cluster without profile) refreshes nothing',
      (s) => s.placements.set(aPlacement('apps/web', {}, listed('a', 'unknown'))),
      [],
    ],
  ])('%s', async (_name, change, expected) => {
    const s = setup();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await s.refresher.idle();
    change(s);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await s.refresher.idle();
    s.refresher.stop();
    expect(s.refreshed.sort()).toEqual(expected);
  });

  it('replaces an annotation a failed reconcile left (stale), since Argo CD reconciles only when it appears', async () => {
    const placements = new FakeCache<Placement>([aPlacement('apps/web', {}, listed('a'))]);
    const profiles = new FakeCache<ClusterProfile>([aClusterProfile('fleet/a'), aClusterProfile('fleet/b')]);
    const left = appSet('web-set', 'web');
    const calls: string[] = [];
    const refresher = createApplicationSetRefresher({
      placements,
      clusterProfiles: profiles,
      applicationSets: {
        list: async () => [
          { ...left, metadata: { ...left.metadata, annotations: { [REFRESH_ANNOTATION]: 'true' } } },
          { ...appSet('other-set', 'web') },
        ],
        refresh: async (namespace, name, stale) => void calls.push(`${namespace}/${name} stale=${stale}`),
      },
      debounceMs: 5,
    });
    refresher.start();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await refresher.idle();
    placements.set(aPlacement('apps/web', {}, listed('a', 'b')));
    await new Promise((resolve) => setTimeout(resolve, 30));
    await refresher.idle();
    refresher.stop();
    expect(calls.sort()).toEqual(['argocd/other-set stale=false', 'argocd/web-set stale=true']);
  });

  it('retries a failed refresh until it goes through', async () => {
    const placements = new FakeCache<Placement>([aPlacement('apps/web', {}, listed('a'))]);
    const profiles = new FakeCache<ClusterProfile>([aClusterProfile('fleet/a'), aClusterProfile('fleet/b')]);
    let failures = 2;
    const refreshed: string[] = [];
    const refresher = createApplicationSetRefresher({
      placements,
      clusterProfiles: profiles,
      applicationSets: {
        list: async () => {
          if (failures-- > 0) throw Object.assign(new Error('boom'), { code: 503 });
          return [appSet('web-set', 'web')];
        },
        refresh: async (namespace, name) => void refreshed.push(`${namespace}/${name}`),
      },
      debounceMs: 5,
      retryMs: 5,
    });
    refresher.start();
    await new Promise((resolve) => setTimeout(resolve, 30));
    placements.set(aPlacement('apps/web', {}, listed('a', 'b')));
    const deadline = Date.now() + 2000;
    while (refreshed.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    refresher.stop();
    expect({ refreshed, failuresLeft: failures }).toEqual({ refreshed: ['argocd/web-set'], failuresLeft: -1 });
  });
});

describe('the ApplicationSet refresher probing the plugin', () => {
  /** A refresher whose probe answers from `ready`; `probes` counts the calls. */
  function setup(ready: (boolean | 'refused')[]) {
    const placements = new FakeCache<Placement>([aPlacement('apps/web', {}, listed('a'))]);
    const profiles = new FakeCache<ClusterProfile>([aClusterProfile('fleet/a')]);
    const refreshed: string[] = [];
    const state = { probes: 0 };
    const refresher = createApplicationSetRefresher({
      placements,
      clusterProfiles: profiles,
      applicationSets: {
        list: async () => [
          appSet('web-set', 'web'),
          appSet('api-set', 'api'),
          { metadata: { name: 'git-set', namespace: 'argocd' } },
        ],
        refresh: async (namespace, name) => void refreshed.push(`${namespace}/${name}`),
      },
      debounceMs: 5,
      probeIntervalMs: 5,
      pluginReady: async () => {
        const answer = ready[Math.min(state.probes, ready.length - 1)]!;
        state.probes++;
        if (answer === 'refused') throw new Error('connection refused');
        return answer;
      },
    });
    return { refresher, refreshed, state };
  }
  const until = async (condition: () => boolean) => {
    const deadline = Date.now() + 5000;
    while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('refreshes every ApplicationSet that uses the plugin, once, when the plugin becomes ready again', async () => {
    const { refresher, refreshed, state } = setup([true, false, false, true]);
    refresher.start();
    await until(() => state.probes >= 8);
    await refresher.idle();
    refresher.stop();
    expect(refreshed.sort()).toEqual(['argocd/api-set', 'argocd/web-set']);
  });

  it('refreshes nothing while the plugin stays ready, nor when it is ready from the first probe', async () => {
    const { refresher, refreshed, state } = setup([true]);
    refresher.start();
    await until(() => state.probes >= 6);
    await refresher.idle();
    refresher.stop();
    expect(refreshed).toEqual([]);
  });

  it('takes a failed probe as unready', async () => {
    const { refresher, refreshed, state } = setup(['refused', false, true]);
    refresher.start();
    await until(() => state.probes >= 5);
    await until(() => refreshed.length >= 2);
    await refresher.idle();
    refresher.stop();
    expect(refreshed.sort()).toEqual(['argocd/api-set', 'argocd/web-set']);
  });
});

describe('the ApplicationSet refresher on an unexpected error', () => {
  it('logs it and retries: no unhandled rejection, and the next change is still refreshed', async () => {
    const placements = new FakeCache<Placement>([aPlacement('apps/web', {}, listed('a'))]);
    const profiles = new FakeCache<ClusterProfile>([aClusterProfile('fleet/a'), aClusterProfile('fleet/b')]);
    let bugs = 1;
    const get = placements.get.bind(placements);
    placements.get = (key: string) => {
      if (bugs > 0 && key === 'apps/web' && get(key)?.status?.clusters?.length === 2) {
        bugs--;
        throw new TypeError("Cannot read properties of undefined (reading 'x')");
      }
      return get(key);
    };
    const lines: string[] = [];
    const refreshed: string[] = [];
    const refresher = createApplicationSetRefresher({
      placements,
      clusterProfiles: profiles,
      applicationSets: {
        list: async () => [appSet('web-set', 'web')],
        refresh: async (namespace, name) => void refreshed.push(`${namespace}/${name}`),
      },
      debounceMs: 5,
      retryMs: 5,
      logger: createLogger({ level: 'error', write: (line) => lines.push(line) }),
    });
    refresher.start();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await refresher.idle();
    placements.set(aPlacement('apps/web', {}, listed('a', 'b')));
    const deadline = Date.now() + 2000;
    while (refreshed.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    refresher.stop();
    expect({
      refreshed,
      bugsLeft: bugs,
      logged: lines.map((l) => (JSON.parse(l) as { msg: string }).msg),
    }).toEqual({
      refreshed: ['argocd/web-set'],
      bugsLeft: 0,
      logged: ['refreshing ApplicationSets failed unexpectedly; retrying'],
    });
  });
});

describe('the cached placement view', () => {
  it.each<[string, { synced?: boolean; silentMs?: number }, boolean]>([
    ['synced and recently heard from', {}, true],
    ['an informer that has not listed yet', { synced: false }, false],
    ['an informer silent for longer than maxSilenceMs', { silentMs: 61_000 }, false],
  ])('is synced: %s -> %s', (_name, { synced = true, silentMs = 0 }, expected) => {
    const placements = new FakeCache<Placement>();
    const profiles = new FakeCache<ClusterProfile>();
    placements.synced = synced;
    placements.lastActivityAt = 1_000_000 - silentMs;
    profiles.lastActivityAt = 1_000_000;
    const view = createCachedPlacementView({
      placements,
      clusterProfiles: profiles,
      maxSilenceMs: 60_000,
      now: () => 1_000_000,
    });
    expect(view.synced()).toBe(expected);
  });

  it('refuses a placement whose status it cannot read, naming the field', () => {
    const broken = {
      ...aPlacement('apps/web'),
      status: { clusters: [{ name: 'a', state: 'RUNNING' }] },
    } as unknown as Placement;
    const view = createCachedPlacementView({
      placements: new FakeCache([broken]),
      clusterProfiles: new FakeCache<ClusterProfile>(),
    });
    expect(() => view.placement('apps', 'web')).toThrow(
      /placement apps\/web cannot be read: status\.clusters\[0\]\.state/,
    );
  });
});

describe('the cluster Secret syncer', () => {
  const access = (getCredential: ClusterAccessLike['getCredential']): ClusterAccessLike => ({
    server: 'https://a.example',
    insecureSkipTlsVerify: false,
    getCredential,
  });

  it('keeps the existing Secret when the credential cannot be had, and retries until it can (fail static)', async () => {
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    const secrets = new FakeSecrets();
    const old = buildClusterSecret(
      profile,
      access(async () => ({})),
      { token: 'old' },
      { namespace: 'argocd' },
    );
    await secrets.create(old);
    secrets.writes.length = 0;
    let attempts = 0;
    const syncer = createSecretSyncer({
      clusterProfiles: new FakeCache([profile]),
      secrets,
      namespace: 'argocd',
      retryMs: 5,
      resolveAccess: async () =>
        access(async () => {
          if (++attempts < 3) throw new Error('credential plugin failed');
          return { token: 'new' };
        }),
    });
    await syncer.start();
    const deadline = Date.now() + 2000;
    while (secrets.writes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    await syncer.idle();
    syncer.stop();
    const config = JSON.parse(Buffer.from(secrets.store.get('fleet.a')!.data!.config!, 'base64').toString());
    expect({ attempts, writes: secrets.writes, token: config.bearerToken }).toEqual({
      attempts: 3,
      writes: ['replace fleet.a'],
      token: 'new',
    });
  });

  it('waits quietly for a new profile to list an access provider, then writes its Secret', async () => {
    const profiles = new FakeCache([aClusterProfile('fleet/a')]);
    const secrets = new FakeSecrets();
    const lines: { level: string; msg: string }[] = [];
    const logger = createLogger({
      write: (line) => void lines.push(JSON.parse(line) as { level: string; msg: string }),
    });
    let resolved = 0;
    const syncer = createSecretSyncer({
      clusterProfiles: profiles,
      secrets,
      namespace: 'argocd',
      logger,
      // As cluster-access does: a profile that lists no access provider cannot be resolved.
      resolveAccess: async (profile) => {
        resolved++;
        if (!profile.status?.accessProviders?.length) throw new Error('offers access providers [none]');
        return access(async () => ({ token: 't' }));
      },
    });
    await syncer.start();
    await syncer.idle();
    expect({ resolved, writes: [...secrets.writes], lines: [...lines] }).toEqual({
      resolved: 1,
      writes: [],
      lines: [],
    });
    profiles.set(aClusterProfile('fleet/a', { server: 'https://a.example' }));
    const deadline = Date.now() + 2000;
    while (secrets.writes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    await syncer.idle();
    syncer.stop();
    expect({ writes: secrets.writes, lines: lines.map((l) => `${l.level} ${l.msg}`) }).toEqual({
      writes: ['create fleet.a'],
      lines: ['info applied'],
    });
  });

  it('writes the Secret of a profile reached through a kubeconfig Secret, which lists no access provider', async () => {
    const profile = aClusterProfile('fleet/a');
    profile.metadata.annotations = { [KUBECONFIG_SECRET_ANNOTATION]: 'a-kubeconfig' };
    const secrets = new FakeSecrets();
    const syncer = createSecretSyncer({
      clusterProfiles: new FakeCache([profile]),
      secrets,
      namespace: 'argocd',
      resolveAccess: async () => access(async () => ({ token: 't' })),
    });
    await syncer.start();
    await syncer.idle();
    syncer.stop();
    expect(secrets.writes).toEqual(['create fleet.a']);
  });

  it('writes nothing when the Secret is already up to date', async () => {
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    const secrets = new FakeSecrets();
    const clusterAccess = access(async () => ({ token: 't' }));
    await secrets.create(buildClusterSecret(profile, clusterAccess, { token: 't' }, { namespace: 'argocd' }));
    secrets.writes.length = 0;
    const syncer = createSecretSyncer({
      clusterProfiles: new FakeCache([profile]),
      secrets,
      namespace: 'argocd',
      resolveAccess: async () => clusterAccess,
    });
    await syncer.start();
    await syncer.idle();
    syncer.stop();
    expect(secrets.writes).toEqual([]);
  });

  it('waits for the profile cache before its first pass, so an unsynced cache never looks like deleted profiles', async () => {
    const profiles = new FakeCache<ClusterProfile>();
    profiles.synced = false;
    const secrets = new FakeSecrets();
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    await secrets.create(
      buildClusterSecret(
        profile,
        access(async () => ({})),
        { token: 't' },
        { namespace: 'argocd' },
      ),
    );
    secrets.writes.length = 0;
    const syncer = createSecretSyncer({
      clusterProfiles: profiles,
      secrets,
      namespace: 'argocd',
      resolveAccess: async () => access(async () => ({ token: 't' })),
    });
    const started = syncer.start();
    await new Promise((resolve) => setTimeout(resolve, 250));
    const before = [...secrets.writes];
    profiles.set(profile);
    profiles.synced = true;
    await started;
    await syncer.idle();
    syncer.stop();
    expect({ before, after: secrets.writes }).toEqual({ before: [], after: [] });
  });

  describe('the Secret of a vanished ClusterProfile', () => {
    const profile = aClusterProfile('fleet/a', { server: 'https://a.example' });
    const GRACE = 15 * 60_000;
    const T0 = Date.parse(T);
    const released = (ms: number) => `annotate fleet.a ${RELEASED_AT_ANNOTATION}=${new Date(T0 + ms).toISOString()}`;
    async function setUp(
      inUse: () => boolean | undefined,
      applicationsUsing?: (cluster: { name: string; server: string }) => Promise<{ deleting: boolean }[]>,
    ) {
      const secrets = new FakeSecrets();
      await secrets.create(
        buildClusterSecret(
          profile,
          access(async () => ({})),
          { token: 't' },
          { namespace: 'argocd' },
        ),
      );
      secrets.writes.length = 0;
      const clock = { now: T0 };
      const profiles = new FakeCache<ClusterProfile>(); // the profile is gone
      const syncer = createSecretSyncer({
        clusterProfiles: profiles,
        secrets,
        namespace: 'argocd',
        resolveAccess: async () => access(async () => ({ token: 't' })),
        isClusterInUse: inUse,
        ...(applicationsUsing ? { applicationsUsing, applicationHoldTimeoutMs: 60 * 60_000 } : {}),
        now: () => clock.now,
      });
      await syncer.start();
      await syncer.idle();
      /** Re-evaluates the profile's key at `ms` after T0, as the syncer's own timer would. */
      const at = async (ms: number) => {
        clock.now = T0 + ms;
        syncer.enqueue('fleet/a');
        await syncer.idle();
      };
      return { secrets, syncer, profiles, at };
    }

    it('is never deleted while the placements are not known (cache unsynced or failing), however long that lasts', async () => {
      let inUse: boolean | undefined = undefined;
      const { secrets, syncer, at } = await setUp(() => inUse);
      await at(GRACE * 10);
      const whileUnknown = [...secrets.writes];
      inUse = false;
      await at(GRACE * 10 + 1000);
      syncer.stop();
      expect({ whileUnknown, afterSync: secrets.writes, kept: secrets.store.has('fleet.a') }).toEqual({
        whileUnknown: [],
        afterSync: [released(GRACE * 10 + 1000)],
        kept: true,
      });
    });

    it('outlives the last placement that listed its cluster by the grace period recorded on it, then goes', async () => {
      const { secrets, syncer, at } = await setUp(() => false);
      const first = [...secrets.writes];
      await at(GRACE - 1000);
      const withinGrace = secrets.writes.slice(first.length);
      await at(GRACE);
      syncer.stop();
      expect({ first, withinGrace, all: secrets.writes, kept: secrets.store.has('fleet.a') }).toEqual({
        first: [released(0)],
        withinGrace: [],
        all: [released(0), 'delete fleet.a'],
        kept: false,
      });
    });

    it('loses its release time when a placement lists the cluster again, so a later release starts a new grace', async () => {
      let inUse = false;
      const { secrets, syncer, at } = await setUp(() => inUse);
      inUse = true;
      await at(60_000);
      inUse = false;
      await at(GRACE + 1000);
      await at(GRACE + 2000);
      syncer.stop();
      expect(secrets.writes).toEqual([
        released(0),
        `annotate fleet.a ${RELEASED_AT_ANNOTATION}=-`,
        released(GRACE + 1000),
      ]);
    });

    it('past the grace period, stays while a live read finds Applications targeting its cluster (being deleted: up to the hold timeout)', async () => {
      let apps: { deleting: boolean }[] = [{ deleting: false }];
      const asked: { name: string; server: string }[] = [];
      const { secrets, syncer, at } = await setUp(
        () => false,
        async (cluster) => {
          asked.push(cluster);
          return apps;
        },
      );
      await at(GRACE);
      await at(GRACE + 2 * 60 * 60_000); // not being deleted: kept however long
      const whileInUse = secrets.writes.slice(1);
      apps = [{ deleting: true }];
      await at(GRACE + 2 * 60 * 60_000 + 1000);
      const whileDeleting = secrets.writes.slice(1);
      syncer.stop();
      expect(asked[0]).toEqual({ name: 'fleet.a', server: 'https://a.example' });
      expect({ whileInUse, whileDeleting, kept: secrets.store.has('fleet.a') }).toEqual({
        whileInUse: [],
        whileDeleting: ['delete fleet.a'],
        kept: false,
      });
    });

    it('past the grace period, goes once no Application targets its cluster; a failed read keeps it', async () => {
      let apps: { deleting: boolean }[] | undefined = [{ deleting: true }];
      const { secrets, syncer, at } = await setUp(
        () => false,
        async () => {
          if (!apps) throw new Error('connect ECONNREFUSED');
          return apps;
        },
      );
      await at(GRACE);
      apps = undefined;
      await at(GRACE + 1000);
      const kept = secrets.writes.slice(1);
      apps = [];
      await at(GRACE + 2000);
      syncer.stop();
      expect({ kept, all: secrets.writes.slice(1) }).toEqual({ kept: [], all: ['delete fleet.a'] });
    });

    it('is rewritten without the release time when the ClusterProfile returns', async () => {
      const { secrets, syncer, profiles } = await setUp(() => false);
      profiles.set(profile);
      await syncer.idle();
      syncer.stop();
      expect({
        writes: secrets.writes,
        annotation: secrets.store.get('fleet.a')!.metadata!.annotations![RELEASED_AT_ANNOTATION],
      }).toEqual({ writes: [released(0), 'replace fleet.a'], annotation: undefined });
    });
  });
});
