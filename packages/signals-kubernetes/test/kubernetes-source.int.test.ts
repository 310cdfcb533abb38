import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess, KUBECONFIG_SECRET_ANNOTATION, type ProviderConfig } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithControlPlane, loadYamlObjects, startControlPlane, type ControlPlane } from '@mco/testkit';
import { KubernetesSignalsConfigSchema, createKubernetesSignalSource } from '../src/index.js';
import { writeWorkload } from './workload.js';

const RBAC = fileURLToPath(new URL('../deploy/member-rbac.yaml', import.meta.url));
const SECONDS = 1000;

/** A credential plugin that prints the token found in the file named by the cluster's exec extension. */
const PLUGIN = `#!/usr/bin/env node
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
const token = require('fs').readFileSync(info.spec.cluster.config.tokenFile, 'utf8').trim();
process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token } }));
`;

describeWithControlPlane('the kubernetes signal source against real member kube-apiservers', () => {
  let cp: ControlPlane;
  let dir: string;
  let blackhole: Server;
  const sockets: Socket[] = [];
  let refusedPort: number;
  /** A member that answers every read with an endless body (400 MB by default), and the bytes it got out. */
  let hostile: HttpsServer;
  const hostileSent: number[] = [];
  const providers: ProviderConfig[] = [];
  const loopback: string[] = [];
  const now = () => new Date();

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['east', 'west'] });
    dir = mkdtempSync(join(tmpdir(), 'mco-signals-k8s-'));
    const plugin = join(dir, 'plugin.js');
    writeFileSync(plugin, PLUGIN);
    chmodSync(plugin, 0o755);
    // A member that accepts connections and never answers, and one that refuses them.
    blackhole = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    for (const name of ['slow', 'down']) writeFileSync(join(dir, `${name}.token`), 'unused');
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    refusedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    // It serves with the east member's certificate (issued for 127.0.0.1), so only its answers are hostile.
    const certs = join(cp.dir, 'east', 'certs');
    hostile = createHttpsServer(
      { cert: readFileSync(join(certs, 'apiserver.crt')), key: readFileSync(join(certs, 'apiserver.key')) },
      (_request, response) => {
        response.on('error', () => {});
        response.writeHead(200, { 'Content-Type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 'x');
        let sent = 0;
        const pump = () => {
          while (sent < Number(process.env.MCO_TEST_OVERSIZED_BYTES ?? 400_000_000) && !response.destroyed) {
            sent += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', pump);
          }
          response.end();
        };
        response.on('close', () => hostileSent.push(sent));
        response.write('{"items":["');
        pump();
      },
    );
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    writeFileSync(join(dir, 'hostile.token'), 'unused');
    // The test members listen on loopback, which a provider reaches only when it names it (and the port).
    loopback.push(
      `https://127.0.0.1:${(hostile.address() as { port: number }).port}`,
      cp.members.east!.server,
      cp.members.west!.server,
      `https://127.0.0.1:${(blackhole.address() as { port: number }).port}`,
      `https://127.0.0.1:${refusedPort}`,
    );
    providers.push({
      name: 'test-tokens',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, provideClusterInfo: true },
      allowedServers: loopback,
    });

    // Least privilege: mco reads members as the `controller` user bound to the shipped ClusterRole.
    for (const member of [cp.members.east!, cp.members.west!]) {
      await member.apply([
        ...loadYamlObjects(RBAC),
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'mco-signals-reader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'mco-signals-reader' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
        } as KubernetesObject,
      ]);
      writeFileSync(join(dir, `${member.name}.token`), member.token('controller'));
    }
    await cp.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'fleet' } }]);
    // west is reached through a static kubeconfig Secret on the hub.
    const westKubeconfig = {
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'west',
      contexts: [{ name: 'west', context: { cluster: 'west', user: 'mco' } }],
      clusters: [
        {
          name: 'west',
          cluster: { server: cp.members.west!.server, 'certificate-authority-data': cp.members.west!.caData },
        },
      ],
      users: [{ name: 'mco', user: { token: cp.members.west!.token('controller') } }],
    };
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: 'fleet',
        body: {
          metadata: { name: 'west-kubeconfig' },
          stringData: { kubeconfig: stringify(westKubeconfig) },
        },
      });

    const ago = (s: number) => new Date(Date.now() - s * SECONDS);
    await writeWorkload(cp.members.east!.adminKubeConfig(), {
      namespace: 'shop',
      hpa: { min: 2, max: 5, current: 5, desired: 5, limited: { status: 'True', reason: 'TooManyReplicas' } },
      available: { status: 'True', since: ago(3600) },
      pods: { 'web-1': 'Pending', 'web-2': 'Pending', 'web-3': 'Running' },
      otherPods: { 'other-1': 'Pending' },
      coreEvents: [
        { pod: 'web-1', reason: 'FailedScaleUp', component: 'cluster-autoscaler', at: ago(60) },
        { pod: 'other-1', reason: 'FailedScaleUp', component: 'cluster-autoscaler', at: ago(60) },
      ],
    });
    await writeWorkload(cp.members.west!.adminKubeConfig(), {
      namespace: 'shop',
      hpa: { min: 1, max: 10, current: 3, desired: 4 },
      available: { status: 'True', since: ago(3600) },
      pods: { 'web-1': 'Pending', 'web-2': 'Running' },
      eventsV1: [{ pod: 'web-1', reason: 'NotTriggerScaleUp', controller: 'cluster-autoscaler', at: new Date() }],
    });
    // Noise only: events outside the window, from another reporter, or about other pods.
    await writeWorkload(cp.members.east!.adminKubeConfig(), {
      namespace: 'quiet',
      hpa: { min: 2, max: 5, current: 2, desired: 2, limited: { status: 'True', reason: 'TooFewReplicas' } },
      available: { status: 'False', since: ago(3600) },
      pods: { 'web-1': 'Pending' },
      coreEvents: [
        { pod: 'web-1', reason: 'FailedScaleUp', component: 'cluster-autoscaler', at: ago(7200) },
        { pod: 'web-1', reason: 'FailedScaleUp', component: 'not-the-autoscaler', at: ago(10) },
      ],
    });
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (blackhole ? blackhole.close(() => resolve()) : resolve()));
    hostile?.closeAllConnections();
    await new Promise<void>((resolve) => (hostile ? hostile.close(() => resolve()) : resolve()));
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const profile = (name: string, server: string, caData?: string, annotations?: Record<string, string>) => {
    const p = aClusterProfile(`fleet/${name}`);
    return {
      ...p,
      metadata: { ...p.metadata, ...(annotations ? { annotations } : {}) },
      status: {
        accessProviders: [
          {
            name: 'test-tokens',
            cluster: {
              server,
              ...(caData ? { 'certificate-authority-data': caData } : {}),
              extensions: [
                { name: 'client.authentication.k8s.io/exec', extension: { tokenFile: join(dir, `${name}.token`) } },
              ],
            },
          },
        ],
      },
    } as ClusterProfile;
  };
  const east = () => profile('east', cp.members.east!.server, cp.members.east!.caData);
  const west = () =>
    ({
      ...aClusterProfile('fleet/west'),
      metadata: {
        name: 'west',
        namespace: 'fleet',
        annotations: { [KUBECONFIG_SECRET_ANNOTATION]: 'west-kubeconfig' },
      },
    }) as ClusterProfile;

  const request = (clusters: ClusterProfile[], namespace = 'shop', hpaName = 'web'): SignalRequest => {
    return {
      placement: {
        namespace: 'apps',
        name: 'web',
        spec: {
          scaling: {
            autoscaleForCapacity: {
              minClustersBelowCapacityCeiling: 1,
              workloadDetails: { namespace, deploymentName: 'web', hpaName },
            },
          },
        },
      },
      clusters: clusters.map((p) => ({ key: `${p.metadata.namespace}/${p.metadata.name}`, profile: p })),
    };
  };

  const source = (registry = new Registry(), timeoutSeconds = 10) =>
    createKubernetesSignalSource({
      access: createClusterAccess({
        providers,
        hub: cp.hub.connectionFor('admin'),
        kubeconfigSecrets: { allowedServers: loopback },
        now,
      }),
      config: KubernetesSignalsConfigSchema.parse({ timeoutSeconds }),
      metrics: registry,
      now,
    });

  const stamped = (observedAt: string) => {
    expect(Math.abs(Date.parse(observedAt) - Date.now())).toBeLessThan(30 * SECONDS);
    return 'T';
  };
  const withoutTimes = (r: { signals: readonly { observedAt: string }[]; errors: unknown }) => ({
    signals: r.signals.map((s) => ({ ...s, observedAt: stamped(s.observedAt) })),
    errors: r.errors,
  });

  it('reads HPA status, pending pods and cluster-autoscaler events (core/v1 and events.k8s.io) on each member', async () => {
    const result = await source().observe(request([east(), west()]));
    expect(withoutTimes(result)).toEqual({
      signals: [
        {
          cluster: 'fleet/east',
          observedAt: 'T',
          hpa: {
            currentReplicas: 5,
            desiredReplicas: 5,
            minReplicas: 2,
            maxReplicas: 5,
            scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
          },
          pendingPods: 2,
          failedScaleUp: true,
          nodeLimitReached: false, // a FailedScaleUp says nothing of a size limit
          readyReplicas: 5,
          workloadHealthy: true,
        },
        {
          cluster: 'fleet/west',
          observedAt: 'T',
          hpa: { currentReplicas: 3, desiredReplicas: 4, minReplicas: 1, maxReplicas: 10 },
          pendingPods: 1,
          failedScaleUp: true,
          nodeLimitReached: true, // "max node group size reached"
          readyReplicas: 3,
          workloadHealthy: true,
        },
      ],
      errors: [],
    });
  });

  it('ignores events outside the window, from other reporters or about other pods, and reports a long-unavailable Deployment', async () => {
    const result = await source().observe(request([east()], 'quiet'));
    expect(withoutTimes(result)).toEqual({
      signals: [
        {
          cluster: 'fleet/east',
          observedAt: 'T',
          hpa: {
            currentReplicas: 2,
            desiredReplicas: 2,
            minReplicas: 2,
            maxReplicas: 5,
            scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
          },
          pendingPods: 1,
          failedScaleUp: false,
          nodeLimitReached: false,
          readyReplicas: 2,
          workloadHealthy: false,
        },
      ],
      errors: [],
    });
  });

  it('leaves a member answering 400 MB without a signal, cut off at the size limit, and keeps observing', async () => {
    const server = `https://127.0.0.1:${(hostile.address() as { port: number }).port}`;
    const hostileProfile = profile('hostile', server, cp.members.east!.caData);
    const observer = source(new Registry(), 20);
    for (const round of [1, 2]) {
      const result = await observer.observe(request([east(), hostileProfile]));
      expect({
        round,
        clusters: result.signals.map((s) => s.cluster),
        errors: result.errors.map((e) => ({ cluster: e.cluster, code: e.code })),
      }).toEqual({ round, clusters: ['fleet/east'], errors: [{ cluster: 'fleet/hostile', code: 'Invalid' }] });
      expect(result.errors[0]!.message).toContain(
        `${server}/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web: the answer is larger than 16777216 bytes (maxResponseBytes); it was cut off`,
      );
    }
    // Every read was cut off at 16 MiB plus what loopback socket buffers hold, never read to the end.
    expect(hostileSent.length).toBeGreaterThan(0);
    for (const sent of hostileSent) expect(sent).toBeLessThan(32 * 1024 * 1024);
  });

  it('leaves the slow and the unreachable members without a full signal (a transport error instead), and counts them', async () => {
    const registry = new Registry();
    const started = Date.now();
    const result = await source(registry, 2).observe(
      request([
        east(),
        profile('slow', `https://127.0.0.1:${(blackhole.address() as { port: number }).port}`),
        profile('down', `https://127.0.0.1:${refusedPort}`),
      ]),
    );
    const elapsed = Date.now() - started;
    console.log(`observe with a blackholed member took ${elapsed} ms (per-cluster timeout 2 s)`);
    expect({
      clusters: result.signals.map((s) => s.cluster),
      eastPending: result.signals[0]?.pendingPods,
      errors: result.errors.map((e) => ({ cluster: e.cluster, code: e.code })),
    }).toEqual({
      // The two that could not be reached carry a transport error (one poll: not yet unreachable).
      clusters: ['fleet/east', 'fleet/slow', 'fleet/down'],
      eastPending: 2,
      errors: [
        { cluster: 'fleet/slow', code: 'Timeout' },
        { cluster: 'fleet/down', code: 'Unavailable' },
      ],
    });
    expect(result.signals.slice(1).map((s) => s.transportError)).toEqual([
      { reason: 'timeout', consecutivePolls: 1 },
      { reason: 'unavailable', consecutivePolls: 1 },
    ]);
    expect(result.errors[0]!.message).toBe('no complete answer within 2 s; signal left missing');
    expect(result.errors[1]!.message).toMatch(
      /^HorizontalPodAutoscaler shop\/web: .*ECONNREFUSED.* \(and 3 more reads failed\)$/,
    );
    console.log(`unreachable member: ${result.errors[1]!.message}`);
    expect(elapsed).toBeLessThan(8 * SECONDS);
    const counts = (await registry.getSingleMetric('mco_signal_observations_total')!.get()).values
      .map((v) => `${v.labels.cluster} ${v.labels.result} ${v.value}`)
      .sort();
    expect(counts).toEqual(['fleet/down failed 1', 'fleet/east ok 1', 'fleet/slow failed 1']);
  });

  it('reports a missing HPA as a partial signal, never as a guess', async () => {
    const result = await source().observe(request([east()], 'shop', 'no-such-hpa'));
    expect(withoutTimes(result)).toEqual({
      signals: [
        {
          cluster: 'fleet/east',
          observedAt: 'T',
          pendingPods: 2,
          failedScaleUp: true,
          nodeLimitReached: false, // a FailedScaleUp says nothing of a size limit
          readyReplicas: 5,
          workloadHealthy: true,
        },
      ],
      errors: [
        {
          cluster: 'fleet/east',
          code: 'NotFound',
          message:
            'HorizontalPodAutoscaler shop/no-such-hpa: HTTP 404: horizontalpodautoscalers.autoscaling "no-such-hpa" not found',
        },
      ],
    });
  });

  it('drops a credential the member rejects (401) and fetches a new one on the next observation', async () => {
    const tokenFile = join(dir, 'east.token');
    writeFileSync(tokenFile, 'not-a-valid-token');
    const s = source();
    try {
      const rejected = await s.observe(request([east()]));
      writeFileSync(tokenFile, cp.members.east!.token('controller'));
      const accepted = await s.observe(request([east()]));
      expect({
        rejected: { signals: rejected.signals.length, codes: [...new Set(rejected.errors.map((e) => e.code))] },
        accepted: { signals: accepted.signals.length, errors: accepted.errors },
      }).toEqual({ rejected: { signals: 0, codes: ['Unauthorized'] }, accepted: { signals: 1, errors: [] } });
    } finally {
      writeFileSync(tokenFile, cp.members.east!.token('controller'));
    }
  });
});
