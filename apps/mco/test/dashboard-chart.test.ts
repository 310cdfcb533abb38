import { describeWithControlPlane, helmTemplate, renderChart } from '@mco/testkit';
import { expect, it } from 'vitest';

describeWithControlPlane("the chart's dashboard", { tools: ['helm'] }, () => {
  it('is off by default', () => {
    expect(renderChart({}).filter((o) => o.metadata?.name?.endsWith('-dashboard'))).toEqual([]);
  });

  const PROXY = {
    'dashboard.enabled': 'true',
    'dashboard.auth': 'proxy',
    'dashboard.tlsSecret': 'dashboard-tls',
    'dashboard.proxy.clientCASecret': 'front-proxy-ca',
    'dashboard.proxy.allowedNames[0]': 'front-proxy-client',
  };
  const dashboardObjects = (values: Record<string, string>) =>
    renderChart(values).filter((o) => o.metadata?.name?.endsWith('-dashboard'));
  type Deployment = {
    spec: {
      template: {
        spec: {
          serviceAccountName: string;
          containers: {
            args: string[];
            readinessProbe: { httpGet: { scheme: string } };
            volumeMounts?: { name: string; mountPath: string }[];
          }[];
          volumes?: { name: string; secret: { secretName: string } }[];
        };
      };
    };
  };
  const deploymentOf = (objects: ReturnType<typeof dashboardObjects>) =>
    objects.find((o) => o.kind === 'Deployment') as unknown as Deployment;

  it('when enabled, runs `mco dashboard` as its own ServiceAccount that may only read, and review access', () => {
    const objects = dashboardObjects(PROXY);
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'NetworkPolicy',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    // The controller's Leases, read where they are: only there.
    expect(objects.find((o) => o.kind === 'Role')).toMatchObject({
      metadata: { namespace: 'kube-system' },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch'] }],
    });
    const role = objects.find((o) => o.kind === 'ClusterRole') as unknown as {
      rules: { resources: string[]; verbs: string[] }[];
    };
    const verbs = Object.fromEntries(role.rules.flatMap((r) => r.resources.map((res) => [res, r.verbs.join(',')])));
    expect(verbs).toEqual({
      clusterprofiles: 'get,list,watch',
      multikubernetesclusterplacements: 'get,list,watch',
      events: 'get,list,watch',
      applications: 'get,list,watch',
      applicationsets: 'get,list,watch',
      resourcesets: 'get,list,watch',
      kustomizations: 'get,list,watch',
      helmreleases: 'get,list,watch',
      selfsubjectreviews: 'create',
      subjectaccessreviews: 'create',
    });
    expect(deploymentOf(objects).spec.template.spec.serviceAccountName).toBe('mco-dashboard');
  });

  it('with auth proxy, serves https with the serving certificate, trusts the proxy CA it mounts, and admits only the proxy by NetworkPolicy', () => {
    const objects = dashboardObjects(PROXY);
    const pod = deploymentOf(objects).spec.template.spec;
    expect({
      args: pod.containers[0]!.args,
      probe: pod.containers[0]!.readinessProbe.httpGet.scheme,
      mounts: pod.containers[0]!.volumeMounts,
      volumes: pod.volumes,
    }).toEqual({
      args: [
        'dashboard',
        '--listen=0.0.0.0:8090',
        '--auth=proxy',
        '--log-level=info',
        '--controller-lease=kube-system/mco-controller',
        '--tls-cert-file=/etc/mco-dashboard/tls/tls.crt',
        '--tls-private-key-file=/etc/mco-dashboard/tls/tls.key',
        '--requestheader-client-ca-file=/etc/mco-dashboard/proxy-ca/ca.crt',
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
      ],
      probe: 'HTTPS',
      mounts: [
        { name: 'tls', mountPath: '/etc/mco-dashboard/tls', readOnly: true },
        { name: 'proxy-ca', mountPath: '/etc/mco-dashboard/proxy-ca', readOnly: true },
      ],
      volumes: [
        { name: 'tls', secret: { secretName: 'dashboard-tls' } },
        { name: 'proxy-ca', secret: { secretName: 'front-proxy-ca' } },
      ],
    });
    const policy = objects.find((o) => o.kind === 'NetworkPolicy') as unknown as { spec: unknown };
    expect(policy.spec).toEqual({
      podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'dashboard' }) as unknown },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'mco-dashboard-proxy' } } }],
          ports: [{ port: 'https', protocol: 'TCP' }],
        },
      ],
    });
    const custom = dashboardObjects({
      ...PROXY,
      'dashboard.networkPolicy.from[0].namespaceSelector.matchLabels.team': 'edge',
    }).find((o) => o.kind === 'NetworkPolicy') as unknown as { spec: { ingress: { from: unknown[] }[] } };
    expect(custom.spec.ingress[0]!.from).toEqual([{ namespaceSelector: { matchLabels: { team: 'edge' } } }]);
    expect(
      dashboardObjects({ ...PROXY, 'dashboard.networkPolicy.enabled': 'false' }).some(
        (o) => o.kind === 'NetworkPolicy',
      ),
    ).toBe(false);
  });

  it('with auth token, marks the session cookie Secure unless secureCookies is false, and needs no NetworkPolicy', () => {
    const args = (values: Record<string, string>) =>
      deploymentOf(dashboardObjects(values)).spec.template.spec.containers[0]!.args;
    expect({
      default: args({ 'dashboard.enabled': 'true' }),
      insecure: args({ 'dashboard.enabled': 'true', 'dashboard.secureCookies': 'false' }).at(-1),
      kinds: dashboardObjects({ 'dashboard.enabled': 'true' }).some((o) => o.kind === 'NetworkPolicy'),
    }).toEqual({
      default: [
        'dashboard',
        '--listen=0.0.0.0:8090',
        '--auth=token',
        '--log-level=info',
        '--controller-lease=kube-system/mco-controller',
      ],
      insecure: '--insecure-cookies',
      kinds: false,
    });
  });

  it('refuses auth proxy without the serving certificate and the proxy CA', async () => {
    const result = await helmTemplate(['--set', 'dashboard.enabled=true', '--set', 'dashboard.auth=proxy']);
    expect({
      code: result.code,
      named: result.stderr.includes(
        'dashboard.auth proxy needs dashboard.tlsSecret and dashboard.proxy.clientCASecret',
      ),
    }).toEqual({ code: 1, named: true });
  });

  it('refuses auth none: in the hub every viewer needs an identity of their own', async () => {
    const result = await helmTemplate(['--set', 'dashboard.enabled=true', '--set', 'dashboard.auth=none']);
    expect({ code: result.code, named: result.stderr.includes('dashboard.auth must be proxy or token') }).toEqual({
      code: 1,
      named: true,
    });
  });
});
