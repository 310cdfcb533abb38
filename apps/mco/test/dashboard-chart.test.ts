import { describeWithControlPlane, helmTemplate, renderChart } from '@mco/testkit';
import { expect, it } from 'vitest';

describeWithControlPlane("the chart's dashboard", { tools: ['helm'] }, () => {
  it('is off by default', () => {
    expect(renderChart({}).filter((o) => o.metadata?.name?.endsWith('-dashboard'))).toEqual([]);
  });

  it('when enabled, runs `mco dashboard` as its own ServiceAccount that may only read, and review access', () => {
    const objects = renderChart({ 'dashboard.enabled': 'true', 'dashboard.auth': 'proxy' }).filter((o) =>
      o.metadata?.name?.endsWith('-dashboard'),
    );
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Service',
      'ServiceAccount',
    ]);
    const role = objects.find((o) => o.kind === 'ClusterRole') as unknown as {
      rules: { resources: string[]; verbs: string[] }[];
    };
    const verbs = Object.fromEntries(role.rules.flatMap((r) => r.resources.map((res) => [res, r.verbs.join(',')])));
    expect(verbs).toEqual({
      clusterprofiles: 'get,list,watch',
      multikubernetesclusterplacements: 'get,list,watch',
      events: 'get,list,watch',
      applications: 'get,list,watch',
      kustomizations: 'get,list,watch',
      helmreleases: 'get,list,watch',
      selfsubjectreviews: 'create',
      subjectaccessreviews: 'create',
    });
    const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } };
    };
    expect(deployment.spec.template.spec.serviceAccountName).toBe('mco-dashboard');
    expect(deployment.spec.template.spec.containers[0]!.args).toEqual([
      'dashboard',
      '--listen=0.0.0.0:8090',
      '--auth=proxy',
      '--log-level=info',
    ]);
  });

  it('refuses auth none: in the hub every viewer needs an identity of their own', async () => {
    const result = await helmTemplate(['--set', 'dashboard.enabled=true', '--set', 'dashboard.auth=none']);
    expect({ code: result.code, named: result.stderr.includes('dashboard.auth must be proxy or token') }).toEqual({
      code: 1,
      named: true,
    });
  });
});
