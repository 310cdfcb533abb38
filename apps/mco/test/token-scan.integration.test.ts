import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy } from '@kubernetes/client-node';
import { startArgoCdDelivery, type ArgoCdDelivery } from '@mco/argocd';
import { createClusterAccess, KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import {
  CONDITION_TYPE as CONFIG_SYNC_CONDITION,
  startConfigSyncDelivery,
  TEMPLATE_ANNOTATION,
  type ConfigSyncDelivery,
} from '@mco/configsync';
import { INPUT_PROVIDERS, startFluxDelivery, type FluxDelivery } from '@mco/flux';
import { CLUSTER_PROFILES, PLACEMENT_DECISIONS, PLACEMENTS } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger } from '@mco/runtime';
import { preparedTool, thirdPartyCrd } from '@mco/testkit';
import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { createSignalSources } from '../src/commands/controller.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { describeWithHub, waitFor } from '../../../packages/controller/test/support.js';
import { testController, useControllerHub } from '../../../packages/controller/test/support-controller.js';

// Issue 19, secret hygiene: one run of the controller (with the kubernetes
// signal source on member credentials), the Argo CD plugin, the cluster
// Secret syncer, Flux delivery (input providers and kubeconfig Secrets) and
// Config Sync delivery (which calls every member, and fails), with member credentials that carry distinctive test tokens:
// an exec plugin that works, one that fails printing its token on stderr, one
// that prints its token as garbage on stdout, a kubeconfig Secret, and a
// kubeconfig Secret whose YAML breaks on the token's line. The run places,
// scales in, fails to observe and loses a cluster; then every log line, every
// Event in the hub, every placement, ClusterProfile and PlacementDecision, and
// every metric is scanned: no token, nor any 16-character piece of one, may
// appear. (The tokens do reach where they belong: the Argo CD cluster Secrets
// and Flux's kubeconfig Secrets, which the test checks, so the scan is not
// vacuous.)

const token = (what: string) => `${what}-${randomBytes(16).toString('hex')}`;
const TOKENS = {
  exec: token('execok'),
  execStderr: token('execstderr'),
  execStdout: token('execstdout'),
  secret: token('kubeconfigsecret'),
  parse: token('kubeconfigparse'),
  plugin: token('plugintoken'),
  wrongPlugin: token('wrongplugintoken'),
};
/** Every 16-character window of every token: a token cut short in a message still counts. */
const PIECES = Object.entries(TOKENS).flatMap(([name, t]) =>
  Array.from({ length: t.length - 15 }, (_, i) => ({ name, piece: t.slice(i, i + 16) })),
);
const REPO_SYNC = `apiVersion: configsync.gke.io/v1beta1
kind: RepoSync
metadata:
  namespace: scan
spec:
  sourceType: git
  sourceFormat: unstructured
  git: {repo: https://git.example.com/shop.git, branch: main, auth: none}
`;
// Nothing listens there: every member call fails fast, through the error paths.
const SERVER = 'https://127.0.0.1:1';

