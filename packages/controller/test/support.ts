// Shared by the controller's integration tests and its benchmark: a real
// kube-apiserver with the CRDs and the chart's RBAC, helpers to change the
// fleet, and a capacity-signal source the test controls (a plugin, not an
// imitation of Kubernetes).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type CoreV1Event,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { Signal } from '@mco/core';
import type { CapacitySignalSource, SignalError, SignalObservation, SignalRequest } from '@mco/runtime';
import {
  describeWithControlPlane,
  loadYamlObjects,
  requireTool,
  startControlPlane,
  type ControlPlane,
  tenantKubeConfig as tenantKubeConfigOn,
  type ControlPlaneOptions,
} from '@mco/testkit';
import { CLUSTER_PROFILES, PLACEMENT_DECISIONS, PLACEMENTS, type KubeObject } from '@mco/kube-runtime';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const CHART = join(REPO, 'apps', 'mco', 'chart');
export const RELEASE_NAMESPACE = 'mco-system';
/** The chart's defaults: one Lease shared by every install (controller.leaderElection.lockNamespace/lockName). */
export const LEASE_NAMESPACE = 'kube-system';
export const LEASE_NAME = 'mco-controller';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The helm binary, prepared before the tests (tools/helm/build.sh: MCO_HELM, helm 3 on PATH, or built once). */
export function helmBinary(): string {
  return requireTool('helm');
}

/**
 * `describe` for suites that need the real control plane and the chart
 * (rendered by helm). Outside CI a missing requirement skips the suite with
 * one line saying why; under CI=true nothing is skipped.
 */
export function describeWithHub(name: string, fn: () => void): void {
  describeWithControlPlane(name, { tools: ['helm'] }, fn);
}

/** `helm template mco apps/mco/chart -n mco-system <args>` as objects. */
export function renderChart(args: readonly string[] = []): KubernetesObject[] {
  const out = execFileSync(helmBinary(), ['template', 'mco', CHART, '--namespace', RELEASE_NAMESPACE, ...args], {
    encoding: 'utf8',
  });
  const file = join(mkdtempSync(join(tmpdir(), 'mco-chart-')), 'rendered.yaml');
  writeFileSync(file, out);
  return loadYamlObjects(file);
}

/** The CRDs the chart ships (MKCP from @mco/core, ClusterProfile and PlacementDecision; kept identical to their sources by a test). */
export function crdSources(): string[] {
  return [join(CHART, 'crds')];
}

export interface Hub {
  readonly plane: ControlPlane;
  readonly admin: KubeConfig;
  /** Authenticated as the chart's ServiceAccount, so it has exactly the chart's RBAC. */
  controllerKubeConfig(): KubeConfig;
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  stop(): Promise<void>;
}

/**
 * Starts a control plane, installs the CRDs, applies the chart's
 * ServiceAccount and RBAC (rendered by helm: one source of truth) and gets a
 * token for that ServiceAccount through the TokenRequest API.
 */
export async function startHub(options: ControlPlaneOptions = {}): Promise<Hub> {
  const plane = await startControlPlane(options);
  try {
    const admin = plane.hub.adminKubeConfig();
    await plane.hub.installCrds(crdSources());
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: RELEASE_NAMESPACE } } });
    const rbac = renderChart().filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
    );
    await plane.hub.apply(rbac);
    const account = rbac.find((o) => o.kind === 'ServiceAccount')!.metadata!.name!;
    const controllerKubeConfig = () => {
      // A fresh token per kubeconfig is cheap; an hour outlives any test.
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'hub', server: plane.hub.server, caData: plane.hub.caData, skipTLSVerify: false }],
        users: [{ name: 'hub-mco-controller', token: tokens.get(account)! }],
        contexts: [{ name: 'hub-mco-controller', cluster: 'hub', user: 'hub-mco-controller' }],
        currentContext: 'hub-mco-controller',
      });
      return kc;
    };
    const request = await core.createNamespacedServiceAccountToken({
      name: account,
      namespace: RELEASE_NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const tokens = new Map([[account, request.status!.token]]);
    return {
      plane,
      admin,
      controllerKubeConfig,
      custom: admin.makeApiClient(CustomObjectsApi),
      core,
      stop: () => plane.stop(),
    };
  } catch (error) {
    await plane.stop();
    throw error;
  }
}

/** Polls `probe` every 50 ms until it returns a value other than undefined/false; throws with `what` on timeout. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(50);
  }
}

/**
 * A team's ServiceAccount `tenant` in `namespace`, with a Role there for placements and nothing else
 * (as a shared hub gives a team); returns a kubeconfig with its token, so the test acts as the tenant.
 */
export function tenantKubeConfig(hub: Hub, namespace: string): Promise<KubeConfig> {
  return tenantKubeConfigOn(hub.plane.hub, namespace);
}

/** Admin-side helpers to change the fleet and read what the controller wrote. */
export class Fleet {
  constructor(private readonly hub: Hub) {}

  async namespace(name: string): Promise<void> {
    await this.hub.core.createNamespace({ body: { metadata: { name } } });
  }

