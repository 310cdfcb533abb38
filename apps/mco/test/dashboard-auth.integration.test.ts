import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_GROUP_HEADERS, DEFAULT_USERNAME_HEADERS } from '../src/dashboard/auth.js';
import { startDashboard, type Dashboard } from '../src/dashboard/index.js';
import { MAX_EVENT_MESSAGE } from '../src/dashboard/model.js';
import type { View } from '../src/dashboard/view.js';
// The controller's integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { describeWithHub } from '../../../packages/controller/test/support.js';
import { useControllerHub } from '../../../packages/controller/test/support-controller.js';
import { httpRead, testCA, tlsRead } from './dashboard-tls.js';

// `mco dashboard` against a real kube-apiserver (real SubjectAccessReviews,
// real Events), reached over real TLS with client certificates made by openssl.
describeWithHub('mco dashboard on a real kube-apiserver: the proxy proves itself, and what it keeps is bounded', () => {
  const env = useControllerHub({ users: { 'tenant-a': [] } });
  const dashboards: Dashboard[] = [];
  const serving = testCA('serving');
  const servingPem = serving.server();
  const proxyCA = testCA('front-proxy');
  const proxyClient = proxyCA.client('front-proxy-client');

  beforeAll(async () => {
    const { fleet, hub } = env;
    for (const ns of ['fleet', 'team-a', 'team-b']) await fleet.namespace(ns);
    await fleet.createPlacement('team-a', 'web', {});
    await fleet.createPlacement('team-b', 'api', {});
    // tenant-a may list placements and Events in team-a only.
    const rbac: object[] = [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'placement-viewer', namespace: 'team-a' },
        rules: [
          {
            apiGroups: ['orchestra.multicluster.x-k8s.io'],
            resources: ['multikubernetesclusterplacements'],
            verbs: ['list'],
          },
          { apiGroups: [''], resources: ['events'], verbs: ['list'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'tenant-a', namespace: 'team-a' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'placement-viewer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'tenant-a' }],
      },
    ];
    await hub.plane.hub.apply(rbac as Parameters<typeof hub.plane.hub.apply>[0]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(dashboards.map((d) => d.close()));
  });

  async function start(options: Partial<Parameters<typeof startDashboard>[0]> = {}) {
    const dashboard = await startDashboard({
      hub: connectionFromKubeConfig(env.hub.admin),
      host: '127.0.0.1',
      port: 0,
      auth: 'none',
      ...options,
    });
    dashboards.push(dashboard);
    return dashboard;
  }

  it("--auth proxy: X-Remote-User and X-Remote-Group count only from a client with the proxy CA's certificate; system:masters from anyone else sees nothing", async () => {
    const dashboard = await start({
      auth: 'proxy',
      tls: { cert: servingPem.cert, key: servingPem.key },
      proxy: {
        clientCA: proxyCA.cert,
        allowedNames: ['front-proxy-client'],
        usernameHeaders: DEFAULT_USERNAME_HEADERS,
        groupHeaders: DEFAULT_GROUP_HEADERS,
      },
    });
    expect(dashboard.url).toMatch(/^https:/);
    const stream = `${dashboard.url}api/stream`;
    const masters = { 'X-Remote-User': 'mallory', 'X-Remote-Group': 'system:masters' };
    const placements = (answer: { view?: unknown }) => (answer.view as View | undefined)?.placements.map((p) => p.key);
    // Wait until the dashboard has listed both placements, as the proxy sees it.
    await expect
      .poll(
        async () => placements(await tlsRead(stream, { ca: serving.cert, client: proxyClient, headers: masters })),
        {
          timeout: 20_000,
        },
      )
      .toEqual(['team-a/web', 'team-b/api']);

    const other = testCA('other');
    const refused = {
      'no certificate': await tlsRead(stream, { ca: serving.cert, headers: masters }),
      "another CA's certificate with the proxy's name": await tlsRead(stream, {
        ca: serving.cert,
        client: other.client('front-proxy-client'),
        headers: masters,
      }),
      "the proxy CA's certificate with another name": await tlsRead(stream, {
        ca: serving.cert,
        client: proxyCA.client('not-the-proxy'),
        headers: masters,
      }),
    };
    expect(Object.fromEntries(Object.entries(refused).map(([k, v]) => [k, [v.status, placements(v)]]))).toEqual({
      'no certificate': [401, undefined],
      "another CA's certificate with the proxy's name": [401, undefined],
      "the proxy CA's certificate with another name": [401, undefined],
    });
    // Through the proxy, each identity sees what its own RBAC allows (real SubjectAccessReviews).
    const tenant = await tlsRead(stream, {
      ca: serving.cert,
      client: proxyClient,
      headers: { 'X-Remote-User': 'tenant-a' },
    });
    expect({ status: tenant.status, placements: placements(tenant) }).toEqual({
      status: 200,
      placements: ['team-a/web'],
    });
  }, 60_000);

  it('keeps placement Events bounded: a 1 MB Event is cut, and past the bound the oldest received go', async () => {
    const dashboard = await start({ bounds: { maxEvents: 5 } });
    const event = (name: string, message: string, second: number) =>
      env.hub.core.createNamespacedEvent({
        namespace: 'team-a',
        body: {
          metadata: { name, namespace: 'team-a' },
          involvedObject: {
            apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
            kind: 'MultiKubernetesClusterPlacement',
            namespace: 'team-a',
            name: 'web',
          },
          type: 'Warning',
          reason: name,
          message,
          lastTimestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + second * 1000),
          count: 1,
          source: { component: 'flood' },
        },
      });
    const events = async () => {
      const { view } = await httpRead(`${dashboard.url}api/stream?placement=team-a/web`);
      return (view as View).placement?.events ?? [];
    };
    await event('big', 'x'.repeat(1024 * 1024), 0);
    await expect.poll(async () => (await events()).map((e) => e.reason), { timeout: 20_000 }).toEqual(['big']);
    expect((await events())[0]!.message).toBe(`${'x'.repeat(MAX_EVENT_MESSAGE)}…`);
    for (let i = 1; i <= 8; i++) await event(`e${i}`, `small ${i}`, i);
    await expect
      .poll(async () => (await events()).map((e) => e.reason), { timeout: 20_000 })
      .toEqual(['e8', 'e7', 'e6', 'e5', 'e4']);
  }, 60_000);
});
