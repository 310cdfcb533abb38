import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { silentLogger } from '@mco/runtime';
import { describeWithControlPlane, thirdPartyCrd, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadHub } from '../src/cli.js';
import { main } from '../src/main.js';
import { ensureLeaseNamespace } from '../src/preflight.js';

const dir = mkdtempSync(join(tmpdir(), 'mco-errors-'));
function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}
const tokenFile = file('token', 'a-token');
const fluxTemplates = file('flux-templates.yaml', 'templates: []\n');
const providerFile = file(
  'access-providers.yaml',
  'providers: [{name: p, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}, allowedServers: [https://member.example]}]',
);

async function mco(...argv: string[]) {
  let stderr = '';
  const code = await main(argv, { stdout: () => {}, stderr: (t) => void (stderr += t) });
  return { code, stderr };
}

/** What a user sees: the exit code, and stderr as exactly one line (no stack trace). */
function oneLine(result: { code: number; stderr: string }) {
  return { code: result.code, lines: result.stderr.trimEnd().split('\n').length, stderr: result.stderr.trimEnd() };
}

describe('integer flags, read alike by every command', () => {
  const sync = ['--sync-cluster-secrets'];
  const token = ['--token-file', tokenFile];
  it.each([
    { command: 'argocd-sync', flag: '--secret-sync-concurrency', value: '0', range: 'of at least 1', before: sync },
    { command: 'argocd-sync', flag: '--secret-sync-concurrency', value: '2.5', range: 'of at least 1', before: sync },
    { command: 'argocd-sync', flag: '--secret-sync-concurrency', value: 'many', range: 'of at least 1', before: sync },
    { command: 'argocd-plugin', flag: '--max-body-bytes', value: '1e6', range: 'of at least 1024', before: token },
    { command: 'argocd-plugin', flag: '--max-body-bytes', value: '1023', range: 'of at least 1024', before: token },
    { command: 'configsync', flag: '--workers', value: '0', range: 'of at least 1', before: [] },
    { command: 'configsync', flag: '--member-timeout', value: '0x10', range: 'of at least 1', before: [] },
    { command: 'flux', flag: '--secret-hold-timeout', value: '1h', range: 'of at least 0', before: [] },
    { command: 'flux', flag: '--secret-hold-timeout', value: ' 60', range: 'of at least 0', before: [] },
    { command: 'simulate', flag: '--seed', value: '4294967296', range: 'from 0 to 4294967295', before: ['x.yaml'] },
    { command: 'demo', flag: '--seeds', value: '101', range: 'from 1 to 100', before: [] },
  ])('mco $command $flag $value is one line naming the flag, the range and the text, exit 2', async (c) => {
    expect(oneLine(await mco(c.command, ...c.before, c.flag, c.value))).toEqual({
      code: 2,
      lines: 1,
      stderr: `mco ${c.command}: ${c.flag}: expected an integer ${c.range}, got ${JSON.stringify(c.value)}`,
    });
  });
});

