// The chart's Argo CD accounts on a real kube-apiserver: the plugin server
// (network-facing) only reads; the ApplicationSet refresher and the Secret
// syncer each hold only their own write, in the Argo CD namespace. Checked with
// SubjectAccessReview, as `kubectl auth can-i --as=system:serviceaccount:...` does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  RELEASE_NAMESPACE,
  accessCheckKey,
  describeWithControlPlane,
  helmTemplate,
  parseYamlDocuments,
  renderChart,
  serviceAccountAccess,
  thirdPartyCrd,
  startControlPlane,
  type AccessCheck,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 60_000 });

const ARGOCD = 'argocd';
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const ALL_ON = {
  'argocd.plugin.enabled': 'true',
  'argocd.plugin.existingSecret': 'mco-plugin-token',
  'argocd.clusterSecretSync.enabled': 'true',
  'argocd.clusterSecretSync.providers[0].name': 'google',
  'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
  'argocd.clusterSecretSync.providers[0].execConfig.command': 'gke-gcloud-auth-plugin',
  'argocd.clusterSecretSync.providers[0].allowedServers[0]': 'https://connectgateway.googleapis.com/v1/projects/1/',
};

const component = (o: KubernetesObject) => o.metadata?.labels?.['app.kubernetes.io/component'];

