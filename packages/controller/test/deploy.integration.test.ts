import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoordinationV1Api,
  loadAllYaml,
  loadYaml,
  type KubernetesObject,
  type V1ClusterRole,
  type V1Deployment,
  type V1Role,
} from '@kubernetes/client-node';
import { loadYamlObjects } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { InventoryFileSchema } from '../../../apps/mco/src/commands/inventory.js';
import {
  CHART,
  Fleet,
  helmBinary,
  LEASE_NAME,
  LEASE_NAMESPACE,
  RELEASE_NAMESPACE,
  renderChart,
  REPO,
  startHub,
  waitFor,
  type Hub,
  describeWithHub,
} from './support.js';

const RUN_MCO = fileURLToPath(new URL('./fixtures/run-mco.ts', import.meta.url));
const PROVIDER_RBAC = join(REPO, 'packages', 'provider-manual', 'deploy', 'rbac.yaml');

/** The docs/install.md example: a manual provider reading clusters rendered into the same ConfigMap. */
const INVENTORY_VALUES = `
inventory:
  enabled: true
  providers:
    - name: lab
      plugin: manual
      config: {file: /etc/mco-inventory/clusters.yaml, namespace: fleet}
  clusters:
    - name: eu-1
      labels: {region: eu}
      server: https://eu-1.example.com:6443
`;

function inventoryValuesFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'mco-inventory-values-')), 'values.yaml');
  writeFileSync(file, INVENTORY_VALUES);
  return file;
}

const isInventory = (o: KubernetesObject) => o.metadata?.labels?.['app.kubernetes.io/component'] === 'inventory';

