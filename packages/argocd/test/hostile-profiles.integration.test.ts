// Issue 19, ClusterProfile trust: whoever can write a ClusterProfile must not
// steer mco's credentials. Hostile profiles on a real kube-apiserver are each
// refused with a reason naming the field; no credential plugin runs for them,
// nothing connects to the attacker's endpoint, no Secret is written, and an
// existing good Secret is kept, while legitimate profiles keep working.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import { CLUSTER_PROFILES } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger } from '@mco/runtime';
import {
  describeWithControlPlane,
  eventually,
  thirdPartyCrd,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startArgoCdDelivery, type ArgoCdDelivery } from '../src/index.js';

// Each step waits for the API server and the caches: allow for a loaded CI machine.
vi.setConfig({ testTimeout: 60_000 });

interface Refusal {
  readonly cluster: string;
  readonly field: string;
  readonly reason: string;
}

describeWithControlPlane('hostile ClusterProfiles on the real kube-apiserver', () => {
  let plane: ControlPlane;
  let dir: string;
  let hub: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let delivery: ArgoCdDelivery | undefined;
  let trap: Server;
  const trapSockets: Socket[] = [];
  let trapConnections = 0;
  let trapUrl: string;
  let memberServer: string;
  /** What `member-alias.test` resolves to for mco's check, and how far mco's clock is ahead (to expire what it caches). */
  let aliasAddress = '127.0.0.1';
  let clockSkewMs = 0;
  const logLines: Record<string, unknown>[] = [];

  const refusals = () =>
    new Map(
      logLines
        .filter((l) => l.msg === 'ClusterProfile refused')
        .map((l) => [l.cluster as string, { cluster: l.cluster, field: l.field, reason: l.reason } as Refusal]),
    );
  const secretNames = async () =>
    (
      await core.listNamespacedSecret({ namespace: 'argocd', labelSelector: 'argocd.argoproj.io/secret-type=cluster' })
    ).items
      .map((s) => s.metadata!.name!)
      .sort();
  const serverOfSecret = async (name: string) => {
    const secret = await core.readNamespacedSecret({ namespace: 'argocd', name });
    return {
      resourceVersion: secret.metadata!.resourceVersion,
      server: Buffer.from(secret.data!.server!, 'base64').toString('utf8'),
    };
  };
  /** The servers the credential plugin was run for (it records KUBERNETES_EXEC_INFO). */
  const pluginServers = () => {
    const file = join(dir, 'exec-info');
    if (!existsSync(file)) return [];
    return [
      ...new Set(
        readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => (JSON.parse(line) as { spec: { cluster: { server: string } } }).spec.cluster.server),
      ),
    ].sort();
  };
  const setStatus = (namespace: string, name: string, cluster: Record<string, unknown>) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        ...CLUSTER_PROFILES,
        namespace,
        name,
        body: { status: { accessProviders: [{ name: 'fleet-exec', cluster }] } },
      },
      requestOptions(hub, 10_000, PatchStrategy.MergePatch),
    );
  const profile = (namespace: string, name: string) => ({
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name, namespace },
    spec: { displayName: name, clusterManager: { name: 'test' } },
  });

  beforeAll(async () => {
    plane = await startControlPlane({ clusters: ['member'] });
    await plane.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url)
        .pathname,
    ]);
    hub = plane.hub.adminKubeConfig();
    custom = hub.makeApiClient(CustomObjectsApi);
    core = hub.makeApiClient(CoreV1Api);
    memberServer = plane.members.member!.server;
    dir = mkdtempSync(join(tmpdir(), 'mco-hostile-'));

    // The attacker's endpoint: it counts every connection; no test expects one.
    trap = createServer((socket) => {
      trapConnections++;
      trapSockets.push(socket);
    });
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
    trapUrl = `127.0.0.1:${(trap.address() as AddressInfo).port}`;

    // A credential plugin that records which cluster it was asked for, then hands out a token.
    const script = join(dir, 'plugin.sh');
    writeFileSync(
      script,
      `#!/bin/sh
printf '%s\\n' "$KUBERNETES_EXEC_INFO" >> '${dir}/exec-info'
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"hostile-test-token"}}'
`,
    );
    chmodSync(script, 0o755);

    await plane.hub.apply(
      ['fleet', 'team-b', 'argocd'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    );
    // team-b is not a ClusterProfile namespace: its profile, the oldest claim on
    // the member's server, must be neither served nor count as a claim.
    await plane.hub.apply([profile('team-b', 'sneaky')] as never);
    await setStatus('team-b', 'sneaky', { server: memberServer });
    // The hub's own endpoint, as its EndpointSlice lists it: 192.0.2.10 on the member's port.
    const memberPort = Number(new URL(memberServer).port);
    await plane.hub.apply([
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['192.0.2.10'], conditions: { ready: true } }],
        ports: [{ name: 'https', port: memberPort, protocol: 'TCP' }],
      } as never,
    ]);
    const names = [
      'a-prod',
      'turncoat',
      'z-copy',
      'in-cluster',
      'insecure',
      'proxied',
      'outside',
      'plain-http',
      'alias',
    ];
    await plane.hub.apply(names.map((n) => profile('fleet', n)) as never);
    const statuses: Record<string, Record<string, unknown>> = {
      'a-prod': { server: memberServer },
      // Another cluster behind the same allowed endpoint (a different path): legitimate, for now.
      turncoat: { server: `${memberServer}/turncoat` },
      // Created with a-prod; a tie of creation times goes to the first namespace/name.
      'z-copy': { server: `${memberServer}/` },
      'in-cluster': { server: 'https://kubernetes.default.svc' },
      insecure: { server: `${memberServer}/insecure`, 'insecure-skip-tls-verify': true },
      proxied: { server: `${memberServer}/proxied`, 'proxy-url': `http://${trapUrl}` },
      outside: { server: `https://${trapUrl}` },
      'plain-http': { server: `http://${trapUrl}` },
      // A name resolving to the member for now.
      alias: { server: `https://member-alias.test:${memberPort}` },
    };
    for (const n of names) await setStatus('fleet', n, statuses[n]!);

    const logger = createLogger({
      level: 'debug',
      write: (line) => logLines.push(JSON.parse(line) as Record<string, unknown>),
    });
    const access = createClusterAccess({
      providers: [
        {
          name: 'fleet-exec',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: script, provideClusterInfo: true },
          // Only the member's endpoint: the test members listen on loopback, reached only when named.
          allowedServers: [memberServer, `https://member-alias.test:${memberPort}`],
        },
      ],
      hub: connectionFromKubeConfig(hub),
      lookup: async (host) => (host === 'member-alias.test' ? [{ address: aliasAddress }] : []),
      now: () => new Date(Date.now() + clockSkewMs),
      logger,
    });
    delivery = await startArgoCdDelivery({
      kubeConfig: hub,
      logger,
      clusterProfileNamespaces: ['fleet'],
      secretSync: {
        namespace: 'argocd',
        resolveAccess: (p, peers) => access.accessFor(p, undefined, peers),
        forgetAccess: (key) => access.forget(key),
      },
    });
  });

  afterAll(async () => {
    await delivery?.stop();
    for (const socket of trapSockets) socket.destroy();
    await new Promise((resolve) => trap?.close(resolve));
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses each hostile profile naming the field, runs no plugin and opens no connection for it, and writes Secrets only for the legitimate ones', async () => {
    const hostile = ['fleet/in-cluster', 'fleet/insecure', 'fleet/outside', 'fleet/plain-http', 'fleet/proxied'];
    await eventually(
      'a refusal of every hostile profile',
      async () => refusals(),
      (r) => [...hostile, 'fleet/z-copy'].every((k) => r.has(k)),
    );
    await eventually(
      'the legitimate Secrets',
      secretNames,
      (names) => JSON.stringify(names) === JSON.stringify(['fleet.a-prod', 'fleet.alias', 'fleet.turncoat']),
    );
    const provider = 'access provider "fleet-exec"';
    expect({
      refusals: [...refusals().values()].sort((a, b) => a.cluster.localeCompare(b.cluster)),
      secrets: await secretNames(),
      pluginRunFor: pluginServers(),
      trapConnections,
    }).toEqual({
      refusals: [
        {
          cluster: 'fleet/in-cluster',
          field: 'cluster.server',
          reason: `ClusterProfile fleet/in-cluster: ${provider}: cluster.server "https://kubernetes.default.svc" is refused: it is the hub's own API server`,
        },
        {
          cluster: 'fleet/insecure',
          field: 'cluster.insecure-skip-tls-verify',
          reason: `ClusterProfile fleet/insecure: ${provider}: cluster.insecure-skip-tls-verify is refused: allowInsecureSkipTLSVerify is not set`,
        },
        {
          cluster: 'fleet/outside',
          field: 'cluster.server',
          reason: `ClusterProfile fleet/outside: ${provider}: cluster.server "https://${trapUrl}" is refused: it matches no allowedServers entry`,
        },
        {
          cluster: 'fleet/plain-http',
          field: 'cluster.server',
          reason: `ClusterProfile fleet/plain-http: ${provider}: cluster.server "http://${trapUrl}" is refused: mco sends credentials over https only`,
        },
        {
          cluster: 'fleet/proxied',
          field: 'cluster.proxy-url',
          reason: `ClusterProfile fleet/proxied: ${provider}: cluster.proxy-url "http://${trapUrl}" is refused: it matches no allowedProxyURLs entry`,
        },
        {
          cluster: 'fleet/z-copy',
          field: 'cluster.server',
          reason: `ClusterProfile fleet/z-copy: cluster.server "${memberServer}/" is refused: ClusterProfile fleet/a-prod (older) names the same server`,
        },
      ],
      secrets: ['fleet.a-prod', 'fleet.alias', 'fleet.turncoat'],
      // Only the legitimate clusters ever had a credential minted.
      pluginRunFor: [
        memberServer,
        `${memberServer}/turncoat`,
        `https://member-alias.test:${new URL(memberServer).port}`,
      ].sort(),
      trapConnections: 0,
    });
  });

  it('ignores a profile outside --cluster-profile-namespaces: no Secret, no refusal, and it does not count as a claim', async () => {
    const mentioned = logLines.some((l) => JSON.stringify(l).includes('team-b/sneaky'));
    expect({
      secrets: (await secretNames()).filter((n) => n.startsWith('team-b.')),
      mentioned,
      prodServed: (await secretNames()).includes('fleet.a-prod'),
    }).toEqual({ secrets: [], mentioned: false, prodServed: true });
  });

  it('keeps the existing Secret as it is when a legitimate profile turns hostile, and never writes the hostile server', async () => {
    const before = await serverOfSecret('fleet.turncoat');
    const refusedBefore = logLines.length;
    await setStatus('fleet', 'turncoat', { server: 'https://169.254.169.254' });
    await eventually(
      'the refusal of the changed profile',
      async () =>
        logLines.slice(refusedBefore).find((l) => l.msg === 'ClusterProfile refused' && l.cluster === 'fleet/turncoat'),
      (l) => l !== undefined,
    );
    expect({
      secret: await serverOfSecret('fleet.turncoat'),
      pluginRunFor: pluginServers(),
      trapConnections,
    }).toEqual({
      secret: before,
      pluginRunFor: [
        memberServer,
        `${memberServer}/turncoat`,
        `https://member-alias.test:${new URL(memberServer).port}`,
      ].sort(),
      trapConnections: 0,
    });
  });

  it("removes the Secret of a profile whose server's name later resolves to the hub's own endpoint", async () => {
    await eventually('the Secret of fleet/alias', secretNames, (names) => names.includes('fleet.alias'));
    const refusedBefore = logLines.length;
    aliasAddress = '192.0.2.10';
    // Past the cached resolution (1 min); a change of the profile (or the periodic resync) has it checked again.
    clockSkewMs += 2 * 60_000;
    await custom.patchNamespacedCustomObject(
      {
        ...CLUSTER_PROFILES,
        namespace: 'fleet',
        name: 'alias',
        body: { metadata: { labels: { touched: 'yes' } } },
      },
      requestOptions(hub, 10_000, PatchStrategy.MergePatch),
    );
    await eventually('the Secret of fleet/alias removed', secretNames, (names) => !names.includes('fleet.alias'));
    const refusal = logLines
      .slice(refusedBefore)
      .find((l) => l.msg === 'ClusterProfile refused' && l.cluster === 'fleet/alias');
    expect({ secrets: await secretNames(), reason: refusal?.reason }).toEqual({
      secrets: ['fleet.a-prod', 'fleet.turncoat'],
      reason: `ClusterProfile fleet/alias: access provider "fleet-exec": cluster.server "https://member-alias.test:${new URL(memberServer).port}" is refused: its host resolves to 192.0.2.10, which is the hub's own API server`,
    });
  });
});
