import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  Watch,
  type KubernetesObject,
  type V1Secret,
} from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import { CLUSTER_PROFILES, PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import type { PlacementStatus } from '@mco/core';
import { createLogger } from '@mco/runtime';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  freePort,
  renderChart,
  serviceAccountKubeConfig,
  thirdPartyCrd,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  APPLICATION_SETS,
  REFRESH_ANNOTATION,
  RELEASED_AT_ANNOTATION,
  startArgoCdDelivery,
  type ArgoCdDelivery,
  type ArgoCdDeliveryOptions,
  type PluginParameters,
} from '../src/index.js';
import { GoClient, argoBody } from './go-client.js';

// Each step waits for the API server and the caches: allow for a loaded CI machine.
vi.setConfig({ testTimeout: 60_000 });

const T = '2026-01-01T00:00:00Z';
const TOKEN = 'plugin-token-e2e';
const ARGOCD_COMPONENTS = ['argocd-plugin', 'argocd-applicationset-refresher', 'argocd-secret-syncer'];
const active = (name: string) => ({ name, namespace: 'fleet', state: 'ACTIVE' as const, lastTransitionTime: T });

describeWithControlPlane('Argo CD delivery on the real kube-apiserver', { tools: ['argocd'] }, () => {
  let plane: ControlPlane;
  let dir: string;
  let hub: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let delivery: ArgoCdDelivery | undefined;
  let deliveryOptions: ArgoCdDeliveryOptions;
  let plugin: GoClient;
  let chart: KubernetesObject[];
  let pluginKubeConfig: KubeConfig;
  let e2eKubeConfig: KubeConfig;

  const setStatus = (resource: typeof PLACEMENTS, namespace: string, name: string, status: unknown) =>
    custom.patchNamespacedCustomObjectStatus(
      { ...resource, namespace, name, body: { status } },
      requestOptions(hub, 10_000, PatchStrategy.MergePatch),
    );
  const setPlacement = (status: PlacementStatus) =>
    // Replace the list as the controller does (a merge patch replaces arrays).
    setStatus(PLACEMENTS, 'apps', 'web', { observedGeneration: 1, ...status });
  const answer = async () => {
    const response = await plugin.request({
      token: TOKEN,
      body: argoBody('web', {
        multiClusterOrchestraPlacementName: 'web',
        multiClusterOrchestraPlacementNamespace: 'apps',
      }),
    });
    return { status: response.status, body: response.json() as { output?: { parameters: PluginParameters[] } } };
  };
  const answered = (names: string[]) => (a: Awaited<ReturnType<typeof answer>>) =>
    a.status === 200 && JSON.stringify(a.body.output?.parameters.map((p) => p.name)) === JSON.stringify(names);
  const annotationOf = async (name: string) => {
    const appSet = (await custom.getNamespacedCustomObject({ ...APPLICATION_SETS, namespace: 'argocd', name })) as {
      metadata: { annotations?: Record<string, string> };
    };
    return appSet.metadata.annotations?.[REFRESH_ANNOTATION];
  };
  const setAnnotation = (name: string, value: string | null) =>
    custom.patchNamespacedCustomObject(
      {
        ...APPLICATION_SETS,
        namespace: 'argocd',
        name,
        body: { metadata: { annotations: { [REFRESH_ANNOTATION]: value } } },
      },
      requestOptions(hub, 10_000, PatchStrategy.MergePatch),
    );
  /** What Argo CD's controller does after a refresh: it removes the annotation. */
  const clearAnnotation = (name: string) => setAnnotation(name, null);
  const secretOf = (name: string) =>
    core.readNamespacedSecret({ namespace: 'argocd', name }).then(
      (s) => s,
      () => undefined,
    );
  const secretNames = async () =>
    (
      await core.listNamespacedSecret({ namespace: 'argocd', labelSelector: 'argocd.argoproj.io/secret-type=cluster' })
    ).items
      .map((s) => s.metadata!.name!)
      .sort();

  beforeAll(async () => {
    plane = await startControlPlane({ clusters: ['member'] });
    await plane.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url)
        .pathname,
      thirdPartyCrd('argoproj.io_applicationsets.yaml'),
      thirdPartyCrd('argoproj.io_applications.yaml'),
    ]);
    hub = plane.hub.adminKubeConfig();
    custom = hub.makeApiClient(CustomObjectsApi);
    core = hub.makeApiClient(CoreV1Api);
    dir = mkdtempSync(join(tmpdir(), 'mco-argocd-e2e-'));
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);

    // A credential plugin that hands out the member's token, valid for 12 s;
    // refreshed 6 s before expiry, room for a plugin run and a Secret write on a loaded machine.
    const script = join(dir, 'credential-plugin.sh');
    writeFileSync(
      script,
      `#!/bin/sh
exp=$(date -u -d "+12 seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}' "$1" "$exp"
`,
    );
    chmodSync(script, 0o755);
    const member = plane.members.member!;
    const access = createClusterAccess({
      providers: [
        {
          name: 'test-exec',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: script, args: [member.token('admin')] },
          // The test members listen on loopback, which a provider reaches only when it names it (and the port).
          allowedServers: [member.server],
        },
      ],
      refreshBeforeMs: 6_000,
    });

    await plane.hub.apply(
      ['fleet', 'apps', 'argocd', RELEASE_NAMESPACE].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
    // The chart's objects for the plugin, the ApplicationSet refresher and the
    // Secret syncer (ServiceAccounts, RBAC, ConfigMap). The token Secret is the
    // operator's (existingSecret); apps/mco/test/argocd-chart.integration.test.ts
    // covers the generated one and checks each account's rights one by one.
    const rendered = renderChart({
      'argocd.plugin.enabled': 'true',
      'argocd.plugin.existingSecret': 'mco-argocd-plugin-token',
      'argocd.clusterSecretSync.enabled': 'true',
      'argocd.clusterSecretSync.providers[0].name': 'test-exec',
      'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
      'argocd.clusterSecretSync.providers[0].execConfig.command': script,
      'argocd.clusterSecretSync.providers[0].allowedServers[0]': member.server,
    });
    chart = rendered.filter(
      (o) =>
        ARGOCD_COMPONENTS.includes(o.metadata?.labels?.['app.kubernetes.io/component'] ?? '') &&
        ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap'].includes(
          o.kind ?? '',
        ),
    );
    // The test runs the plugin, the refresher and the syncer in one process
    // (startArgoCdDelivery), so one account holds exactly the chart's roles of
    // the three; the plugin's own account is checked on its own below.
    const unionBindings = chart
      .filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')
      .map((o) => ({
        ...o,
        metadata: { ...o.metadata, name: `e2e-${o.metadata!.name}`, labels: {} },
        subjects: [{ kind: 'ServiceAccount', name: 'mco-argocd-e2e', namespace: RELEASE_NAMESPACE }],
      }));
    await plane.hub.apply([
      ...chart,
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'mco-argocd-e2e', namespace: RELEASE_NAMESPACE } },
      ...unionBindings,
    ]);
    const pluginAccount = chart.find(
      (o) => o.kind === 'ServiceAccount' && o.metadata!.labels!['app.kubernetes.io/component'] === 'argocd-plugin',
    )!.metadata!;
    pluginKubeConfig = await serviceAccountKubeConfig(plane.hub, pluginAccount.namespace!, pluginAccount.name!);
    e2eKubeConfig = await serviceAccountKubeConfig(plane.hub, RELEASE_NAMESPACE, 'mco-argocd-e2e');
    const profile = (name: string, labels: Record<string, string>) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace: 'fleet', labels },
      spec: { displayName: name, clusterManager: { name: 'test' } },
    });
    await plane.hub.apply([
      profile('east', { environment: 'production', region: 'us-east1' }),
      profile('west', { environment: 'production', region: 'us-west1' }),
      profile('late', { environment: 'staging' }),
      profile('foreign', {}),
    ]);
    for (const name of ['east', 'west', 'late', 'foreign']) {
      await setStatus(CLUSTER_PROFILES, 'fleet', name, {
        accessProviders: [
          { name: 'test-exec', cluster: { server: member.server, 'certificate-authority-data': member.caData } },
        ],
      });
    }
    const placement = (name: string) => ({
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name, namespace: 'apps' },
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining: true } } },
    });
    await plane.hub.apply([placement('web'), placement('other')]);
    await setPlacement({ clusters: [active('east')] });
    await setStatus(PLACEMENTS, 'apps', 'other', { observedGeneration: 1, clusters: [active('east')] });
    const appSet = (name: string, placementName: string) => ({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name, namespace: 'argocd' },
      spec: {
        goTemplate: true,
        generators: [
          {
            matrix: {
              generators: [
                {
                  plugin: {
                    configMapRef: { name: 'argocd-mco-placement' },
                    input: {
                      parameters: {
                        multiClusterOrchestraPlacementName: placementName,
                        multiClusterOrchestraPlacementNamespace: 'apps',
                      },
                    },
                  },
                },
                { list: { elements: [{ env: 'prod' }] } },
              ],
            },
          },
        ],
        template: {
          metadata: { name: '{{.name}}-{{.env}}' },
          spec: {
            project: 'default',
            destination: { name: '{{.name}}', namespace: 'apps' },
            source: { repoURL: 'https://example.invalid/x.git', path: '.' },
          },
        },
      },
    });
    await plane.hub.apply([appSet('web', 'web'), appSet('other', 'other')]);
    // Left from an earlier run: an mco Secret whose profile vanished while mco was down,
    // and a cluster Secret someone else made for a profile mco also knows.
    const secret = (
      name: string,
      labels: Record<string, string>,
      annotations: Record<string, string> = {},
    ): V1Secret => ({
      metadata: {
        name,
        namespace: 'argocd',
        labels: { 'argocd.argoproj.io/secret-type': 'cluster', ...labels },
        annotations,
      },
      stringData: { name, server: 'https://old.example', config: '{}' },
    });
    await core.createNamespacedSecret({
      namespace: 'argocd',
      body: secret(
        'fleet.vanished',
        { 'app.kubernetes.io/managed-by': 'mco-argocd-cluster-sync' },
        { 'orchestra.multicluster.x-k8s.io/cluster-profile': 'fleet/vanished' },
      ),
    });
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('fleet.foreign', {}) });

    deliveryOptions = {
      kubeConfig: e2eKubeConfig,
      ...(process.env.MCO_TEST_LOG ? { logger: createLogger({ level: 'debug' }) } : {}),
      plugin: { host: '127.0.0.1', port: 0, tokenFile: join(dir, 'token') },
      // The plugin's `server` follows the syncer's bounds: the test member listens on loopback.
      serverPolicies: [{ name: 'test-exec', allowedServers: [plane.members.member!.server] }],
      refresh: { namespace: 'argocd', debounceMs: 50 },
      secretSync: {
        namespace: 'argocd',
        // No peers: these profiles share the one test member on purpose (hostile-profiles.integration.test.ts
        // covers the duplicate-server rule).
        resolveAccess: (p) => access.accessFor(p),
        forgetAccess: (key) => access.forget(key),
        refreshBeforeMs: 6_000,
        releaseGraceMs: 3_000,
      },
    };
    delivery = await startArgoCdDelivery(deliveryOptions);
    plugin = new GoClient(delivery.pluginAddress!.port);
  });

  afterAll(async () => {
    plugin?.close();
    await delivery?.stop();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers from the informer cache once synced, with MCO keys and the superset', async () => {
    const first = await eventually('the first answer', answer, answered(['fleet.east']));
    expect(first.body).toEqual({
      output: {
        parameters: [
          {
            name: 'fleet.east',
            desiredMaxReplicas: null,
            desiredMinReplicas: null,
            server: plane.members.member!.server,
            clusterProfileName: 'east',
            clusterProfileNamespace: 'fleet',
            state: 'ACTIVE',
            draining: false,
            placementName: 'web',
            placementNamespace: 'apps',
            labels: { environment: 'production', region: 'us-east1' },
          },
        ],
      },
    });
  });

  it.each<[string, (kc: KubeConfig) => Promise<unknown>]>([
    [
      'read Secrets outside the Argo CD namespace',
      (kc) => kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: 'fleet' }),
    ],
    [
      "read Argo CD's own Secrets",
      (kc) => kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: 'argocd', name: 'fleet.foreign' }),
    ],
    [
      'patch ApplicationSets',
      (kc) =>
        kc
          .makeApiClient(CustomObjectsApi)
          .patchNamespacedCustomObject(
            { ...APPLICATION_SETS, namespace: 'argocd', name: 'web', body: { metadata: { labels: { x: 'y' } } } },
            requestOptions(kc, 10_000, PatchStrategy.MergePatch),
          ),
    ],
    [
      'write placement status',
      (kc) =>
        kc
          .makeApiClient(CustomObjectsApi)
          .patchNamespacedCustomObjectStatus(
            { ...PLACEMENTS, namespace: 'apps', name: 'web', body: { status: {} } },
            requestOptions(kc, 10_000, PatchStrategy.MergePatch),
          ),
    ],
    [
      'change ClusterProfiles',
      (kc) =>
        kc
          .makeApiClient(CustomObjectsApi)
          .deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace: 'fleet', name: 'east' }),
    ],
  ])("the chart's RBAC does not let the plugin %s", async (_name, call) => {
    await expect(call(pluginKubeConfig)).rejects.toMatchObject({ code: 403 });
  });

  it('writes one usable cluster Secret per ClusterProfile, removes the orphan, leaves the foreign one alone', async () => {
    const foreignBefore = (await secretOf('fleet.foreign'))!.metadata!.resourceVersion;
    await eventually(
      'Secrets',
      secretNames,
      (names) => JSON.stringify(names) === JSON.stringify(['fleet.east', 'fleet.foreign', 'fleet.late', 'fleet.west']),
    );
    const east = (await secretOf('fleet.east'))!;
    const data = Object.fromEntries(
      Object.entries(east.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    const config = JSON.parse(data.config!) as {
      bearerToken: string;
      tlsClientConfig: { caData: string; insecure: boolean };
    };
    expect({
      labels: east.metadata!.labels,
      name: data.name,
      server: data.server,
      tls: config.tlsClientConfig,
      foreignUnchanged: (await secretOf('fleet.foreign'))!.metadata!.resourceVersion === foreignBefore,
    }).toEqual({
      labels: {
        environment: 'production',
        region: 'us-east1',
        'argocd.argoproj.io/secret-type': 'cluster',
        'app.kubernetes.io/managed-by': 'mco-argocd-cluster-sync',
      },
      name: 'fleet.east',
      server: plane.members.member!.server,
      tls: { insecure: false, caData: plane.members.member!.caData },
      foreignUnchanged: true,
    });
    // Reach the member cluster with exactly what Argo CD would use.
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'm', server: data.server!, caData: config.tlsClientConfig.caData }],
      users: [{ name: 'argocd-fleet.east', token: config.bearerToken }],
      contexts: [{ name: 'm', cluster: 'm', user: 'argocd-fleet.east' }],
      currentContext: 'm',
    });
    const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(namespaces.items.map((n) => n.metadata?.name)).toContain('default');
  });

  it('follows a scale-out and a scale-in, refreshing only the ApplicationSets that use the placement', async () => {
    await eventually('baseline', answer, answered(['fleet.east']));
    const steps: { status: PlacementStatus; names: string[]; west?: Partial<PluginParameters> }[] = [
      { status: { clusters: [active('east'), active('west')] }, names: ['fleet.east', 'fleet.west'] },
      {
        status: {
          clusters: [
            active('east'),
            {
              ...active('west'),
              state: 'SCALING_IN',
              draining: { desiredMaxReplicas: 2, lastReplicaCountDecrease: T },
            },
          ],
        },
        names: ['fleet.east', 'fleet.west'],
        west: { state: 'SCALING_IN', draining: true, desiredMaxReplicas: 2 },
      },
      { status: { clusters: [active('east')] }, names: ['fleet.east'] },
    ];
    for (const step of steps) {
      await setPlacement(step.status);
      const result = await eventually(
        `answer ${step.names.join(',')}`,
        answer,
        (a) => answered(step.names)(a) && (!step.west || a.body.output!.parameters[1]!.state === step.west.state),
      );
      if (step.west) expect(result.body.output!.parameters[1]).toMatchObject(step.west);
      await eventually(
        'the refresh annotation',
        () => annotationOf('web'),
        (v) => v === 'true',
      );
      expect(await annotationOf('other')).toBeUndefined();
      await clearAnnotation('web');
    }
  });

  it('replaces a refresh annotation a failed reconcile left: it disappears and appears again, the change Argo CD reconciles on', async () => {
    await eventually('baseline', answer, answered(['fleet.east']));
    // Argo CD keeps the annotation when a reconcile fails (the plugin was down, say).
    await setAnnotation('web', 'true');
    const seen: string[] = [];
    const watch = await new Watch(hub).watch(
      `/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets`,
      { fieldSelector: 'metadata.name=web' },
      (type: string, object: { metadata: { annotations?: Record<string, string> } }) => {
        const present = object.metadata.annotations?.[REFRESH_ANNOTATION] !== undefined;
        if (seen.at(-1) !== String(present)) seen.push(String(present));
      },
      () => undefined,
    );
    try {
      await eventually(
        'the watch to report the annotation',
        async () => seen,
        (s) => s.length > 0,
      );
      await setPlacement({ clusters: [active('east'), active('west')] });
      await eventually(
        'the annotation to go and come back',
        async () => seen,
        (s) => s.length === 3,
      );
      expect(seen).toEqual(['true', 'false', 'true']);
    } finally {
      watch.abort();
      await clearAnnotation('web');
      await setPlacement({ clusters: [active('east')] });
      await eventually('back to east alone', answer, answered(['fleet.east']));
    }
  });

  it('refreshes the ApplicationSets that use the plugin when the plugin becomes ready after an outage', async () => {
    // A port nothing listens on yet: the plugin is down when the refresher starts.
    const port = await freePort();
    const refresher = await startArgoCdDelivery({
      kubeConfig: e2eKubeConfig,
      refresh: { namespace: 'argocd', debounceMs: 50, pluginUrl: `http://127.0.0.1:${port}`, probeIntervalMs: 100 },
    });
    let pluginAgain: Awaited<ReturnType<typeof startArgoCdDelivery>> | undefined;
    try {
      await eventually('the refresher caches', async () => refresher.ready(), Boolean);
      // What the earlier tests' changes left annotated, as Argo CD would after its reconcile.
      await delivery!.refresher!.idle();
      await clearAnnotation('web');
      await clearAnnotation('other');
      pluginAgain = await startArgoCdDelivery({
        kubeConfig: e2eKubeConfig,
        plugin: { host: '127.0.0.1', port, tokenFile: join(dir, 'token') },
      });
      await eventually(
        'both ApplicationSets refreshed',
        async () => [await annotationOf('web'), await annotationOf('other')],
        (values) => values.every((v) => v === 'true'),
      );
    } finally {
      await pluginAgain?.stop();
      await refresher.stop();
      await clearAnnotation('web');
      await clearAnnotation('other');
    }
  });

  it('rewrites a Secret before its credential expires', async () => {
    const expiry = async () =>
      (await secretOf('fleet.east'))!.metadata!.annotations!['orchestra.multicluster.x-k8s.io/credential-expires-at']!;
    const before = await expiry();
    const after = await eventually('a refreshed credential', expiry, (v) => v > before, 30_000);
    const rewrittenAt = Date.now();
    // The new credential was written while the previous one was still valid.
    expect({ later: Date.parse(after) > Date.parse(before), beforeExpiry: rewrittenAt < Date.parse(before) }).toEqual({
      later: true,
      beforeExpiry: true,
    });
  });

  it('keeps the Secret of a deleted profile while a placement lists the cluster, then removes it', async () => {
    await setPlacement({ clusters: [active('east'), active('west')] });
    await eventually('west listed', answer, answered(['fleet.east', 'fleet.west']));
    await custom.deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace: 'fleet', name: 'west' });
    // An ACTIVE cluster without its profile: the view is not sure, so Argo CD gets no list.
    await eventually('503', answer, (a) => a.status === 503);
    await setPlacement({ clusters: [active('east'), { ...active('west'), state: 'EVICTING' }] });
    const evicting = await eventually('west evicting', answer, answered(['fleet.east', 'fleet.west']));
    expect(evicting.body.output!.parameters[1]).toMatchObject({
      name: 'fleet.west',
      state: 'EVICTING',
      server: null,
      labels: {},
    });
    await delivery!.syncer!.idle();
    expect(await secretOf('fleet.west')).toBeDefined();
    await setPlacement({ clusters: [active('east')] });
    await eventually(
      'west Secret removed',
      () => secretOf('fleet.west').then((s) => s ?? null),
      (s) => s === null,
    );
  });

  it('after a restart with the placements list failing, keeps the Secret of a deleted profile a placement lists, and releases it only once the placements are known', async () => {
    const east = (await custom.getNamespacedCustomObject({
      ...CLUSTER_PROFILES,
      namespace: 'fleet',
      name: 'east',
    })) as { status: unknown };
    await plane.hub.apply([
      {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name: 'south', namespace: 'fleet' },
        spec: { displayName: 'south', clusterManager: { name: 'test' } },
      } as KubernetesObject,
    ]);
    await setStatus(CLUSTER_PROFILES, 'fleet', 'south', east.status);
    await eventually(
      'south Secret',
      () => secretOf('fleet.south').then((s) => s ?? null),
      (s) => s !== null,
    );
    await setPlacement({ clusters: [active('east'), { ...active('south'), state: 'EVICTING' }] });
    await eventually('south listed', answer, answered(['fleet.east', 'fleet.south']));

    await delivery!.stop();
    plugin.close();
    await custom.deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace: 'fleet', name: 'south' });
    // The plugin's ServiceAccount may no longer list placements: after the restart
    // the ClusterProfile cache syncs (south is gone) but the placement cache cannot.
    const roles = chart.filter((o) => o.kind === 'ClusterRole') as (KubernetesObject & {
      rules: { resources: string[] }[];
    })[];
    const withoutPlacements = roles.map(
      (role) =>
        ({
          ...role,
          rules: role.rules.filter((r) => !r.resources.includes('multikubernetesclusterplacements')),
        }) as KubernetesObject,
    );
    await plane.hub.apply(withoutPlacements);
    const lines: string[] = [];
    delivery = await startArgoCdDelivery({
      ...deliveryOptions,
      logger: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
    });
    plugin = new GoClient(delivery.pluginAddress!.port);
    await eventually(
      'the syncer declining to guess whether south is in use',
      async () => lines.filter((l) => l.includes('"cluster":"fleet/south"')).join(''),
      (l) => l.includes('the placements are not known yet; keeping its Secret'),
    );
    const whileUnknown = await secretOf('fleet.south');

    await plane.hub.apply(roles);
    await eventually(
      'placements known',
      async () => delivery!.ready(),
      (ready) => ready,
      45_000,
    );
    await eventually(
      'the syncer seeing south in use',
      async () => lines.filter((l) => l.includes('"cluster":"fleet/south"')).join(''),
      (l) => l.includes('a placement still lists the cluster; keeping its Secret'),
    );
    const whileListed = await secretOf('fleet.south');

    await setPlacement({ clusters: [active('east')] });
    const released = await eventually(
      'south released',
      () => secretOf('fleet.south').then((s) => s ?? null),
      (s) => s === null || s.metadata?.annotations?.['orchestra.multicluster.x-k8s.io/released-at'] !== undefined,
    );
    await eventually(
      'south Secret removed after the grace period',
      () => secretOf('fleet.south').then((s) => s ?? null),
      (s) => s === null,
    );
    expect({
      whileUnknown: whileUnknown?.metadata?.annotations?.['orchestra.multicluster.x-k8s.io/released-at'] ?? 'kept',
      whileListed: whileListed?.metadata?.annotations?.['orchestra.multicluster.x-k8s.io/released-at'] ?? 'kept',
      releasedFirst: released?.metadata?.annotations?.['orchestra.multicluster.x-k8s.io/released-at'] !== undefined,
    }).toEqual({ whileUnknown: 'kept', whileListed: 'kept', releasedFirst: true });
  });

  it('removes the Secret of a profile deleted while mco was down, after a restart', async () => {
    await delivery!.stop();
    plugin.close();
    await custom.deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace: 'fleet', name: 'late' });
    expect(await secretOf('fleet.late')).toBeDefined();
    delivery = await startArgoCdDelivery(deliveryOptions);
    plugin = new GoClient(delivery.pluginAddress!.port);
    await eventually(
      'late Secret removed',
      secretNames,
      (names) => JSON.stringify(names) === JSON.stringify(['fleet.east', 'fleet.foreign']),
    );
    await eventually('answer after restart', answer, answered(['fleet.east']));
  });

  it('runs as `mco argocd-plugin` with its read-only account: listens, answers from the cluster, stops cleanly on SIGTERM', async () => {
    const kubeconfigFile = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigFile, pluginKubeConfig.exportConfig());
    const main = fileURLToPath(new URL('../../../apps/mco/src/main.ts', import.meta.url));
    const child = spawn(
      process.execPath,
      [
        '--conditions=@mco/source',
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { main } = await import(${JSON.stringify(main)}); process.exitCode = await main(process.argv.slice(1));`,
        'argocd-plugin',
        `--kubeconfig=${kubeconfigFile}`,
        `--token-file=${join(dir, 'token')}`,
        '--listen=127.0.0.1:0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const address = await eventually(
        'the listening line',
        async () => /"address":"127\.0\.0\.1:(\d+)"/.exec(stderr)?.[1],
        (port) => port !== undefined,
        // tsx compiles the whole CLI from source on start: over a minute when both cores are busy.
        150_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; stderr: ${stderr}`);
      });
      const client = new GoClient(Number(address));
      const response = await eventually(
        'an answer',
        () =>
          client.request({
            token: TOKEN,
            body: argoBody('web', {
              multiClusterOrchestraPlacementName: 'web',
              multiClusterOrchestraPlacementNamespace: 'apps',
            }),
          }),
        (r) => r.status === 200,
      );
      client.close();
      child.kill('SIGTERM');
      expect({
        names: (response.json() as { output: { parameters: PluginParameters[] } }).output.parameters.map((p) => p.name),
        exitCode: await exited,
      }).toEqual({ names: ['fleet.east'], exitCode: 0 });
    } finally {
      child.kill('SIGKILL');
    }
  }, 240_000);
  // Argo CD needs a cluster's Secret to delete an Application's resources from it (the
  // resources-finalizer): the Secret of a released cluster stays while one exists.
  describe('a released cluster Secret and the Applications that target it', () => {
    const FINALIZER = 'resources-finalizer.argocd.argoproj.io';
    const APPLICATIONS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' } as const;
    let lines: string[] = [];
    const restart = async (options: Partial<ArgoCdDeliveryOptions['secretSync']> = {}) => {
      plugin.close();
      await delivery!.stop();
      lines = [];
      delivery = await startArgoCdDelivery({
        ...deliveryOptions,
        secretSync: { ...deliveryOptions.secretSync!, ...options },
        logger: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
      });
      plugin = new GoClient(delivery.pluginAddress!.port);
    };
    /** A cluster with its Secret and an Application (resources-finalizer) that targets it by name. */
    const clusterWithApplication = async (name: string) => {
      await plane.hub.apply([
        {
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: { name, namespace: 'fleet' },
          spec: { displayName: name, clusterManager: { name: 'test' } },
        } as KubernetesObject,
      ]);
      const east = (await custom.getNamespacedCustomObject({
        ...CLUSTER_PROFILES,
        namespace: 'fleet',
        name: 'east',
      })) as { status: unknown };
      await setStatus(CLUSTER_PROFILES, 'fleet', name, east.status);
      await eventually(
        `the Secret of ${name}`,
        () => secretOf(`fleet.${name}`).then((s) => s ?? null),
        (s) => s !== null,
      );
      await setPlacement({ clusters: [active('east'), active(name)] });
      // As the applicationset-controller writes it from the hello-world template.
      await custom.createNamespacedCustomObject({
        ...APPLICATIONS,
        namespace: 'argocd',
        body: {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          metadata: { name: `fleet.${name}-hw`, namespace: 'argocd', finalizers: [FINALIZER] },
          spec: {
            project: 'default',
            destination: { name: `fleet.${name}`, namespace: 'apps' },
            source: { repoURL: 'https://example.invalid/x.git', path: '.' },
          },
        },
      });
    };
    /** The cluster leaves: its profile is deleted, the placement drops it, the ApplicationSet deletes its Application. */
    const release = async (name: string) => {
      await custom.deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace: 'fleet', name });
      await setPlacement({ clusters: [active('east')] });
      await custom.deleteNamespacedCustomObject({ ...APPLICATIONS, namespace: 'argocd', name: `fleet.${name}-hw` });
    };
    const application = (name: string) =>
      custom.getNamespacedCustomObject({ ...APPLICATIONS, namespace: 'argocd', name: `fleet.${name}-hw` }).then(
        (a) => a as KubernetesObject,
        () => undefined,
      );
    /** What Argo CD's application controller does once it has deleted the resources: it drops the finalizer. */
    const finish = (name: string) =>
      custom.patchNamespacedCustomObject(
        { ...APPLICATIONS, namespace: 'argocd', name: `fleet.${name}-hw`, body: { metadata: { finalizers: null } } },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
    const held = (name: string) => () =>
      Promise.resolve(
        lines.some(
          (l) =>
            l.includes(`"cluster":"fleet/${name}"`) &&
            l.includes('Argo CD Applications still target a released cluster; keeping its Secret'),
        ),
      );

    it('keeps the Secret past its grace period while the Application is being deleted (finalizer pending), and deletes it once the Application is gone', async () => {
      await restart();
      await clusterWithApplication('north');
      await release('north');
      await eventually('the syncer holding north for its Application', held('north'), (h) => h, 30_000);
      const whileHeld = {
        secret: (await secretOf('fleet.north')) !== undefined,
        applicationDeleting: (await application('north'))?.metadata?.deletionTimestamp !== undefined,
      };
      await finish('north');
      // The syncer looks again every 30 s while Applications hold a Secret.
      await eventually(
        'the Secret of north deleted once its Application is gone',
        () => secretOf('fleet.north').then((s) => s ?? null),
        (s) => s === null,
        45_000,
      );
      expect(whileHeld).toEqual({ secret: true, applicationDeleting: true });
    });

    it('a member that never comes back: applicationHoldTimeoutMs after the grace period the Secret goes, counted from the released-at annotation, so a restart does not reset it', async () => {
      const holdMs = 8_000;
      await restart({ applicationHoldTimeoutMs: holdMs });
      await clusterWithApplication('gone');
      await release('gone');
      const releasedAt = Date.parse(
        (await eventually(
          'the released-at annotation of gone',
          async () => (await secretOf('fleet.gone'))?.metadata?.annotations?.[RELEASED_AT_ANNOTATION],
          (a) => a !== undefined,
        ))!,
      );
      await eventually('the syncer holding gone for its Application', held('gone'), (h) => h, 30_000);
      // The Application's finalizer never clears (its member does not answer); mco restarts meanwhile.
      await restart({ applicationHoldTimeoutMs: holdMs });
      const restartedAt = Date.now();
      await eventually(
        'the Secret of gone deleted after the hold',
        () => secretOf('fleet.gone').then((s) => s ?? null),
        (s) => s === null,
        40_000,
      );
      const deletedAt = Date.now();
      const deadline = releasedAt + 3_000 + holdMs;
      expect({
        notBeforeTheDeadline: deletedAt >= deadline - 1_000,
        notAFreshHoldAfterTheRestart: deletedAt < restartedAt + 3_000 + holdMs,
        applicationStillDeleting: (await application('gone'))?.metadata?.deletionTimestamp !== undefined,
        logged: lines.some((l) => l.includes('outlived applicationHoldTimeoutMs')),
      }).toEqual({
        notBeforeTheDeadline: true,
        notAFreshHoldAfterTheRestart: true,
        applicationStillDeleting: true,
        logged: true,
      });
      await finish('gone');
    });
  });
});