describeWithHub('the Helm chart and `mco controller` on a real kube-apiserver', () => {
  let hub: Hub;
  let fleet: Fleet;

  beforeAll(async () => {
    hub = await startHub();
    fleet = new Fleet(hub);
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it('passes helm lint with the defaults and with every option on, and refuses replicas without leader election', () => {
    const helm = helmBinary();
    const lint = (args: string[]) => spawnSync(helm, ['lint', CHART, '--strict', ...args], { encoding: 'utf8' });
    const refused = spawnSync(
      helm,
      ['template', 'mco', CHART, '--set', 'replicaCount=2', '--set', 'controller.leaderElection.enabled=false'],
      { encoding: 'utf8' },
    );
    expect({
      defaults: lint([]).status,
      everything: lint(['--set', 'serviceMonitor.enabled=true', '--set', 'signalSources.defaultSource=p']).status,
      refused: refused.status,
      message: refused.stderr.includes('replicaCount > 1 needs controller.leaderElection.enabled=true'),
    }).toEqual({ defaults: 0, everything: 0, refused: 1, message: true });
  });

  it("keeps the chart's CRDs identical to their sources", () => {
    const check = spawnSync(process.execPath, [join(CHART, 'hack', 'sync-crds.mjs'), '--check'], { encoding: 'utf8' });
    expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('applies every rendered manifest to the apiserver', async () => {
    const objects = renderChart([
      '--set',
      'signalSources.defaultSource=prom',
      '--set-json',
      'signalSources.sources=[{"name":"prom","plugin":"prometheus","config":{"url":"http://prometheus:9090"},"placementNamespaces":["*"]}]',
    ]);
    const applied = await hub.plane.hub.apply(objects);
    expect(applied.map((o) => `${o.kind}/${o.metadata?.name}`).sort()).toEqual([
      'ClusterRole/mco-controller',
      'ClusterRoleBinding/mco-controller',
      'ConfigMap/mco-signal-sources',
      'Deployment/mco-controller',
      'FlowSchema/mco.mco-system',
      'FlowSchema/mco.mco-system-leases',
      'PodDisruptionBudget/mco-controller',
      'PriorityLevelConfiguration/mco.mco-system',
      'PriorityLevelConfiguration/mco.mco-system-leases',
      'Role/mco-controller-confirmation',
      'Role/mco.mco-system.hub-endpoints',
      'Role/mco.mco-system.leader-election',
      'RoleBinding/mco-controller-confirmation',
      'RoleBinding/mco.mco-system.hub-endpoints',
      'RoleBinding/mco.mco-system.leader-election',
      'Service/mco-metrics',
      'ServiceAccount/mco',
      'ValidatingAdmissionPolicy/mco.mco-system.leader-election.leases',
      'ValidatingAdmissionPolicyBinding/mco.mco-system.leader-election.leases',
    ]);
  });

  it('renders one lock for every release: two releases in two namespaces share the Lease, each with its own non-clashing Role, and reads the confirmation in its own namespace only', () => {
    const render = (release: string, namespace: string) => {
      const objects = loadAllYaml(
        execFileSync(helmBinary(), ['template', release, CHART, '--namespace', namespace], { encoding: 'utf8' }),
      ) as KubernetesObject[];
      const args = (objects.find((o) => o.kind === 'Deployment') as V1Deployment).spec!.template.spec!.containers[0]!
        .args!;
      const roles = objects.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding');
      const role = (suffix: string) =>
        (roles.find((o) => o.kind === 'Role' && o.metadata!.name!.endsWith(suffix)) as V1Role).rules;
      return {
        lock: args.filter((a) => /^--(leader-election-namespace|leader-election-id|shards|install)=/.test(a)),
        roles: roles.map((o) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`).sort(),
        rules: role('leader-election'),
        confirmation: role('confirmation'),
      };
    };
    const rules = [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        // One Lease per shard (8 by default), the members' and the inventory-loss state's.
        resourceNames: [
          'mco-controller',
          ...[1, 2, 3, 4, 5, 6, 7].map((i) => `mco-controller-${i}`),
          'mco-controller-members',
          'mco-controller-inventory-loss',
        ],
        verbs: ['get', 'update'],
      },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['mco-controller-inventory-loss'],
        verbs: ['list', 'watch'],
      },
    ];
    const confirmation = [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['mco-inventory-loss-confirmation'],
        verbs: ['get', 'list', 'watch'],
      },
    ];
    expect([render('mco', 'team-a'), render('other', 'team-b')]).toEqual([
      {
        lock: [
          '--leader-election-namespace=kube-system',
          '--leader-election-id=mco-controller',
          '--shards=8',
          '--install=team-a/mco',
        ],
        roles: [
          'Role default/mco.team-a.hub-endpoints',
          'Role kube-system/mco.team-a.leader-election',
          'Role team-a/mco-controller-confirmation',
          'RoleBinding default/mco.team-a.hub-endpoints',
          'RoleBinding kube-system/mco.team-a.leader-election',
          'RoleBinding team-a/mco-controller-confirmation',
        ],
        rules,
        confirmation,
      },
      {
        lock: [
          '--leader-election-namespace=kube-system',
          '--leader-election-id=mco-controller',
          '--shards=8',
          '--install=team-b/other',
        ],
        roles: [
          'Role default/other-mco.team-b.hub-endpoints',
          'Role kube-system/other-mco.team-b.leader-election',
          'Role team-b/other-mco-controller-confirmation',
          'RoleBinding default/other-mco.team-b.hub-endpoints',
          'RoleBinding kube-system/other-mco.team-b.leader-election',
          'RoleBinding team-b/other-mco-controller-confirmation',
        ],
        rules,
        confirmation,
      },
    ]);
  });

  it('passes helm lint with the inventory enabled, and refuses the inventory without providers', () => {
    const helm = helmBinary();
    const lint = spawnSync(helm, ['lint', CHART, '--strict', '-f', inventoryValuesFile()], { encoding: 'utf8' });
    const refused = spawnSync(helm, ['template', 'mco', CHART, '--set', 'inventory.enabled=true'], {
      encoding: 'utf8',
    });
    expect({
      lint: lint.status,
      refused: refused.status,
      message: refused.stderr.includes('inventory.enabled needs inventory.providers'),
    }).toEqual({ lint: 0, refused: 1, message: true });
  });

  it('renders no inventory objects by default', () => {
    expect(renderChart().filter((o) => isInventory(o) || o.metadata?.name?.includes('inventory'))).toEqual([]);
  });

  it('applies the inventory manifests to the apiserver: the Deployment runs `mco inventory` on the mounted providers file, which parses, with the provider RBAC', async () => {
    const objects = renderChart(['-f', inventoryValuesFile()]).filter(isInventory);
    const applied = await hub.plane.hub.apply(objects);
    const find = <T>(kind: string) => applied.find((o) => o.kind === kind) as T;
    const deployment = find<{
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            securityContext: unknown;
            containers: {
              args: string[];
              livenessProbe: { httpGet: { path: string } };
              readinessProbe: { httpGet: { path: string } };
              securityContext: unknown;
              volumeMounts: { mountPath: string; readOnly: boolean }[];
            }[];
          };
        };
      };
    }>('Deployment');
    const container = deployment.spec.template.spec.containers[0]!;
    const configMap = find<{ data: Record<string, string> }>('ConfigMap');
    const controller = renderChart().find((o) => o.kind === 'Deployment') as typeof deployment;
    const [providerRole] = loadYamlObjects(PROVIDER_RBAC) as V1ClusterRole[];
    expect({
      objects: applied.map((o) => `${o.kind}/${o.metadata?.name}`).sort(),
      serviceAccount: deployment.spec.template.spec.serviceAccountName,
      args: container.args,
      probes: [container.livenessProbe.httpGet.path, container.readinessProbe.httpGet.path],
      mounts: container.volumeMounts,
      podSecurity: deployment.spec.template.spec.securityContext,
      containerSecurity: container.securityContext,
      providers: InventoryFileSchema.parse(loadYaml(configMap.data['providers.yaml']!)),
      clusters: loadYaml(configMap.data['clusters.yaml']!),
      rules: find<V1ClusterRole>('ClusterRole').rules,
    }).toEqual({
      objects: [
        'ClusterRole/mco-inventory',
        'ClusterRoleBinding/mco-inventory',
        'ConfigMap/mco-inventory',
        'Deployment/mco-inventory',
        'ServiceAccount/mco-inventory',
      ],
      serviceAccount: 'mco-inventory',
      args: ['inventory', '--config', '/etc/mco-inventory/providers.yaml', '--listen', ':8081', '--log-level', 'info'],
      probes: ['/healthz', '/readyz'],
      mounts: [{ name: 'config', mountPath: '/etc/mco-inventory', readOnly: true }],
      podSecurity: controller.spec.template.spec.securityContext,
      containerSecurity: controller.spec.template.spec.containers[0]!.securityContext,
      providers: {
        providers: [
          { name: 'lab', plugin: 'manual', config: { file: '/etc/mco-inventory/clusters.yaml', namespace: 'fleet' } },
        ],
      },
      clusters: { clusters: [{ name: 'eu-1', labels: { region: 'eu' }, server: 'https://eu-1.example.com:6443' }] },
      rules: providerRole!.rules,
    });
  });

  it('runs `mco controller` as the chart ServiceAccount: ready after sync, decides, logs JSON without secrets, stops cleanly on SIGTERM releasing the Lease', async () => {
    await fleet.namespace('cli');
    await fleet.namespace('fleet-cli');
    await fleet.createProfile('fleet-cli', 'c1');
    const dir = mkdtempSync(join(tmpdir(), 'mco-cli-'));
    const kubeconfig = join(dir, 'kubeconfig.json');
    const kc = hub.controllerKubeConfig();
    writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
    const token = kc.getCurrentUser()!.token!;
    const child = spawn(
      process.execPath,
      [
        '--conditions=@mco/source',
        '--import',
        'tsx',
        RUN_MCO,
        'controller',
        '--kubeconfig',
        kubeconfig,
        '--listen=127.0.0.1:0',
        `--leader-election-namespace=${LEASE_NAMESPACE}`,
        `--install=${RELEASE_NAMESPACE}/mco`,
      ],
      {
        cwd: REPO,
        env: {
          ...process.env,
          POD_NAMESPACE: RELEASE_NAMESPACE,
          POD_NAME: 'mco-cli-test',
          MCO_LEADER_ELECTION_ID: LEASE_NAME,
          MCO_LEASE_DURATION: '3s',
          MCO_RENEW_DEADLINE: '2s',
          MCO_RETRY_PERIOD: '500ms',
          MCO_LOG_LEVEL: 'debug',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // tsx compiles the whole CLI from source on start: over a minute when both cores are busy.
      const port = await waitFor('the starting line', () => /"http":"127\.0\.0\.1:(\d+)"/.exec(stderr)?.[1], 150_000);
      const get = async (path: string) => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
      await waitFor('/readyz 200', async () => (await get('/readyz')) === 200, 30_000);
      await fleet.createPlacement('cli', 'web', { clusterSelectorRules: [{ type: 'all-clusters' }] });
      await waitFor('decided', async () => (await fleet.states('cli', 'web')).includes('fleet-cli/c1:ACTIVE'), 20_000);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      child.kill('SIGTERM');
      const code = await exited;
      const lease = await hub.admin
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: LEASE_NAMESPACE, name: LEASE_NAME });
      const lines = stderr.trim().split('\n');
      const records = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
      expect({
        code,
        healthz: metrics.includes('mco_controller_is_leader 1'),
        processMetrics: metrics.includes('nodejs_eventloop_lag_p99_seconds'),
        leaseHolder: lease.spec?.holderIdentity,
        messages: ['starting', 'caches synced', 'took a shard', 'stopping', 'released a shard', 'stopped'].filter(
          (m) => !records.some((r) => r.msg === m),
        ),
        tokenLogged: stderr.includes(token),
        errors: records.filter((r) => r.level === 'error'),
      }).toEqual({
        code: 0,
        healthz: true,
        processMetrics: true,
        leaseHolder: '',
        messages: [],
        tokenLogged: false,
        errors: [],
      });
    } finally {
      child.kill('SIGKILL');
    }
  }, 240_000);
});