describeWithHub('no test token in any log line, Event, status or metric of a full run', () => {
  const env = useControllerHub();

  it('runs the controller, the Argo CD plugin, the Secret syncer and Flux delivery through placement, scale-in and failures, and finds no token anywhere', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('scan');
    await fleet.namespace('fleet-scan');
    await fleet.namespace('argocd');
    // Flux's CRDs come from the flux and flux-operator tool builds; when they are not prepared (outside CI) the
    // Flux half is left out. Under CI thirdPartyCrd fails on a missing tool.
    const crds = process.env.CI === 'true' || (preparedTool('flux') && preparedTool('flux-operator')) !== undefined;
    if (!crds)
      console.warn('[token-scan] the flux and flux-operator tools are not prepared: running without Flux delivery');
    if (crds) {
      await fleet.namespace('flux-system');
      await hub.plane.hub.installCrds([
        thirdPartyCrd('fluxcd.controlplane.io_resourcesetinputproviders.yaml'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
      ]);
    }
    const dir = mkdtempSync(join(tmpdir(), 'mco-token-scan-'));
    const logs: string[] = [];
    const logger = (component: string) =>
      createLogger({ level: 'debug', write: (line) => logs.push(line) }).child({ component });

    const script = (name: string, body: string) => {
      const file = join(dir, name);
      writeFileSync(file, `#!/bin/sh\n${body}\n`);
      chmodSync(file, 0o755);
      return file;
    };
    const credential = (t: string) =>
      `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' '${t}'`;
    const exec = (command: string) => ({ apiVersion: 'client.authentication.k8s.io/v1' as const, command });
    // The members are on loopback, which mco reaches only when the allowlist names it.
    const allowedServers = [SERVER];
    const providers = [
      { name: 'exec-ok', execConfig: exec(script('ok.sh', credential(TOKENS.exec))), allowedServers },
      {
        name: 'exec-fail',
        execConfig: exec(script('fail.sh', `echo "cannot refresh ${TOKENS.execStderr}: expired" >&2\nexit 1`)),
        allowedServers,
      },
      {
        name: 'exec-garbage',
        execConfig: exec(script('garbage.sh', `echo "token=${TOKENS.execStdout} not json"`)),
        allowedServers,
      },
    ];
    const kubeconfig = (user: string) => `apiVersion: v1
kind: Config
current-context: m
contexts: [{name: m, context: {cluster: m, user: m}}]
clusters: [{name: m, cluster: {server: "${SERVER}"}}]
users:
- name: m
  user:
${user}
`;
    const secret = (name: string, text: string) =>
      hub.core.createNamespacedSecret({
        namespace: 'fleet-scan',
        body: { metadata: { name }, stringData: { kubeconfig: text } },
      });
    await secret('kc-good', kubeconfig(`    token: ${TOKENS.secret}`));
    // An unterminated quote on the token's line: YAML parsers quote that line in their message.
    await secret('kc-parse', kubeconfig(`    token: "${TOKENS.parse}\n    other: [`));

    const profiles: [string, { provider?: string; secret?: string }][] = [
      ['s-exec', { provider: 'exec-ok' }],
      ['s-fail', { provider: 'exec-fail' }],
      ['s-garbage', { provider: 'exec-garbage' }],
      ['s-secret', { secret: 'kc-good' }],
      ['s-parse', { secret: 'kc-parse' }],
    ];
    for (const [name, how] of profiles) {
      await hub.custom.createNamespacedCustomObject({
        ...CLUSTER_PROFILES,
        namespace: 'fleet-scan',
        body: {
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: {
            name,
            namespace: 'fleet-scan',
            labels: { scan: 'yes' },
            ...(how.secret ? { annotations: { [KUBECONFIG_SECRET_ANNOTATION]: how.secret } } : {}),
          },
          spec: { displayName: name, clusterManager: { name: 'test' } },
        },
      });
      if (how.provider) {
        await hub.custom.patchNamespacedCustomObjectStatus(
          {
            ...CLUSTER_PROFILES,
            namespace: 'fleet-scan',
            name,
            body: { status: { accessProviders: [{ name: how.provider, cluster: { server: SERVER } }] } },
          },
          requestOptions(hub.admin, 10_000, PatchStrategy.MergePatch),
        );
      }
    }

    // The controller, with the kubernetes signal source observing members through those credentials.
    const registry = new Registry();
    const sourcesFile = join(dir, 'signal-sources.yaml');
    writeFileSync(
      sourcesFile,
      JSON.stringify({
        defaultSource: 'members',
        sources: [
          {
            name: 'members',
            plugin: 'kubernetes',
            config: { providers, kubeconfigSecrets: { allowedServers }, timeoutSeconds: 2 },
            placementNamespaces: ['*'],
          },
        ],
      }),
    );
    const sources = await createSignalSources(
      sourcesFile,
      connectionFromKubeConfig(hub.admin),
      registry,
      logger('signals'),
    );
    const controller = env.start(
      testController(hub.controllerKubeConfig(), {
        registry,
        logger: logger('controller'),
        signalSources: sources.byName,
        defaultSignalSource: sources.defaultSource,
      }),
    );

    const pluginTokenFile = join(dir, 'plugin-token');
    writeFileSync(pluginTokenFile, `${TOKENS.plugin}\n`);
    const access = createClusterAccess({
      providers,
      kubeconfigSecrets: { allowedServers },
      hub: connectionFromKubeConfig(hub.admin),
      logger: logger('cluster-access'),
    });
    let delivery: ArgoCdDelivery | undefined;
    let flux: FluxDelivery | undefined;
    let configSync: ConfigSyncDelivery | undefined;
    try {
      configSync = startConfigSyncDelivery({
        kubeConfig: hub.admin,
        access,
        logger: logger('configsync'),
        memberTimeoutMs: 2_000,
        retryBackoff: { baseMs: 200, maxMs: 1_000, jitter: 0.2 },
      });
      flux = crds
        ? startFluxDelivery({
            kubeConfig: hub.admin,
            namespace: 'flux-system',
            inputProviders: true,
            helmReleases: false,
            resolveAccess: (profile) => access.accessFor(profile),
            logger: logger('flux'),
            informers: { watchTimeoutSeconds: 30 },
          })
        : undefined;
      delivery = await startArgoCdDelivery({
        kubeConfig: hub.admin,
        logger: logger('argocd'),
        accessProviderNames: providers.map((p) => p.name),
        plugin: { host: '127.0.0.1', port: 0, tokenFile: pluginTokenFile },
        secretSync: {
          namespace: 'argocd',
          resolveAccess: (profile) => access.accessFor(profile),
          forgetAccess: (key) => access.forget(key),
          releaseGraceMs: 500,
          lease: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
        },
      });
      const port = delivery.pluginAddress!.port;
      const getParams = (bearer: string) =>
        fetch(`http://127.0.0.1:${port}/api/v1/getparams.execute`, {
          method: 'POST',
          headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            applicationSetName: 'web',
            input: {
              parameters: {
                multiClusterOrchestraPlacementName: 'wide',
                multiClusterOrchestraPlacementNamespace: 'scan',
              },
            },
          }),
        });
      const argoSecret = (profile: string) =>
        hub.core.readNamespacedSecret({ namespace: 'argocd', name: `fleet-scan.${profile}` }).then(
          (s) => Buffer.from(s.data?.config ?? '', 'base64').toString('utf8'),
          () => undefined,
        );

      // Scale out: every profile placed; the syncer writes what it can and fails on the rest.
      await fleet.createPlacement('scan', 'wide', {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: {
              clusterSelectorTerms: [
                { matchExpressions: [{ labelSelector: { key: 'scan', operator: 'In', values: ['yes'] } }] },
              ],
            },
          },
        },
      });
      await waitFor('five clusters placed', async () => (await fleet.states('scan', 'wide')).length === 5, 60_000);
      // Config Sync delivery for it: a RepoSync on every placed member, through the same credentials.
      await hub.custom.patchNamespacedCustomObject(
        {
          ...PLACEMENTS,
          namespace: 'scan',
          name: 'wide',
          body: { metadata: { annotations: { [TEMPLATE_ANNOTATION]: REPO_SYNC } } },
        },
        requestOptions(hub.admin, 10_000, PatchStrategy.MergePatch),
      );
      await waitFor(
        'Config Sync delivery to report on the members',
        async () => (await fleet.condition('scan', 'wide', CONFIG_SYNC_CONDITION)) !== undefined,
        60_000,
      );
      const written = await waitFor(
        'the Secrets of the working credentials',
        async () => {
          const [exec, secret] = [await argoSecret('s-exec'), await argoSecret('s-secret')];
          return exec !== undefined && secret !== undefined ? { exec, secret } : undefined;
        },
        60_000,
      );
      const fluxSecrets = async () =>
        (await hub.core.listNamespacedSecret({ namespace: 'flux-system' })).items
          .map((x) =>
            Object.values(x.data ?? {})
              .map((v) => Buffer.from(v, 'base64').toString('utf8'))
              .join('\n'),
          )
          .join('\n');
      const fluxHasToken =
        !flux ||
        (await waitFor(
          "Flux's kubeconfig Secrets of the working credentials",
          async () => {
            const text = await fluxSecrets();
            return text.includes(TOKENS.exec) && text.includes(TOKENS.secret);
          },
          60_000,
        ));
      // An autoscaling placement: the signal source calls every member with those credentials, and fails.
      await fleet.createPlacement('scan', 'auto', {
        clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet-scan/s-' } }],
        scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } },
        workloadDetails: { namespace: 'scan', deploymentName: 'web', hpaName: 'web' },
      });
      await waitFor(
        'signals observed (and failed) on every cluster',
        async () => (await fleet.condition('scan', 'auto', 'SignalsObserved')) !== undefined,
        60_000,
      );
      const plugin = {
        good: (await getParams(TOKENS.plugin)).status,
        wrong: (await getParams(TOKENS.wrongPlugin)).status,
      };

      // Scale in to the two clusters with working credentials, then lose one of them.
      await fleet.setPlacementSpec('scan', 'wide', {
        // A short grace: the lost profile's cluster goes (and its Argo CD Secret is released) within the test.
        scaling: { behavior: { profileLossGraceSeconds: 1 } },
        clusterSelectorRules: [
          { type: 'cluster-list', arguments: { clusters: 'fleet-scan/s-exec,fleet-scan/s-secret' } },
        ],
      });
      await waitFor('scaled in to two', async () => (await fleet.states('scan', 'wide')).length === 2, 60_000);
      await fleet.deleteProfile('fleet-scan', 's-secret');
      await waitFor('s-secret gone', async () => (await fleet.states('scan', 'wide')).length === 1, 60_000);
      await waitFor('its Argo CD Secret released', async () => (await argoSecret('s-secret')) === undefined, 60_000);

      // Collect everything the run made visible.
      const list = async (resource: typeof PLACEMENTS) =>
        (await hub.custom.listClusterCustomObject({ ...resource })) as { items: unknown[] };
      const events = await hub.core.listEventForAllNamespaces();
      const collected = {
        logs,
        events: events.items.map((e) => JSON.stringify(e)),
        placements: (await list(PLACEMENTS)).items.map((o) => JSON.stringify(o)),
        clusterProfiles: (await list(CLUSTER_PROFILES)).items.map((o) => JSON.stringify(o)),
        placementDecisions: (await list(PLACEMENT_DECISIONS)).items.map((o) => JSON.stringify(o)),
        fluxInputProviders: flux ? (await list(INPUT_PROVIDERS)).items.map((o) => JSON.stringify(o)) : [],
        metrics: [await registry.metrics()],
      };
      const leaks = Object.entries(collected).flatMap(([where, texts]) =>
        texts.flatMap((text) =>
          PIECES.filter((p) => text.includes(p.piece)).map((p) => `${where}: ${p.name} in ${text.slice(0, 300)}`),
        ),
      );
      const mentions = (what: string) => logs.some((l) => l.includes(what));
      expect({
        leaks: [...new Set(leaks)],
        // The run went through the paths that could leak.
        tokensDelivered: {
          exec: written.exec.includes(TOKENS.exec),
          secret: written.secret.includes(TOKENS.secret),
          flux: fluxHasToken,
        },
        plugin,
        failuresLogged: ['s-fail', 's-garbage', 's-parse'].filter((p) => !mentions(p)),
        signalsObserved: (await fleet.condition('scan', 'auto', 'SignalsObserved'))?.status,
        configSyncReported: (await fleet.condition('scan', 'wide', CONFIG_SYNC_CONDITION))?.status,
        eventsRecorded: events.items.some((e) => e.involvedObject.name === 'wide'),
        metricsScraped: collected.metrics[0]!.includes('mco_controller_status_writes_total'),
        fluxInputProviders: !flux || collected.fluxInputProviders.length > 0,
        controllerLed: controller.isLeader(),
      }).toEqual({
        leaks: [],
        tokensDelivered: { exec: true, secret: true, flux: true },
        plugin: { good: 200, wrong: 403 },
        failuresLogged: [],
        signalsObserved: expect.any(String),
        configSyncReported: expect.any(String),
        eventsRecorded: true,
        metricsScraped: true,
        fluxInputProviders: true,
        controllerLed: true,
      });
    } finally {
      await delivery?.stop();
      await flux?.stop();
      await configSync?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
