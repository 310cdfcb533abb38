import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { CoreV1Api } from '@kubernetes/client-node';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KUBECONFIG_SECRET_ANNOTATION, createClusterAccess } from '../src/index.js';
import { credentialScript, pluginDir } from './plugin-scripts.js';

describeWithControlPlane('cluster access against real kube-apiservers', () => {
  let cp: ControlPlane;
  const kubeconfig = (token: string) =>
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'm',
      contexts: [{ name: 'm', context: { cluster: 'm', user: 'u' } }],
      clusters: [
        {
          name: 'm',
          cluster: { server: cp.members.east!.server, 'certificate-authority-data': cp.members.east!.caData },
        },
      ],
      users: [{ name: 'u', user: { token } }],
    });

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['east'] });
    await cp.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'fleet' } }]);
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: 'fleet',
        body: {
          metadata: { name: 'east-kubeconfig' },
          stringData: { kubeconfig: kubeconfig(cp.members.east!.token('plugin')) },
        },
      });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  const secretProfile = () => {
    const p = aClusterProfile('fleet/east');
    return {
      ...p,
      metadata: { ...p.metadata, annotations: { [KUBECONFIG_SECRET_ANNOTATION]: 'east-kubeconfig' } },
    } as ClusterProfile;
  };

  /** Access through a credential plugin printing the east member's admin token (loopback and its port named in allowedServers). */
  const execAccess = (options: { qps?: number; burst?: number } = {}) => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: cp.members.east!.token('admin') });
    const access = createClusterAccess({
      providers: [
        {
          name: 'p',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command },
          allowedServers: [cp.members.east!.server],
        },
      ],
      ...options,
    });
    return { dir, access };
  };

  it('reads a kubeconfig Secret from the hub, and picks up a rotated token on the next read', async () => {
    const access = createClusterAccess({
      providers: [],
      hub: cp.hub.connectionFor('admin'),
      // The test members listen on loopback, which is reached only when named (with the port).
      kubeconfigSecrets: { allowedServers: [cp.members.east!.server] },
      secretRefreshMs: 0,
    });
    const before = await access.accessFor(secretProfile());
    const version = await (await access.clientFor(secretProfile())).client.get<{ major: string }>('/version');
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .replaceNamespacedSecret({
        name: 'east-kubeconfig',
        namespace: 'fleet',
        body: {
          metadata: { name: 'east-kubeconfig' },
          stringData: { kubeconfig: kubeconfig(cp.members.east!.token('provider')) },
        },
      });
    const after = await access.accessFor(secretProfile());
    expect({
      provider: before.provider,
      server: before.server,
      caData: before.caData,
      tokens: [await before.getToken(), await after.getToken()],
      major: version.major,
    }).toEqual({
      provider: 'kubeconfig-secret',
      server: cp.members.east!.server,
      caData: cp.members.east!.caData,
      tokens: [cp.members.east!.token('plugin'), cp.members.east!.token('provider')],
      major: '1',
    });
  });

  it('refuses a kubeconfig Secret when no kubeconfigSecrets bound is configured', async () => {
    const access = createClusterAccess({ providers: [], hub: cp.hub.connectionFor('admin') });
    await expect(access.accessFor(secretProfile())).rejects.toMatchObject({
      code: 'Invalid',
      message: `ClusterProfile fleet/east: kubeconfig Secret: cluster.server "${cp.members.east!.server}" is refused: kubeconfig Secret has no allowedServers (kubeconfigSecrets in the provider file); list the servers its credentials may go to, or set allowAnyServer: true`,
    });
  });

  it("refuses the hub's own endpoints as its default/kubernetes Service and EndpointSlice list them (address and port, also through a name), and reaches a member", async () => {
    // The API server publishes its advertise address and port in this EndpointSlice; a loopback one (the test
    // hub's) is neither published nor accepted there, so the test writes what a hub on a routable address has.
    await cp.hub.apply([
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['192.0.2.10'], conditions: { ready: true } }],
        ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
      } as never,
    ]);
    const dir = pluginDir();
    const command = credentialScript(dir, { token: cp.members.east!.token('admin') });
    const access = createClusterAccess({
      providers: [
        {
          name: 'p',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command },
          allowedServers: [
            'https://10.0.0.1',
            'https://192.0.2.10:6443',
            'https://192.0.2.10:7443',
            'https://hub.example:6443',
            cp.members.east!.server,
          ],
        },
      ],
      hub: cp.hub.connectionFor('admin'),
      lookup: async (host) => (host === 'hub.example' ? [{ address: '192.0.2.10' }] : []),
    });
    const profile = (name: string, server: string) =>
      ({
        ...aClusterProfile(`fleet/${name}`),
        status: {
          accessProviders: [{ name: 'p', cluster: { server, 'certificate-authority-data': cp.members.east!.caData } }],
        },
      }) as ClusterProfile;
    const outcome = (server: string) =>
      access.accessFor(profile('x', server)).then(
        () => 'accepted',
        (e: unknown) => (e as Error).message.replace(/^.*is refused: /, ''),
      );
    expect({
      serviceClusterIP: await outcome('https://10.0.0.1'),
      endpoint: await outcome('https://192.0.2.10:6443'),
      endpointByName: await outcome('https://hub.example:6443'),
      sameAddressOtherPort: await outcome('https://192.0.2.10:7443'),
      pluginRuns: dir.calls(),
    }).toEqual({
      serviceClusterIP: "it is the hub's own API server",
      endpoint: "it is the hub's own API server",
      endpointByName: "its host resolves to 192.0.2.10, which is the hub's own API server",
      sameAddressOtherPort: 'accepted',
      pluginRuns: 0,
    });
    const member = await access.clientFor(profile('east', cp.members.east!.server));
    expect(await member.client.get<{ major: string }>('/version')).toMatchObject({ major: '1' });
  });

  /** A TCP server standing in for the hub's API server on `host`, counting the connections it gets; undefined without that family. */
  const standInHub = async (host: string) => {
    const server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    let connections = 0;
    try {
      server.listen(0, host);
      await once(server, 'listening');
    } catch {
      return undefined;
    }
    return {
      port: (server.address() as AddressInfo).port,
      connections: () => connections,
      close: () => new Promise((resolve) => server.close(resolve)),
    };
  };

  it.each([
    {
      family: 'IPv4',
      listen: '127.0.0.1',
      hub: (port: number) => `https://127.0.0.1:${port}`,
      spellings: [
        '[::ffff:127.0.0.1]',
        '[::ffff:7f00:1]',
        '[::127.0.0.1]',
        '[0:0:0:0:0:ffff:7f00:0001]',
        '2130706433',
        '0x7f000001',
        '0x7f.1',
        '127.000.000.001',
        'localhost',
      ],
    },
    {
      family: 'IPv6',
      listen: '::1',
      hub: (port: number) => `https://[::1]:${port}`,
      spellings: ['[0:0:0:0:0:0:0:1]', '[0000::0001]'],
    },
  ])(
    "never connects to the hub's URL ($family loopback) spelt another way or through a name that resolves to it at connect time",
    async ({ listen, hub, spellings }) => {
      const standIn = await standInHub(listen);
      if (!standIn) {
        console.log(`no ${listen} on this machine: skipped`);
        return;
      }
      const dir = pluginDir();
      const command = credentialScript(dir, { token: 'member-token' });
      const servers = spellings.map((host) => `https://${host}:${standIn.port}`);
      const access = createClusterAccess({
        providers: [
          {
            name: 'p',
            execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command },
            // Named exactly, so the loopback rule lets them through: only "never the hub" stands in the way.
            allowedServers: servers,
          },
        ],
        hub: cp.hub.connectionFor('admin'),
        hubServer: hub(standIn.port),
        // When the profile is checked, the name resolves elsewhere; the connection's own lookup finds the hub.
        lookup: async () => [{ address: '203.0.113.9' }],
      });
      const outcome = async (server: string) => {
        try {
          const profile = {
            ...aClusterProfile('fleet/m'),
            status: { accessProviders: [{ name: 'p', cluster: { server } }] },
          } as ClusterProfile;
          await (await access.clientFor(profile)).client.get('/version');
          return 'reached';
        } catch (error) {
          const message = (error as Error).message;
          return /is refused: it is the hub's own API server$|refused: \S+ port \d+ is the hub's own API server$/.test(
            message,
          )
            ? 'refused as the hub'
            : message;
        }
      };
      const outcomes: Record<string, string> = {};
      for (const server of servers) outcomes[server] = await outcome(server);
      await standIn.close();
      expect({ outcomes, connections: standIn.connections() }).toEqual({
        outcomes: Object.fromEntries(servers.map((server) => [server, 'refused as the hub'])),
        connections: 0,
      });
    },
  );

  it('reports a Secret that is missing, naming the profile and the Secret', async () => {
    const access = createClusterAccess({ providers: [], hub: cp.hub.connectionFor('admin') });
    const p = secretProfile();
    p.metadata.annotations![KUBECONFIG_SECRET_ANNOTATION] = 'nope';
    await expect(access.accessFor(p)).rejects.toMatchObject({
      code: 'NotFound',
      message: expect.stringMatching(/^ClusterProfile fleet\/east: reading kubeconfig Secret fleet\/nope: /),
    });
  });

  it('gives each member cluster its own client, authenticated with the plugin token', async () => {
    const { access } = execAccess();
    // Two profiles for one member (no peers given, so no duplicate check): one client each.
    const profile = (name: string) =>
      ({
        ...aClusterProfile(`fleet/${name}`),
        status: {
          accessProviders: [
            {
              name: 'p',
              cluster: { server: `${cp.members.east!.server}/`, 'certificate-authority-data': cp.members.east!.caData },
            },
          ],
        },
      }) as ClusterProfile;
    const [a, b] = [await access.clientFor(profile('a')), await access.clientFor(profile('b'))];
    const namespaces = async (c: typeof a) =>
      (await c.client.get<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces')).items.some(
        (n) => n.metadata.name === 'default',
      );
    expect({
      clusters: [a.cluster, b.cluster],
      distinct: a.client !== b.client,
      answered: [await namespaces(a), await namespaces(b)],
    }).toEqual({ clusters: ['fleet/a', 'fleet/b'], distinct: true, answered: [true, true] });
  });

  it('talks to a member with an exec-plugin token and holds each cluster to its own QPS', async () => {
    const { dir, access } = execAccess({
      qps: 20,
      burst: 1,
    });
    const profile = {
      ...aClusterProfile('fleet/east'),
      status: {
        accessProviders: [
          {
            name: 'p',
            cluster: { server: cp.members.east!.server, 'certificate-authority-data': cp.members.east!.caData },
          },
        ],
      },
    } as ClusterProfile;
    const { client } = await access.clientFor(profile);
    const started = performance.now();
    const lists = await Promise.all(Array.from({ length: 11 }, () => client.get('/api/v1/namespaces')));
    const elapsed = performance.now() - started;
    console.log(`11 requests at qps 20, burst 1: ${Math.round(elapsed)} ms (at least 500 ms by the limiter)`);
    expect({ answered: lists.length, pluginRuns: dir.calls(), limited: elapsed >= 480 }).toEqual({
      answered: 11,
      pluginRuns: 1,
      limited: true,
    });
  });
});
