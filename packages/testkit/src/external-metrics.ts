import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { ClusterHandle } from './control-plane.js';
import { eventually } from './wait.js';

const GROUP = 'external.metrics.k8s.io';
const VERSION = 'v1beta1';
const METRIC_PATH =
  /^\/apis\/external\.metrics\.k8s\.io\/v1beta1\/namespaces\/([a-z0-9-]{1,63})\/([A-Za-z0-9_.:-]{1,253})$/;

/**
 * An external metrics API server for one member cluster: what a metrics
 * adapter (KEDA, prometheus-adapter, a cloud's) is to an HPA with an
 * `External` metric, registered the way Kubernetes serves one, through an
 * APIService that kube-apiserver's aggregator proxies to. The values are
 * the load a test sets (say, a queue's depth), the same in every namespace.
 */
export interface ExternalMetrics {
  /** Sets the value the metric reports from now on. */
  set(metric: string, value: number): void;
  /** Requests answered, by path: shows that the HPA controller really reads it. */
  readonly reads: ReadonlyMap<string, number>;
  stop(): Promise<void>;
}

/**
 * Serves `external.metrics.k8s.io/v1beta1` on a free loopback port, with the
 * member apiserver's own self-signed certificate, and registers it on the
 * member: an `ExternalName` Service pointing at 127.0.0.1 (the aggregator
 * resolves it to that host and the APIService's port) and the APIService
 * (`insecureSkipTLSVerify`, as metrics-server's own manifest has it: the
 * aggregator checks the certificate against `<service>.<namespace>.svc`,
 * which no loopback certificate names). Resolves once the APIService is
 * Available.
 */
export async function startExternalMetrics(cluster: ClusterHandle): Promise<ExternalMetrics> {
  const values = new Map<string, number>();
  const reads = new Map<string, number>();
  const server: Server = createServer(
    {
      cert: readFileSync(join(cluster.certDir, 'apiserver.crt')),
      key: readFileSync(join(cluster.certDir, 'apiserver.key')),
    },
    (req, res) => {
      const path = new URL(req.url ?? '/', 'https://metrics').pathname;
      reads.set(path, (reads.get(path) ?? 0) + 1);
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'GET') return send(405, status(405, 'MethodNotAllowed', 'only GET'));
      if (path === `/apis/${GROUP}/${VERSION}`) {
        return send(200, {
          kind: 'APIResourceList',
          apiVersion: 'v1',
          groupVersion: `${GROUP}/${VERSION}`,
          resources: [...values.keys()].map((name) => ({
            name,
            singularName: '',
            namespaced: true,
            kind: 'ExternalMetricValueList',
            verbs: ['get'],
          })),
        });
      }
      const match = METRIC_PATH.exec(path);
      const value = match ? values.get(match[2]!) : undefined;
      if (!match || value === undefined) return send(404, status(404, 'NotFound', `no metric at ${path}`));
      return send(200, {
        kind: 'ExternalMetricValueList',
        apiVersion: `${GROUP}/${VERSION}`,
        metadata: {},
        items: [
          {
            metricName: match[2],
            metricLabels: {},
            timestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            // A Kubernetes quantity: milli-units keep fractions exact.
            value: `${Math.round(value * 1000)}m`,
          },
        ],
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  try {
    await cluster.apply([
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'mco-testkit-external-metrics', namespace: 'kube-system' },
        spec: { type: 'ExternalName', externalName: '127.0.0.1' },
      } as KubernetesObject,
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: `${VERSION}.${GROUP}` },
        spec: {
          group: GROUP,
          version: VERSION,
          service: { name: 'mco-testkit-external-metrics', namespace: 'kube-system', port },
          insecureSkipTLSVerify: true,
          groupPriorityMinimum: 100,
          versionPriority: 100,
        },
      } as KubernetesObject,
    ]);
    await eventually(
      `the APIService ${VERSION}.${GROUP} Available on ${cluster.name}`,
      async () => {
        const res = await cluster.request(`/apis/apiregistration.k8s.io/v1/apiservices/${VERSION}.${GROUP}`);
        const conditions = (JSON.parse(res.body) as { status?: { conditions?: { type: string; status: string }[] } })
          .status?.conditions;
        return conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false;
      },
      (available) => available,
      60_000,
      200,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    set(metric, value) {
      if (!/^[A-Za-z0-9_.:-]{1,253}$/.test(metric)) throw new Error(`external metric name "${metric}" is not valid`);
      if (!Number.isFinite(value) || value < 0) throw new Error(`external metric ${metric}: value must be >= 0`);
      values.set(metric, value);
    },
    reads,
    stop,
  };
}

function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}