describe('kubeconfig lookup, the same for every command', () => {
  const home = mkdtempSync(join(tmpdir(), 'mco-home-'));
  const noKubeconfig = { HOME: home };

  it('names every place it looked at when there is no kubeconfig at all', () => {
    expect(() => loadHub(undefined, undefined, noKubeconfig)).toThrow(
      `no kubeconfig found: pass --kubeconfig <path>, set KUBECONFIG, or create ${home}/.kube/config (in a pod, the service account is used)`,
    );
  });

  it('takes --kubeconfig over KUBECONFIG, and KUBECONFIG over ~/.kube/config', () => {
    const config = (server: string) =>
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`;
    const flag = file('flag.kubeconfig', config('https://flag.example'));
    const env = file('env.kubeconfig', config('https://env.example'));
    const withHome = mkdtempSync(join(tmpdir(), 'mco-home-'));
    mkdirSync(join(withHome, '.kube'));
    writeFileSync(join(withHome, '.kube', 'config'), config('https://home.example'));
    const server = (path: string | undefined, vars: NodeJS.ProcessEnv) => loadHub(path, undefined, vars).server;
    expect([
      server(flag, { HOME: withHome, KUBECONFIG: env }),
      server(undefined, { HOME: withHome, KUBECONFIG: env }),
      server(undefined, { HOME: withHome }),
    ]).toEqual(['https://flag.example', 'https://env.example', 'https://home.example']);
  });

  it.each([
    ['controller', ['controller']],
    ['argocd-plugin', ['argocd-plugin', '--token-file', tokenFile]],
    ['argocd-sync', ['argocd-sync', '--refresh-applicationsets']],
    ['clusters list', ['clusters', 'list']],
    [
      'inventory',
      ['inventory', '--config', file('providers.yaml', 'providers: [{name: a, plugin: manual, config: {file: x}}]')],
    ],
  ])('mco %s without any kubeconfig exits 2 with one line', async (_name, argv) => {
    vi.stubEnv('HOME', home);
    vi.stubEnv('KUBECONFIG', '');
    vi.stubEnv('KUBERNETES_SERVICE_HOST', '');
    try {
      const result = oneLine(await mco(...argv));
      expect(result).toEqual({
        code: 2,
        lines: 1,
        stderr: `mco ${argv[0]}: no kubeconfig found: pass --kubeconfig <path>, set KUBECONFIG, or create ${home}/.kube/config (in a pod, the service account is used)`,
      });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it.each([
    [['argocd-sync'], 'nothing to do: give --refresh-applicationsets and/or --sync-cluster-secrets'],
    [
      ['argocd-sync', '--sync-cluster-secrets'],
      '--sync-cluster-secrets needs --provider-file <path> (how to obtain credentials)',
    ],
    [
      ['argocd-sync', '--refresh-applicationsets', '--applicationset-namespace=a', '--all-applicationset-namespaces'],
      '--applicationset-namespace and --all-applicationset-namespaces exclude each other',
    ],
    [
      ['argocd-sync', '--refresh-applicationsets', '--plugin-url', 'mco-argocd-plugin:4355'],
      '--plugin-url must be http(s)://host:port, got "mco-argocd-plugin:4355"',
    ],
    [
      ['argocd-sync', '--sync-cluster-secrets', '--provider-file', 'p.yaml', '--plugin-url', 'http://plugin:4355'],
      '--plugin-url needs --refresh-applicationsets',
    ],
    [
      ['argocd-plugin', '--token-file', tokenFile, '--sync-cluster-secrets'],
      '--sync-cluster-secrets moved to `mco argocd-sync`: the plugin serves HTTP and only reads',
    ],
    [
      ['argocd-plugin', '--token-file', tokenFile, '--applicationset-namespace=argocd'],
      '--applicationset-namespace moved to `mco argocd-sync`: the plugin serves HTTP and only reads',
    ],
    ...['argocd-plugin', 'argocd-sync', 'flux', 'configsync'].map((command) => [
      [
        command,
        ...(command === 'argocd-plugin' ? ['--token-file', tokenFile] : []),
        ...(command === 'argocd-sync' ? ['--refresh-applicationsets'] : []),
        ...(command === 'flux' ? ['--provider-file', providerFile, '--input-providers'] : []),
        '--cluster-profile-namespaces=fleet,Team_B',
      ],
      '--cluster-profile-namespaces: "Team_B" is not a namespace name (DNS-1123 label)',
    ]),
    [
      ['configsync', '--root-sync-namespaces=Team_B'],
      '--root-sync-namespaces: "Team_B" is not a namespace name (DNS-1123 label)',
    ],
    [
      ['configsync', '--allowed-role-refs=ClusterRole/edit,cluster-admin'],
      '--allowed-role-refs: "cluster-admin" is not Role/<name> or ClusterRole/<name>',
    ],
    [
      ['controller', '--cluster-profile-namespaces=../x'],
      '--cluster-profile-namespaces (MCO_CLUSTER_PROFILE_NAMESPACES): "../x" is not a namespace name (DNS-1123 label)',
    ],
    [
      ['clusters', 'confirm-removal', '-n', 'team-a'],
      'confirm-removal confirms for the whole fleet and takes no -n; --controller-namespace names where the confirmation is written',
    ],
  ])('mco %j is a usage error in one line, before any API call', async (argv, why) => {
    expect(oneLine(await mco(...argv))).toEqual({ code: 2, lines: 1, stderr: `mco ${argv[0]}: ${why}` });
  });

  it('an unreachable API server is one line naming it, exit 2 at start-up', async () => {
    const unreachable = file(
      'unreachable.kubeconfig',
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const results = [
      oneLine(await mco('controller', '--kubeconfig', unreachable)),
      oneLine(await mco('argocd-plugin', '--token-file', tokenFile, '--kubeconfig', unreachable)),
    ];
    const why =
      'cannot list multikubernetesclusterplacements.orchestra.multicluster.x-k8s.io: cannot reach the Kubernetes API at https://127.0.0.1:1 (ECONNREFUSED): check that the cluster runs and that the kubeconfig points at it';
    expect(results).toEqual([
      { code: 2, lines: 1, stderr: `mco controller: ${why}` },
      { code: 2, lines: 1, stderr: `mco argocd-plugin: ${why}` },
    ]);
  });
});

describeWithControlPlane('start-up errors on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let admin: string;
  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      thirdPartyCrd('multicluster.x-k8s.io_placementdecisions.yaml'),
      new URL('../chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url)
        .pathname,
    ]);
    admin = file('admin.kubeconfig', cp.hub.adminKubeConfig().exportConfig());
  });
  afterAll(async () => cp?.stop());

  it('mco clusters apply into a missing namespace says which and how to create it', async () => {
    const clusters = file('clusters.yaml', 'clusters:\n  - {name: eu-1, server: "https://eu-1.example:6443"}\n');
    const result = oneLine(await mco('clusters', 'apply', '-f', clusters, '--kubeconfig', admin, '-n', 'no-such-ns'));
    expect(result.lines).toBe(1);
    expect(result.stderr).toContain(
      'namespace "no-such-ns" not found: create it (kubectl create namespace no-such-ns) or choose another namespace',
    );
    expect(result.stderr).not.toMatch(/HTTP-Code|Unknown API Status Code|\n\s+at /);
    expect(result.code).toBe(1); // a failed write, not a bad command line
  });

  it('mco flux without a required Flux CRD is one line saying what to install, exit 2', async () => {
    const flux = ['flux', '--provider-file', providerFile, '--kubeconfig', admin];
    expect([
      oneLine(await mco(...flux, '--templates', fluxTemplates)),
      oneLine(await mco(...flux, '--input-providers')),
    ]).toEqual([
      {
        code: 2,
        lines: 1,
        stderr:
          'mco flux: cannot list kustomizations.kustomize.toolkit.fluxcd.io in flux-system: ' +
          'its CRD is not installed: install Flux (kustomize-controller) first',
      },
      {
        code: 2,
        lines: 1,
        stderr:
          'mco flux: cannot list kustomizations.kustomize.toolkit.fluxcd.io in flux-system: ' +
          'its CRD is not installed: install Flux (kustomize-controller) first',
      },
    ]);
    await cp.hub.installCrds([thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml')]);
    expect(oneLine(await mco(...flux, '--input-providers'))).toEqual({
      code: 2,
      lines: 1,
      stderr:
        'mco flux: cannot list resourcesetinputproviders.fluxcd.controlplane.io in flux-system: ' +
        'its CRD is not installed: install the Flux Operator first, or drop --input-providers',
    });
  });

  it('missing RBAC is one line naming the permission, exit 2', async () => {
    const denied = file('plugin.kubeconfig', cp.hub.kubeConfigFor('plugin').exportConfig());
    expect(oneLine(await mco('argocd-plugin', '--token-file', tokenFile, '--kubeconfig', denied))).toEqual({
      code: 2,
      lines: 1,
      stderr:
        'mco argocd-plugin: cannot list multikubernetesclusterplacements.orchestra.multicluster.x-k8s.io: ' +
        'multikubernetesclusterplacements.orchestra.multicluster.x-k8s.io is forbidden: User "plugin" cannot list resource ' +
        '"multikubernetesclusterplacements" in API group "orchestra.multicluster.x-k8s.io" at the cluster scope: ' +
        "grant this permission (the chart's RBAC lists what mco needs) or use another kubeconfig",
    });
  });

  it('with --cluster-profile-namespaces, missing read access in one of them is one line naming that namespace, exit 2', async () => {
    const rbac = 'rbac.authorization.k8s.io/v1';
    const readProfiles = {
      apiGroups: ['multicluster.x-k8s.io'],
      resources: ['clusterprofiles'],
      verbs: ['list', 'watch'],
    };
    await cp.hub.apply([
      ...['fleet', 'team-a'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      {
        apiVersion: rbac,
        kind: 'ClusterRole',
        metadata: { name: 'scoped-reader' },
        rules: [
          {
            apiGroups: ['orchestra.multicluster.x-k8s.io'],
            resources: ['multikubernetesclusterplacements'],
            verbs: ['list', 'watch'],
          },
        ],
      },
      {
        apiVersion: rbac,
        kind: 'ClusterRoleBinding',
        metadata: { name: 'scoped-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'scoped-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
      },
      { apiVersion: rbac, kind: 'Role', metadata: { name: 'profiles', namespace: 'fleet' }, rules: [readProfiles] },
      {
        apiVersion: rbac,
        kind: 'RoleBinding',
        metadata: { name: 'profiles', namespace: 'fleet' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'profiles' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
      },
    ] as KubernetesObject[]);
    const scoped = file('scoped.kubeconfig', cp.hub.kubeConfigFor('controller').exportConfig());
    const args = ['--token-file', tokenFile, '--kubeconfig', scoped];
    expect(oneLine(await mco('argocd-plugin', ...args, '--cluster-profile-namespaces=fleet,team-a'))).toEqual({
      code: 2,
      lines: 1,
      stderr:
        'mco argocd-plugin: cannot list clusterprofiles.multicluster.x-k8s.io in team-a: ' +
        'clusterprofiles.multicluster.x-k8s.io is forbidden: User "controller" cannot list resource ' +
        '"clusterprofiles" in API group "multicluster.x-k8s.io" in the namespace "team-a": ' +
        "grant this permission (the chart's RBAC lists what mco needs) or use another kubeconfig",
    });
  });

  it.each([
    ['argocd-plugin', '--listen', ['--token-file', tokenFile]],
    ['argocd-plugin', '--http-address', ['--token-file', tokenFile]],
    ['controller', '--listen', ['--leader-elect', 'false']],
    ['controller', '--http-address', ['--leader-elect', 'false']],
  ])(
    'mco %s %s on a port in use is one line naming the address, exit 2, no stack trace',
    async (command, flag, args) => {
      const taken: Server = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as { port: number }).port;
      try {
        expect(oneLine(await mco(command, ...args, '--kubeconfig', admin, flag, `127.0.0.1:${port}`))).toEqual({
          code: 2,
          lines: 1,
          stderr: `mco ${command}: cannot listen on 127.0.0.1:${port}: the address is already in use; choose another address with --listen`,
        });
      } finally {
        taken.close();
      }
    },
  );

  it('the leader Lease namespace is created when missing, or its absence is one clear start-up error', async () => {
    await ensureLeaseNamespace(cp.hub.connectionFor('admin'), 'lease-created', 'mco-controller', silentLogger);
    const created = await cp.hub.adminKubeConfig().makeApiClient(CoreV1Api).readNamespace({ name: 'lease-created' });
    // A user that may write Leases but not create namespaces (like the chart's ServiceAccount).
    const rbac = cp.hub.adminKubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'leases-only' },
        rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'leases-only' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'leases-only' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'provider' }],
      },
    });
    await expect(
      ensureLeaseNamespace(cp.hub.connectionFor('provider'), 'lease-missing', 'mco-controller', silentLogger),
    ).rejects.toThrow(
      'the leader Lease namespace "lease-missing" does not exist and cannot be created (namespaces is forbidden: User "provider" cannot create resource "namespaces" in API group "" at the cluster scope: ' +
        "grant this permission (the chart's RBAC lists what mco needs) or use another kubeconfig): " +
        'create it (kubectl create namespace lease-missing), or choose one with --leader-election-namespace',
    );
    expect(created.metadata?.name).toBe('lease-created');
  });
});