  async createProfile(namespace: string, name: string, labels: Record<string, string> = {}): Promise<KubeObject> {
    return (await this.hub.custom.createNamespacedCustomObject({
      ...CLUSTER_PROFILES,
      namespace,
      body: {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace, labels },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      },
    })) as KubeObject;
  }

  async labelProfile(namespace: string, name: string, labels: Record<string, string | null>): Promise<void> {
    await this.mergePatch(CLUSTER_PROFILES, namespace, name, { metadata: { labels } });
  }

  /** Sets the ControlPlaneHealthy condition through /status. */
  async setProfileHealthy(namespace: string, name: string, healthy: boolean): Promise<void> {
    const profile = (await this.hub.custom.getNamespacedCustomObject({
      ...CLUSTER_PROFILES,
      namespace,
      name,
    })) as KubeObject;
    profile.status = {
      conditions: [
        {
          type: 'ControlPlaneHealthy',
          status: healthy ? 'True' : 'False',
          reason: healthy ? 'Healthy' : 'Unreachable',
          message: 'set by the test',
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
    };
    await this.hub.custom.replaceNamespacedCustomObjectStatus({ ...CLUSTER_PROFILES, namespace, name, body: profile });
  }

  async deleteProfile(namespace: string, name: string): Promise<void> {
    await this.hub.custom.deleteNamespacedCustomObject({ ...CLUSTER_PROFILES, namespace, name });
  }

  async createPlacement(namespace: string, name: string, spec: object): Promise<KubeObject> {
    return (await this.hub.custom.createNamespacedCustomObject({
      ...PLACEMENTS,
      namespace,
      body: {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name, namespace },
        spec,
      },
    })) as KubeObject;
  }

  async placement(namespace: string, name: string): Promise<KubeObject> {
    return (await this.hub.custom.getNamespacedCustomObject({ ...PLACEMENTS, namespace, name })) as KubeObject;
  }

  async setPlacementSpec(namespace: string, name: string, spec: object): Promise<void> {
    const placement = await this.placement(namespace, name);
    await this.hub.custom.replaceNamespacedCustomObject({
      ...PLACEMENTS,
      namespace,
      name,
      body: { ...placement, spec },
    });
  }

  async deletePlacement(namespace: string, name: string): Promise<void> {
    await this.hub.custom.deleteNamespacedCustomObject({ ...PLACEMENTS, namespace, name });
  }

  /** `ns/name:STATE` of every listed cluster, in status order. */
  async states(namespace: string, name: string): Promise<string[]> {
    const status = (await this.placement(namespace, name)).status as
      { clusters?: { namespace?: string; name: string; state: string }[] } | undefined;
    return (status?.clusters ?? []).map((c) => `${c.namespace}/${c.name}:${c.state}`);
  }

  async condition(
    namespace: string,
    name: string,
    type: string,
  ): Promise<{ status: string; reason?: string; message?: string } | undefined> {
    const status = (await this.placement(namespace, name)).status as
      { conditions?: { type: string; status: string; reason?: string; message?: string }[] } | undefined;
    return status?.conditions?.find((c) => c.type === type);
  }

  async decisions(namespace: string): Promise<KubeObject[]> {
    const list = (await this.hub.custom.listNamespacedCustomObject({ ...PLACEMENT_DECISIONS, namespace })) as {
      items: KubeObject[];
    };
    return list.items.sort((a, b) => String(a.metadata?.name).localeCompare(String(b.metadata?.name)));
  }

  /** `name: cluster=reason,...` per PlacementDecision of the namespace. */
  async decisionSummary(namespace: string): Promise<string[]> {
    return (await this.decisions(namespace)).map(
      (d) =>
        `${d.metadata?.name}: ${(
          (d.decisions as { clusterProfileRef: { namespace?: string; name: string }; reason?: string }[]) ?? []
        )
          .map((x) => `${x.clusterProfileRef.namespace}/${x.clusterProfileRef.name}=${x.reason}`)
          .join(',')}`,
    );
  }

  async events(namespace: string): Promise<CoreV1Event[]> {
    return (await this.hub.core.listNamespacedEvent({ namespace })).items;
  }

  private async mergePatch(resource: typeof CLUSTER_PROFILES, namespace: string, name: string, body: object) {
    const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
    await this.hub.custom.patchNamespacedCustomObject(
      { ...resource, namespace, name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

/**
 * A capacity-signal source the test controls: per cluster, the fields of the
 * signal it reports (stamped with the current time), or nothing. `hold()`
 * makes observe() wait until `release()` (or the abort signal).
 */
export class FakeSignalSource implements CapacitySignalSource {
  private readonly fields = new Map<string, Omit<Signal, 'cluster' | 'observedAt'>>();
  private readonly failures = new Map<string, SignalError>();
  /** When set, observe() rejects with it (the source itself is broken). */
  broken: Error | undefined;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  calls = 0;
  waiting = 0;

  set(cluster: string, fields: Omit<Signal, 'cluster' | 'observedAt'> | undefined): void {
    if (fields) this.fields.set(cluster, fields);
    else this.fields.delete(cluster);
  }

  /** The cluster cannot be observed: no signal, and an error naming why. */
  fail(cluster: string, error: Omit<SignalError, 'cluster'> | undefined): void {
    if (error) this.failures.set(cluster, { cluster, ...error });
    else this.failures.delete(cluster);
  }

  hold(): void {
    this.gate ??= new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async observe(request: SignalRequest, abort?: AbortSignal): Promise<SignalObservation> {
    this.calls++;
    if (this.gate) {
      this.waiting++;
      try {
        await Promise.race([
          this.gate,
          new Promise((_, reject) => abort?.addEventListener('abort', () => reject(abort.reason), { once: true })),
        ]);
      } finally {
        this.waiting--;
      }
    }
    if (this.broken) throw this.broken;
    const observedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const signals: Signal[] = [];
    const errors: SignalError[] = [];
    for (const { key } of request.clusters) {
      const failure = this.failures.get(key);
      const fields = this.fields.get(key);
      if (failure) errors.push(failure);
      else if (fields) signals.push({ cluster: key, observedAt, ...fields });
    }
    return { signals, errors };
  }
}