describeWithControlPlane("the chart's Argo CD accounts on a real kube-apiserver", { tools: ['helm', 'argocd'] }, () => {
  let plane: ControlPlane;
  let dir: string;
  let kubeconfigFile: string;
  let chart: KubernetesObject[];

  beforeAll(async () => {
    plane = await startControlPlane();
    await plane.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      new URL('../chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url)
        .pathname,
      thirdPartyCrd('argoproj.io_applicationsets.yaml'),
    ]);
    await plane.hub.apply(
      [ARGOCD, RELEASE_NAMESPACE, 'fleet', 'apps', 'team-b'].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
    chart = renderChart(ALL_ON);
    await plane.hub.apply(chart.filter((o) => RBAC_KINDS.includes(o.kind ?? '') && component(o)?.startsWith('argocd')));
    dir = mkdtempSync(join(tmpdir(), 'mco-argocd-chart-'));
    kubeconfigFile = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfigFile, plane.hub.adminKubeConfig().exportConfig());
  });

  afterAll(async () => {
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs the plugin, the refresher and the Secret syncer as three Deployments with their own accounts; only the plugin has a Service', () => {
    const workloads = chart
      .filter((o) => component(o)?.startsWith('argocd') && ['Deployment', 'Service'].includes(o.kind!))
      .map((o) => {
        const pod = (
          o as { spec: { template?: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } } }
        ).spec.template?.spec;
        return {
          kind: o.kind,
          name: o.metadata!.name,
          account: pod?.serviceAccountName,
          command: pod?.containers[0]!.args.slice(0, 1),
        };
      });
    expect(workloads).toEqual([
      { kind: 'Service', name: 'mco-argocd-plugin', account: undefined, command: undefined },
      { kind: 'Deployment', name: 'mco-argocd-plugin', account: 'mco-argocd-plugin', command: ['argocd-plugin'] },
      { kind: 'Deployment', name: 'mco-argocd-refresher', account: 'mco-argocd-refresher', command: ['argocd-sync'] },
      {
        kind: 'Deployment',
        name: 'mco-argocd-secret-syncer',
        account: 'mco-argocd-secret-syncer',
        command: ['argocd-sync'],
      },
    ]);
  });

  const CHECKS: readonly AccessCheck[] = [
    ['list', 'orchestra.multicluster.x-k8s.io', 'multikubernetesclusterplacements', ''],
    ['watch', 'multicluster.x-k8s.io', 'clusterprofiles', ''],
    ['patch', 'orchestra.multicluster.x-k8s.io', 'multikubernetesclusterplacements', 'apps'],
    ['patch', 'multicluster.x-k8s.io', 'clusterprofiles', 'fleet'],
    ['list', 'argoproj.io', 'applicationsets', ARGOCD],
    ['patch', 'argoproj.io', 'applicationsets', ARGOCD],
    ['patch', 'argoproj.io', 'applicationsets', 'team-b'],
    ['list', 'argoproj.io', 'applicationsets', ''],
    ['get', '', 'secrets', ARGOCD, 'argocd-secret'],
    ['list', '', 'secrets', ARGOCD],
    ['create', '', 'secrets', ARGOCD],
    ['delete', '', 'secrets', ARGOCD, 'fleet.east'],
    ['get', '', 'secrets', RELEASE_NAMESPACE, 'mco-plugin-token'],
    ['list', '', 'secrets', 'fleet'],
    ['list', '', 'secrets', ''],
    ['create', '', 'pods', RELEASE_NAMESPACE],
    ['create', '', 'serviceaccounts/token', RELEASE_NAMESPACE],
  ];
  const allowed = (granted: readonly AccessCheck[]) =>
    Object.fromEntries(
      CHECKS.map((c) => [accessCheckKey(c), granted.some((g) => accessCheckKey(g) === accessCheckKey(c))]),
    );

  it.each<[string, readonly AccessCheck[]]>([
    ['mco-argocd-plugin', CHECKS.slice(0, 2)],
    ['mco-argocd-refresher', [...CHECKS.slice(0, 2), CHECKS[4]!, CHECKS[5]!]],
    ['mco-argocd-secret-syncer', [...CHECKS.slice(0, 2), ...CHECKS.slice(8, 12)]],
  ])('%s can do its job and nothing more', async (account, granted) => {
    expect(await serviceAccountAccess(plane.hub, RELEASE_NAMESPACE, account, CHECKS)).toEqual(allowed(granted));
  });

  it('scopes ApplicationSet refresh to one namespace (a Role), or everywhere only when asked (a ClusterRole)', () => {
    const refresherRbac = (values: Record<string, string>) =>
      renderChart({ ...ALL_ON, ...values })
        .filter((o) => component(o) === 'argocd-applicationset-refresher' && ['Role', 'ClusterRole'].includes(o.kind!))
        .map((o) => ({
          kind: o.kind,
          namespace: o.metadata!.namespace,
          appSets: (o as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules
            .filter((r) => r.resources.includes('applicationsets'))
            .map((r) => r.verbs),
        }));
    expect({
      default: refresherRbac({}),
      namespace: refresherRbac({ 'argocd.refreshApplicationSets.namespace': 'team-b' }),
      everywhere: refresherRbac({ 'argocd.refreshApplicationSets.allNamespaces': 'true' }),
    }).toEqual({
      default: [
        { kind: 'ClusterRole', namespace: undefined, appSets: [] },
        { kind: 'Role', namespace: ARGOCD, appSets: [['list', 'patch']] },
      ],
      namespace: [
        { kind: 'ClusterRole', namespace: undefined, appSets: [] },
        { kind: 'Role', namespace: 'team-b', appSets: [['list', 'patch']] },
      ],
      everywhere: [{ kind: 'ClusterRole', namespace: undefined, appSets: [['list', 'patch']] }],
    });
  });

  it('with existingSecret renders no token: the pod mounts that Secret and Argo CD reads it', () => {
    const objects = renderChart(ALL_ON);
    const deployment = objects.find(
      (o) => o.kind === 'Deployment' && o.metadata!.name === 'mco-argocd-plugin',
    ) as unknown as {
      spec: { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } };
    };
    const configMap = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata!.name === 'argocd-mco-placement',
    ) as unknown as {
      data: Record<string, string>;
    };
    expect({
      secrets: objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata!.name),
      mounted: deployment.spec.template.spec.volumes.find((v) => v.name === 'token')!.secret!.secretName,
      argoReads: configMap.data.token,
    }).toEqual({ secrets: [], mounted: 'mco-plugin-token', argoReads: '$mco-plugin-token:token' });
  });

  it('refuses to generate a token under plain `helm template` (GitOps), naming existingSecret', async () => {
    const result = await helmTemplate(['--set', 'argocd.plugin.enabled=true']);
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 1, stdout: '' });
    expect(result.stderr).toContain('argocd.plugin.existingSecret is required when the chart cannot read the cluster');
  });

  it('generates a token once when it can read the cluster, and keeps it on the next render', async () => {
    const render = async () => {
      const result = await helmTemplate([
        '--set',
        'argocd.plugin.enabled=true',
        '--dry-run=server',
        '--kubeconfig',
        kubeconfigFile,
      ]);
      expect(result.stderr).toBe('');
      return parseYamlDocuments(result.stdout).filter(
        (o): o is KubernetesObject & { data: { token: string } } => (o as KubernetesObject).kind === 'Secret',
      );
    };
    const tokens = (secrets: { data: { token: string } }[]) =>
      secrets.map((s) => Buffer.from(s.data.token, 'base64').toString());
    const first = await render();
    const second = await render(); // nothing applied yet: a new token each time
    await plane.hub.apply(first);
    const afterInstall = await render();
    expect({
      where: first.map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`),
      length: tokens(first).map((t) => t.length),
      sameInBoth: new Set(tokens(first)).size,
      regeneratedBeforeInstall: tokens(second)[0] !== tokens(first)[0],
      keptAfterInstall: tokens(afterInstall),
    }).toEqual({
      where: [`${ARGOCD}/mco-argocd-plugin-token`, `${RELEASE_NAMESPACE}/mco-argocd-plugin-token`],
      length: [48, 48],
      sameInBoth: 1,
      regeneratedBeforeInstall: true,
      keptAfterInstall: tokens(first),
    });
  });

  it("an optional NetworkPolicy admits only the ApplicationSet controller, mco's refresher (its readiness probe) and, when selected, Prometheus", async () => {
    const policy = (values: Record<string, string>) =>
      renderChart({ ...ALL_ON, 'argocd.plugin.networkPolicy.enabled': 'true', ...values }).filter(
        (o) => o.kind === 'NetworkPolicy',
      );
    const withPrometheus = policy({
      'argocd.plugin.networkPolicy.prometheus.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name':
        'monitoring',
      'argocd.plugin.networkPolicy.prometheus.podSelector.matchLabels.app': 'prometheus',
    });
    // The API server accepts it as rendered.
    await plane.hub.apply(withPrometheus);
    expect({
      off: renderChart(ALL_ON).filter((o) => o.kind === 'NetworkPolicy').length,
      default: (policy({})[0] as unknown as { spec: unknown }).spec,
      prometheusFrom: (withPrometheus[0] as unknown as { spec: { ingress: { from: unknown[] }[] } }).spec.ingress[0]!
        .from[1],
    }).toEqual({
      off: 0,
      default: {
        podSelector: {
          matchLabels: {
            'app.kubernetes.io/name': 'mco',
            'app.kubernetes.io/instance': 'mco',
            'app.kubernetes.io/component': 'argocd-plugin',
          },
        },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ARGOCD } },
                podSelector: { matchLabels: { 'app.kubernetes.io/name': 'argocd-applicationset-controller' } },
              },
              {
                podSelector: {
                  matchLabels: {
                    'app.kubernetes.io/name': 'mco',
                    'app.kubernetes.io/instance': 'mco',
                    'app.kubernetes.io/component': 'argocd-applicationset-refresher',
                  },
                },
              },
            ],
            ports: [{ port: 'http', protocol: 'TCP' }],
          },
        ],
      },
      prometheusFrom: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
        podSelector: { matchLabels: { app: 'prometheus' } },
      },
    });
  });
});
