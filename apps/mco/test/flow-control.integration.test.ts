// Issue 47: API Priority and Fairness. The chart puts mco's writers in a
// priority level of their own (a FlowSchema and PriorityLevelConfiguration);
// on a real kube-apiserver with APF on, a process authenticated as the
// controller's ServiceAccount writes placement statuses as fast as the server
// takes them at the controller's concurrency (the chart's workers x replicas),
// while another client's GETs and LISTs are timed, in alternating idle and
// loaded phases of the same window.
//
// What is asserted is what APF guarantees: every request of mco's account runs
// in mco's level (its Lease requests in a level of their own, so that shard
// Leases are renewed however many writes queue) and the other client's in its own, none is rejected, and the
// other client's requests do not wait behind mco's (its APF wait p99 is below
// the median wait of mco's requests, which queue for their level's seats). The
// other client's latency, idle and loaded, LIST and GET, is printed, not
// asserted: on this 2-core machine the status writes take the API server's CPU
// and delay its consistent LISTs (they wait for etcd's progress notification
// behind the writes' watch events), which APF does not divide. Run alone, the
// loaded p99 was 16-22 x the idle one (docs/performance.md, "Another client
// beside mco's writes").
import { fork, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { KubernetesObject } from '@kubernetes/client-node';
import { objectPath, PLACEMENTS, resourcePath, type KubeClient } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  metricSums,
  renderChart,
  serviceAccountKubeConfig,
  startControlPlane,
  summarize,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { ALL_ON } from './chart-values.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 180_000 });

const NAME = `mco.${RELEASE_NAMESPACE}`;
const FLOW_KINDS = ['FlowSchema', 'PriorityLevelConfiguration'];
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const MKCP_CRD = fileURLToPath(
  new URL('../chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);
/** Alternating idle and loaded phases; samples begun within SETTLE_MS of a switch are not counted. */
const ROUNDS = 10;
const PHASE_MS = 3_000;
const SETTLE_MS = 300;
/** A region-and-tier placement's status at 5,000 x 5,000: 167 clusters, as the controller writes them. */
const STATUS = {
  observedGeneration: 1,
  clusters: Array.from({ length: 167 }, (_, i) => ({
    name: `c-${String(i * 7).padStart(5, '0')}`,
    namespace: `fleet-${i % 10}`,
    state: 'ACTIVE',
    lastTransitionTime: '2026-11-27T16:00:00Z',
    reason: 'Added',
  })),
};

interface FlowSchema {
  spec: {
    priorityLevelConfiguration: { name: string };
    matchingPrecedence: number;
    distinguisherMethod?: { type: string };
    rules: {
      subjects: { kind: string; serviceAccount?: { name: string; namespace: string } }[];
      resourceRules?: unknown[];
    }[];
  };
}
interface PriorityLevel {
  spec: { type: string; limited?: { nominalConcurrencyShares: number; limitResponse: { type: string } } };
}

const flowObjects = (values: Record<string, string>) =>
  renderChart(values).filter((o) => FLOW_KINDS.includes(o.kind ?? ''));
const subjectsOf = (objects: KubernetesObject[]) =>
  (objects.find((o) => o.kind === 'FlowSchema') as (KubernetesObject & FlowSchema) | undefined)?.spec.rules.flatMap(
    (r) => r.subjects.map((s) => `${s.serviceAccount?.namespace}/${s.serviceAccount?.name}`),
  );

describeWithControlPlane("the chart's API Priority and Fairness objects", { tools: ['helm'] }, () => {
  it("puts the controller's account, and every enabled writer's, in a Limited level of mco's own; not the readers", () => {
    const defaults = flowObjects({});
    const named = (kind: string, name: string) => defaults.find((o) => o.kind === kind && o.metadata?.name === name);
    const level = named('PriorityLevelConfiguration', NAME) as (KubernetesObject & PriorityLevel) | undefined;
    const schema = named('FlowSchema', NAME) as (KubernetesObject & FlowSchema) | undefined;
    const leaseLevel = named('PriorityLevelConfiguration', `${NAME}-leases`) as
      (KubernetesObject & PriorityLevel) | undefined;
    const leaseSchema = named('FlowSchema', `${NAME}-leases`) as (KubernetesObject & FlowSchema) | undefined;
    const allOn = renderChart(ALL_ON);
    const accounts = allOn.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata!.name!);
    expect({
      names: defaults.map((o) => `${o.kind}/${o.metadata?.name}`).sort(),
      level: level?.spec.type,
      limitResponse: level?.spec.limited?.limitResponse.type,
      schema: schema && {
        level: schema.spec.priorityLevelConfiguration.name,
        precedence: schema.spec.matchingPrecedence,
        distinguisher: schema.spec.distinguisherMethod?.type,
      },
      // Lease requests of the same accounts: a small level of their own, matched first.
      leases: leaseSchema && {
        level: leaseSchema.spec.priorityLevelConfiguration.name,
        precedence: leaseSchema.spec.matchingPrecedence,
        rules: leaseSchema.spec.rules.map((r) => r.resourceRules),
        shares: leaseLevel?.spec.limited?.nominalConcurrencyShares,
        subjects: leaseSchema.spec.rules.flatMap((r) => r.subjects.map((x) => x.serviceAccount?.name)),
      },
      subjects: subjectsOf(defaults),
      allOn: subjectsOf(allOn.filter((o) => FLOW_KINDS.includes(o.kind ?? ''))),
      // The subjects are accounts the chart makes; the plugin (Argo CD's reads) and the dashboard (people's) are not.
      readers: accounts.filter((a) => a.endsWith('argocd-plugin') || a.endsWith('dashboard')),
      accounts: accounts.sort(),
    }).toEqual({
      names: [
        `FlowSchema/${NAME}`,
        `FlowSchema/${NAME}-leases`,
        `PriorityLevelConfiguration/${NAME}`,
        `PriorityLevelConfiguration/${NAME}-leases`,
      ],
      level: 'Limited',
      limitResponse: 'Queue',
      schema: { level: NAME, precedence: 850, distinguisher: 'ByUser' },
      leases: {
        level: `${NAME}-leases`,
        precedence: 849,
        rules: [[{ verbs: ['*'], apiGroups: ['coordination.k8s.io'], resources: ['leases'], namespaces: ['*'] }]],
        shares: 5,
        subjects: ['mco'],
      },
      subjects: [`${RELEASE_NAMESPACE}/mco`],
      allOn: [
        `${RELEASE_NAMESPACE}/mco`,
        `${RELEASE_NAMESPACE}/mco-flux`,
        `${RELEASE_NAMESPACE}/mco-configsync`,
        `${RELEASE_NAMESPACE}/mco-inventory`,
        `${RELEASE_NAMESPACE}/mco-argocd-refresher`,
        `${RELEASE_NAMESPACE}/mco-argocd-secret-syncer`,
      ],
      readers: ['mco-argocd-plugin', 'mco-dashboard'],
      accounts: [
        'mco',
        'mco-argocd-plugin',
        'mco-argocd-refresher',
        'mco-argocd-secret-syncer',
        'mco-configsync',
        'mco-dashboard',
        'mco-flux',
        'mco-inventory',
      ],
    });
  });

  it('renders none with flowControl.enabled=false, and leaves the RBAC as it is either way (no account may touch flowcontrol)', () => {
    const rbac = (values: Record<string, string>) =>
      renderChart(values).filter((o) => RBAC_KINDS.includes(o.kind ?? ''));
    const off = { ...ALL_ON, 'flowControl.enabled': 'false' };
    expect({
      off: flowObjects(off),
      sameRbac: JSON.stringify(rbac(ALL_ON)) === JSON.stringify(rbac(off)),
      flowcontrolRules: JSON.stringify(rbac(ALL_ON)).includes('flowcontrol'),
    }).toEqual({ off: [], sameRbac: true, flowcontrolRules: false });
  });
});

describeWithControlPlane(
  "mco's status writes at the controller's concurrency, in the chart's priority level, on a real kube-apiserver with APF",
  { tools: ['helm'] },
  () => {
    let cp: ControlPlane;
    let writer: ChildProcess | undefined;
    let other: KubeClient;

    beforeAll(async () => {
      // A concurrency limit sized to two cores (the default, 600 seats, is a large server's): mco's level
      // gets 3 seats (ceil(30 x 20 / 265)), fewer than the controller's writers, so they queue there.
      cp = await startControlPlane({
        extraApiserverFlags: [
          '--enable-priority-and-fairness=true',
          '--max-requests-inflight=20',
          '--max-mutating-requests-inflight=10',
        ],
      });
      other = kubeClientFromKubeConfig(cp.hub.kubeConfigFor('plugin'));
    });
    afterAll(async () => {
      writer?.kill();
      other?.close();
      await cp?.stop();
    });

    it("another client's requests run in their own level, never rejected nor queued behind mco's writes (p99s printed)", async () => {
      const hub = cp.hub;
      await hub.installCrds([MKCP_CRD]);
      const chart = renderChart({});
      await hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NAMESPACE } }]);
      await hub.apply([
        ...chart.filter((o) => [...RBAC_KINDS, ...FLOW_KINDS].includes(o.kind ?? '')),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } },
        // The other client: a plain authenticated user (the global-default FlowSchema) that may read ConfigMaps.
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'reader', namespace: 'other' },
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
        } as KubernetesObject,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'reader', namespace: 'other' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'plugin' }],
        } as KubernetesObject,
        ...Array.from({ length: 10 }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `cm-${i}`, namespace: 'other' },
          data: { key: 'x'.repeat(200) },
        })),
      ]);
      // The API server took the FlowSchema: its level exists (not Dangling).
      await eventually(
        'the FlowSchema not Dangling',
        async () =>
          (
            JSON.parse((await hub.request(`/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${NAME}`)).body) as {
              status?: { conditions?: { type: string; status: string }[] };
            }
          ).status?.conditions?.find((c) => c.type === 'Dangling')?.status,
        (status) => status === 'False',
      );
      // The controller's concurrency: the chart's workers x replicas.
      const deployment = chart.find((o) => o.kind === 'Deployment' && o.metadata?.name === 'mco-controller') as
        { spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } } } | undefined;
      const workers = Number(
        deployment!.spec.template.spec.containers[0]!.args.find((a) => a.startsWith('--workers='))!.split('=')[1],
      );
      const concurrency = workers * deployment!.spec.replicas;
      const admin = kubeClientFromKubeConfig(hub.adminKubeConfig());
      const paths: string[] = [];
      try {
        for (let i = 0; i < 64; i++) {
          await admin.create(resourcePath(PLACEMENTS, 'apps'), {
            apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
            kind: 'MultiKubernetesClusterPlacement',
            metadata: { name: `p-${i}`, namespace: 'apps' },
            spec: {},
          });
          paths.push(objectPath(PLACEMENTS, 'apps', `p-${i}`));
        }
      } finally {
        admin.close();
      }
      const account = await serviceAccountKubeConfig(hub, RELEASE_NAMESPACE, 'mco');
      const token = (account.getCurrentUser() as { token: string }).token;

      const child = fork(fileURLToPath(new URL('./status-writer.mjs', import.meta.url)), {
        env: {
          ...process.env,
          STATUS_WRITER: JSON.stringify({
            server: hub.server,
            token,
            ca: hub.caData,
            concurrency,
            paths,
            status: STATUS,
          }),
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      writer = child;
      interface Counts {
        requests: number;
        writes: number;
        errors: number;
        codes: Record<string, number>;
      }
      const waiting = new Map<number, (counts: Counts) => void>();
      let nextId = 1;
      const ready = new Promise<void>((resolve) =>
        child.on('message', (m: { id: number; counts: Counts }) => {
          if (m.id === 0) resolve();
          waiting.get(m.id)?.(m.counts);
          waiting.delete(m.id);
        }),
      );
      const command = (name: string) =>
        new Promise<Counts>((resolve) => {
          const id = nextId++;
          waiting.set(id, resolve);
          child.send({ id, command: name });
        });
      await ready;

      const metrics = async () => (await hub.request('/metrics')).body;
      const before = await metrics();
      const loadAtStart = loadavg()[0]!;

      // The other client reads, one request after another, through the whole window.
      // By phase and by request: a LIST is answered from the watch cache once it has caught up with etcd, a GET
      // by etcd itself, and mco's writes slow the two differently.
      const samples = { idle: { list: [] as number[], get: [] as number[] }, loaded: { list: [], get: [] } };
      let phase: 'idle' | 'loaded' = 'idle';
      let phaseId = 0;
      let phaseStart = performance.now();
      let reading = true;
      let otherRequests = 0;
      let otherErrors = 0;
      const reader = (async () => {
        for (let n = 0; reading; n++) {
          const id = phaseId;
          const kind = n % 2 === 0 ? 'list' : 'get';
          const sent = performance.now();
          try {
            if (kind === 'list') await other.get('/api/v1/namespaces/other/configmaps');
            else await other.get(`/api/v1/namespaces/other/configmaps/cm-${n % 10}`);
          } catch {
            otherErrors++;
          }
          otherRequests++;
          if (id === phaseId && sent - phaseStart >= SETTLE_MS) samples[phase][kind].push(performance.now() - sent);
        }
      })();
      const switchTo = async (next: 'idle' | 'loaded') => {
        phaseId++; // samples in flight across the switch are not counted
        await command(next === 'loaded' ? 'run' : 'pause');
        phase = next;
        phaseId++;
        phaseStart = performance.now();
        await new Promise((resolve) => setTimeout(resolve, PHASE_MS));
      };
      for (let round = 0; round < ROUNDS; round++) {
        // Alternating order, so that neither phase always follows the other.
        const order: ('idle' | 'loaded')[] = round % 2 === 0 ? ['idle', 'loaded'] : ['loaded', 'idle'];
        for (const next of order) await switchTo(next);
      }
      const counts = await command('pause');
      reading = false;
      await reader;
      // A Lease request of mco's account (its answer does not matter: APF runs before authorization).
      const leases = kubeClientFromKubeConfig(account);
      await leases
        .get('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/mco-controller')
        .catch(() => undefined);
      leases.close();
      const after = await metrics();
      await command('stop');

      const delta = (name: string, by: (labels: Record<string, string>) => string | undefined) => {
        const was = metricSums(before, name, by);
        return Object.fromEntries(
          [...metricSums(after, name, by)].map(([k, v]) => [k, v - (was.get(k) ?? 0)]).filter(([, v]) => v !== 0),
        ) as Record<string, number>;
      };
      const dispatched = delta('apiserver_flowcontrol_dispatched_requests_total', (l) =>
        l.flow_schema === NAME || l.flow_schema === `${NAME}-leases` || l.flow_schema === 'global-default'
          ? `${l.flow_schema} -> ${l.priority_level}`
          : undefined,
      );
      const rejected = delta('apiserver_flowcontrol_rejected_requests_total', (l) => l.priority_level);
      // How long each request waited in APF before it ran (a histogram), by level.
      const waits = delta('apiserver_flowcontrol_request_wait_duration_seconds_bucket', (l) =>
        l.execute === 'true' && (l.priority_level === NAME || l.priority_level === 'global-default')
          ? `${l.priority_level} ${l.le}`
          : undefined,
      );
      /** The bucket (seconds) holding the q-th quantile of a level's waits. */
      const waitQuantile = (level: string, q: number) => {
        const buckets = Object.entries(waits)
          .filter(([k]) => k.startsWith(`${level} `))
          .map(([k, n]) => [Number(k.slice(level.length + 1).replace('+Inf', 'Infinity')), n] as const)
          .sort(([a], [b]) => a - b);
        const total = buckets.at(-1)?.[1] ?? 0;
        return buckets.find(([, n]) => n >= q * total)?.[0];
      };
      const otherWaitP99 = waitQuantile('global-default', 0.99)!;
      const mcoWaitP50 = waitQuantile(NAME, 0.5)!;
      const figures = (phase: 'idle' | 'loaded') => {
        const all = summarize(phase, [...samples[phase].list, ...samples[phase].get]);
        const list = summarize(`${phase} LIST`, samples[phase].list);
        const get = summarize(`${phase} GET`, samples[phase].get);
        return {
          all,
          text:
            `${samples[phase].list.length + samples[phase].get.length} samples p50 ${all.p50.toFixed(1)} ms p99 ${all.p99.toFixed(1)} ms ` +
            `(LIST p50 ${list.p50.toFixed(1)} p99 ${list.p99.toFixed(1)} ms, GET p50 ${get.p50.toFixed(1)} p99 ${get.p99.toFixed(1)} ms)`,
        };
      };
      const idle = figures('idle');
      const loaded = figures('loaded');
      const seconds = (ROUNDS * PHASE_MS) / 1000;
      console.log(
        `APF: ${concurrency} status writers (167 clusters each) wrote ${counts.writes} statuses (${(counts.writes / seconds).toFixed(0)}/s over the loaded phases; codes ${JSON.stringify(counts.codes)}); ` +
          `the other client's GET/LIST, idle: ${idle.text}; loaded: ${loaded.text} ` +
          `(loaded p99 / idle p99 ${(loaded.all.p99 / idle.all.p99).toFixed(2)}); dispatched ${JSON.stringify(dispatched)}, rejected ${JSON.stringify(rejected)}; APF wait: the other client's p99 <= ${otherWaitP99 * 1000} ms, mco's p50 <= ${mcoWaitP50 * 1000} ms; ` +
          `load average ${loadAtStart.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}`,
      );
      expect({
        otherErrors,
        // Every request of mco's account went to mco's level (its Lease request to the Lease level), and nothing
        // else did; the other client's to its own.
        mco: dispatched[`${NAME} -> ${NAME}`],
        other: (dispatched['global-default -> global-default'] ?? 0) >= otherRequests,
        levels: Object.keys(dispatched).sort(),
        rejected,
        // mco's writes queue in mco's level (more writers than its seats); the other client's never wait behind them.
        otherWaitsLessThanMco: otherWaitP99 < mcoWaitP50,
      }).toEqual({
        otherErrors: 0,
        mco: counts.requests,
        other: true,
        levels: ['global-default -> global-default', `${NAME} -> ${NAME}`, `${NAME}-leases -> ${NAME}-leases`],
        rejected: {},
        otherWaitsLessThanMco: true,
      });
    });
  },
);
