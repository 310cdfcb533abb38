import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import { createLogger, type McoError } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import {
  checkClusterTrust,
  checkDuplicateServer,
  createClusterAccess,
  addressCheck,
  hubEndpointKey,
  normalizeAddress,
  normalizeServer,
  parseProviderFile,
  type ServerPolicy,
} from '../src/index.js';
import { credentialScript, pluginDir } from './plugin-scripts.js';

const context = {
  cluster: 'fleet/a',
  source: 'access provider "google"',
  hubServer: 'https://10.96.0.1:443',
  // The hub's default/kubernetes Service (10.0.0.1:443) and EndpointSlice (192.168.0.10:6443).
  hubEndpoints: new Set([hubEndpointKey('10.0.0.1', 443), hubEndpointKey('192.168.0.10', 6443)]),
};
const GATEWAY = 'https://connectgateway.googleapis.com/v1/projects/123/locations/global/gkeMemberships';
const refused = (field: string, why: string) => ({
  ok: false,
  field,
  error: `ClusterProfile fleet/a: access provider "google": ${field} ${why}`,
});

/** A refusal of the hub itself, marked so adapters remove what they wrote for the profile. */
const hubRefused = (why: string) => ({ ...refused('cluster.server', why), hub: true });

describe('checkClusterTrust', () => {
  it.each<{ name: string; cluster: Record<string, unknown>; policy: ServerPolicy; want: unknown }>([
    {
      name: 'refuses every server when the provider has neither allowedServers nor allowAnyServer',
      cluster: { server: 'https://evil.example.com' },
      policy: {},
      want: refused(
        'cluster.server',
        '"https://evil.example.com" is refused: access provider "google" has no allowedServers; list the servers its credentials may go to, or set allowAnyServer: true',
      ),
    },
    {
      name: 'accepts any https server that is not reserved with allowAnyServer: true',
      cluster: { server: 'https://35.1.2.3' },
      policy: { allowAnyServer: true },
      want: { ok: true },
    },
    ...['https://10.1.2.3:6443', 'https://172.16.0.5', 'https://192.168.1.1:8443'].map((server) => ({
      name: `accepts the RFC 1918 address ${server}: private is not reserved`,
      cluster: { server },
      policy: { allowAnyServer: true },
      want: { ok: true },
    })),
    {
      name: "refuses an endpoint of the hub's default/kubernetes Service (its cluster IP and port)",
      cluster: { server: 'https://10.0.0.1' },
      policy: { allowAnyServer: true },
      want: hubRefused(`"https://10.0.0.1" is refused: it is the hub's own API server`),
    },
    {
      name: "refuses an address and port of the hub's EndpointSlice (a node's API server)",
      cluster: { server: 'https://192.168.0.10:6443' },
      policy: { allowedServers: ['https://192.168.0.10:6443'] },
      want: hubRefused(`"https://192.168.0.10:6443" is refused: it is the hub's own API server`),
    },
    {
      name: "accepts the address of a hub endpoint on another port (another API server, e.g. a test's member)",
      cluster: { server: 'https://192.168.0.10:7443' },
      policy: { allowedServers: ['https://192.168.0.10:7443'] },
      want: { ok: true },
    },
    {
      name: 'an entry without a port means 443: it does not match another port',
      cluster: { server: 'https://member.example:6443' },
      policy: { allowedServers: ['https://member.example'] },
      want: refused('cluster.server', '"https://member.example:6443" is refused: it matches no allowedServers entry'),
    },
    ...['https://member.example', 'https://member.example:443/', 'https://MEMBER.example.:443/x'].map((server) => ({
      name: `an entry without a port matches ${server} (port 443)`,
      cluster: { server },
      policy: { allowedServers: ['https://member.example'] },
      want: { ok: true },
    })),
    {
      name: 'a *. entry without a port means 443 too',
      cluster: { server: 'https://eu-1.clusters.example.com:6443' },
      policy: { allowedServers: ['https://*.clusters.example.com'] },
      want: refused(
        'cluster.server',
        '"https://eu-1.clusters.example.com:6443" is refused: it matches no allowedServers entry',
      ),
    },
    {
      name: 'refuses a plain http server whatever the allowlist says',
      cluster: { server: 'http://35.1.2.3' },
      policy: { allowedServers: ['https://35.1.2.3'] },
      want: refused('cluster.server', '"http://35.1.2.3" is refused: mco sends credentials over https only'),
    },
    {
      name: 'refuses kubernetes.default.svc: it is the hub seen from inside',
      cluster: { server: 'https://kubernetes.default.svc' },
      policy: { allowedServers: ['https://kubernetes.default.svc'] },
      want: hubRefused(`"https://kubernetes.default.svc" is refused: it is the hub's own API server`),
    },
    {
      name: 'refuses kubernetes.default with a trailing dot and an explicit port',
      cluster: { server: 'https://kubernetes.default.:443/' },
      policy: { allowAnyServer: true },
      want: hubRefused(`"https://kubernetes.default.:443/" is refused: it is the hub's own API server`),
    },
    {
      name: "refuses the hub's own API server URL, the port made explicit",
      cluster: { server: 'https://10.96.0.1' },
      policy: { allowedServers: ['https://10.96.0.1'] },
      want: hubRefused(`"https://10.96.0.1" is refused: it is the hub's own API server`),
    },
    {
      name: 'refuses the metadata server at 169.254.169.254',
      cluster: { server: 'https://169.254.169.254' },
      policy: { allowAnyServer: true },
      want: refused(
        'cluster.server',
        '"https://169.254.169.254" is refused: its host is a loopback, link-local or unspecified address; only an allowedServers entry naming that host allows it',
      ),
    },
    {
      name: 'refuses loopback written as a decimal integer (the URL parser normalises it to 127.0.0.1)',
      cluster: { server: 'https://2130706433:6443' },
      policy: { allowAnyServer: true },
      want: refused(
        'cluster.server',
        '"https://2130706433:6443" is refused: its host is a loopback, link-local or unspecified address; only an allowedServers entry naming that host allows it',
      ),
    },
    {
      name: 'refuses loopback as an IPv4-mapped IPv6 address',
      cluster: { server: 'https://[::ffff:127.0.0.1]:6443' },
      policy: { allowAnyServer: true },
      want: refused(
        'cluster.server',
        '"https://[::ffff:127.0.0.1]:6443" is refused: its host is a loopback, link-local or unspecified address; only an allowedServers entry naming that host allows it',
      ),
    },
    {
      name: 'refuses an in-cluster service name of the hub',
      cluster: { server: 'https://attacker.team-a.svc.cluster.local' },
      policy: { allowedServers: ['https://*.cluster.local'] },
      want: refused(
        'cluster.server',
        '"https://attacker.team-a.svc.cluster.local" is refused: its host is an in-cluster service name of the hub; only an allowedServers entry naming that host allows it',
      ),
    },
    {
      name: 'accepts loopback when an allowedServers entry names that host and port (tests, a laptop)',
      cluster: { server: 'https://127.0.0.1:40123' },
      policy: { allowedServers: ['https://127.0.0.1:40123'] },
      want: { ok: true },
    },
    {
      name: 'refuses a server outside the allowlist',
      cluster: { server: 'https://attacker.example' },
      policy: { allowedServers: [GATEWAY] },
      want: refused('cluster.server', '"https://attacker.example" is refused: it matches no allowedServers entry'),
    },
    {
      name: 'accepts a server under an allowed path',
      cluster: { server: `${GATEWAY}/prod-east` },
      policy: { allowedServers: [`${GATEWAY}/`] },
      want: { ok: true },
    },
    {
      name: 'refuses a path that only shares a string prefix with the allowed one',
      cluster: { server: 'https://connectgateway.googleapis.com/v1/projects/1234/x' },
      policy: { allowedServers: ['https://connectgateway.googleapis.com/v1/projects/123'] },
      want: refused(
        'cluster.server',
        '"https://connectgateway.googleapis.com/v1/projects/1234/x" is refused: it matches no allowedServers entry',
      ),
    },
    {
      name: 'refuses a host that only shares a string prefix with the allowed one',
      cluster: { server: 'https://10.0.0.1.attacker.example' },
      policy: { allowedServers: ['https://10.0.0.1'] },
      want: refused(
        'cluster.server',
        '"https://10.0.0.1.attacker.example" is refused: it matches no allowedServers entry',
      ),
    },
    {
      name: 'accepts a subdomain of a *. entry and refuses the wrong port',
      cluster: { server: 'https://eu-1.clusters.example.com:6443' },
      policy: { allowedServers: ['https://*.clusters.example.com:443'] },
      want: refused(
        'cluster.server',
        '"https://eu-1.clusters.example.com:6443" is refused: it matches no allowedServers entry',
      ),
    },
    {
      name: 'refuses a server holding a user and password',
      cluster: { server: 'https://u:p@35.1.2.3' },
      policy: {},
      want: refused('cluster.server', 'is refused: it holds a user or password'),
    },
    {
      name: 'refuses insecure-skip-tls-verify unless the provider opts in',
      cluster: { server: 'https://35.1.2.3', 'insecure-skip-tls-verify': true },
      policy: { allowAnyServer: true },
      want: refused('cluster.insecure-skip-tls-verify', 'is refused: allowInsecureSkipTLSVerify is not set'),
    },
    {
      name: 'accepts insecure-skip-tls-verify when the provider opts in',
      cluster: { server: 'https://35.1.2.3', 'insecure-skip-tls-verify': true },
      policy: { allowAnyServer: true, allowInsecureSkipTLSVerify: true },
      want: { ok: true },
    },
    {
      name: 'refuses a proxy-url when the provider allows no proxy',
      cluster: { server: 'https://35.1.2.3', 'proxy-url': 'http://attacker.example:3128' },
      policy: { allowAnyServer: true },
      want: refused(
        'cluster.proxy-url',
        '"http://attacker.example:3128" is refused: it matches no allowedProxyURLs entry',
      ),
    },
    {
      name: 'accepts a proxy-url the provider allows',
      cluster: { server: 'https://35.1.2.3', 'proxy-url': 'http://proxy.corp.example:3128' },
      policy: { allowedServers: ['https://35.1.2.3'], allowedProxyURLs: ['http://proxy.corp.example:3128'] },
      want: { ok: true },
    },
    {
      name: 'refuses text that is not a URL',
      cluster: { server: 'not a url' },
      policy: {},
      want: refused('cluster.server', '"not a url" is not a URL with a host'),
    },
  ])('$name', ({ cluster, policy, want }) => {
    expect(checkClusterTrust(cluster as { server: string }, policy, context)).toEqual(want);
  });
});

describe('normalizeServer', () => {
  it.each([
    {
      name: 'makes the default port explicit and drops a trailing slash',
      server: 'https://A.example/',
      want: 'https://a.example:443',
    },
    {
      name: 'keeps the path, so two Connect Gateway memberships differ',
      server: `${GATEWAY}/x/`,
      want: `https://connectgateway.googleapis.com:443/v1/projects/123/locations/global/gkeMemberships/x`,
    },
    { name: 'says undefined for text that is not a URL', server: '::', want: undefined },
  ])('$name', ({ server, want }) => {
    expect(normalizeServer(server)).toBe(want);
  });
});

function withServer(
  key: string,
  server: string,
  created: string,
  annotations?: Record<string, string>,
): ClusterProfile {
  const p = aClusterProfile(key, { server });
  return {
    ...p,
    metadata: { ...p.metadata, creationTimestamp: created, ...(annotations ? { annotations } : {}) },
  };
}

describe('checkDuplicateServer', () => {
  const claimOf = (p: ClusterProfile) => p.status?.accessProviders?.[0]?.cluster?.server;
  const legit = withServer('fleet/prod', 'https://prod.example:443', '2026-01-01T00:00:00Z');
  it.each([
    {
      name: 'refuses a newer profile naming the server of an older one (the same server written differently)',
      profile: withServer('team-b/copy', 'https://PROD.example/', '2026-02-01T00:00:00Z'),
      peers: [legit],
      want: {
        ok: false,
        field: 'cluster.server',
        error:
          'ClusterProfile team-b/copy: cluster.server "https://PROD.example/" is refused: ClusterProfile fleet/prod (older) names the same server',
      },
    },
    {
      name: 'keeps the older profile working when a newer one copies its server',
      profile: legit,
      peers: [legit, withServer('team-b/copy', 'https://prod.example', '2026-02-01T00:00:00Z')],
      want: { ok: true },
    },
    {
      name: 'breaks a tie of creation times by namespace/name',
      profile: withServer('fleet/b', 'https://x.example', '2026-01-01T00:00:00Z'),
      peers: [withServer('fleet/a', 'https://x.example', '2026-01-01T00:00:00Z')],
      want: {
        ok: false,
        field: 'cluster.server',
        error:
          'ClusterProfile fleet/b: cluster.server "https://x.example" is refused: ClusterProfile fleet/a (older) names the same server',
      },
    },
    {
      name: 'ignores a peer that names a kubeconfig Secret (its server is not in its status to compare)',
      profile: withServer('fleet/b', 'https://x.example', '2026-02-01T00:00:00Z'),
      peers: [
        withServer('fleet/a', 'https://x.example', '2026-01-01T00:00:00Z', {
          'orchestra.multicluster.x-k8s.io/kubeconfig-secret': 'a',
        }),
      ],
      want: { ok: true },
    },
    {
      name: 'ignores a peer whose claim was itself refused',
      profile: withServer('fleet/b', 'https://x.example', '2026-02-01T00:00:00Z'),
      peers: [withServer('fleet/refused', 'https://x.example', '2026-01-01T00:00:00Z')],
      claim: (p: ClusterProfile) => (p.metadata.name === 'refused' ? undefined : claimOf(p)),
      want: { ok: true },
    },
  ])('$name', ({ profile, peers, claim, want }) => {
    expect(checkDuplicateServer(profile, claimOf(profile)!, peers, claim ?? claimOf)).toEqual(want);
  });
});

describe('parseProviderFile server policy', () => {
  const file = (extra: string) =>
    `providers: [{name: google, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: x}, ${extra}}]`;
  it('reads allowedServers, allowInsecureSkipTLSVerify, allowedProxyURLs and kubeconfigSecrets', () => {
    const parsed = parseProviderFile(
      `${file(`allowedServers: ['${GATEWAY}/'], allowInsecureSkipTLSVerify: false, allowedProxyURLs: ['http://proxy:3128']`)}\nkubeconfigSecrets: {allowedServers: ['https://*.corp.example']}`,
    );
    expect(parsed).toEqual({
      providers: [
        {
          name: 'google',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x' },
          allowedServers: [`${GATEWAY}/`],
          allowInsecureSkipTLSVerify: false,
          allowedProxyURLs: ['http://proxy:3128'],
        },
      ],
      kubeconfigSecrets: { allowedServers: ['https://*.corp.example'] },
    });
  });
  it.each([
    {
      name: 'an http allowedServers entry',
      extra: `allowedServers: ['http://a']`,
      message: 'p.yaml: providers.0.allowedServers.0: "http://a" must start with https://',
    },
    {
      name: 'an entry that is not a URL',
      extra: `allowedServers: ['a b']`,
      message: 'p.yaml: providers.0.allowedServers.0: "a b" is not a URL with a host',
    },
    {
      name: 'a provider with neither allowedServers nor allowAnyServer',
      extra: `allowInsecureSkipTLSVerify: false`,
      message:
        'p.yaml: providers.0.allowedServers: required: list the servers (https://host[:port][/path]) these credentials may go to, or set allowAnyServer: true',
    },
    {
      name: 'allowAnyServer: false alone',
      extra: `allowAnyServer: false`,
      message: 'p.yaml: providers.0.allowedServers: required',
    },
    {
      name: 'both allowedServers and allowAnyServer: true',
      extra: `allowedServers: ['https://a.example'], allowAnyServer: true`,
      message:
        'p.yaml: providers.0.allowAnyServer: allowAnyServer: true and allowedServers exclude each other; keep one',
    },
    {
      name: 'a proxy entry with a password',
      extra: `allowAnyServer: true, allowedProxyURLs: ['http://u:p@proxy']`,
      message: 'p.yaml: providers.0.allowedProxyURLs.0: "http://u:p@proxy" must not hold a user or password',
    },
  ])('names the field for $name', ({ extra, message }) => {
    expect(() => parseProviderFile(file(extra), 'p.yaml')).toThrow(message);
  });
  it('accepts allowAnyServer: true as the explicit opt-out, and requires a bound in kubeconfigSecrets too', () => {
    expect(parseProviderFile(file('allowAnyServer: true')).providers[0]).toMatchObject({ allowAnyServer: true });
    expect(() => parseProviderFile(`${file('allowAnyServer: true')}\nkubeconfigSecrets: {}`, 'p.yaml')).toThrow(
      'p.yaml: kubeconfigSecrets.allowedServers: required',
    );
  });
});

describe('the hub in every spelling', () => {
  // One address per row, in each family and spelling a URL or a resolver may give it.
  const SPELLINGS: readonly (readonly [string, string])[] = [
    ['192.168.0.10', 'IPv4'],
    ['192.168.000.010', 'IPv4, zero-padded (the URL parser reads 010 as octal: 8)'],
    ['3232235530', 'IPv4 as one decimal integer'],
    ['0xc0a8000a', 'IPv4 as one hex integer'],
    ['0xc0.0xa8.0.0xa', 'IPv4, hex per part'],
    ['::ffff:192.168.0.10', 'IPv4-mapped IPv6'],
    ['::ffff:c0a8:a', 'IPv4-mapped IPv6, hex'],
    ['0:0:0:0:0:ffff:c0a8:000a', 'IPv4-mapped IPv6, uncompressed and zero-padded'],
    ['::FFFF:C0A8:A', 'IPv4-mapped IPv6, upper case'],
    ['::192.168.0.10', 'IPv4-compatible IPv6'],
    ['::c0a8:a', 'IPv4-compatible IPv6, hex'],
  ];
  const WANT: Record<string, string> = { '192.168.000.010': '192.168.0.8' };

  it.each(SPELLINGS)('normalizes %s (%s)', (spelling) => {
    expect(normalizeAddress(spelling)).toBe(WANT[spelling] ?? '192.168.0.10');
  });

  it('normalizes IPv6 to one compressed lower-case form and leaves names alone', () => {
    expect({
      v6: normalizeAddress('FD00:0:0:0:0:0:0:0001'),
      bracketed: normalizeAddress('[fd00::1]'),
      loopback: normalizeAddress('0000:0000:0000:0000:0000:0000:0000:0001'),
      name: normalizeAddress('hub.example'),
    }).toEqual({ v6: 'fd00::1', bracketed: 'fd00::1', loopback: '::1', name: undefined });
  });

  it.each(SPELLINGS.filter(([s]) => !WANT[s]))(
    'refuses the hub EndpointSlice address spelt %s (%s), in the URL and at connect time',
    (spelling) => {
      const server = `https://${spelling.includes(':') ? `[${spelling}]` : spelling}:6443`;
      const check = addressCheck(server, { allowAnyServer: true }, () => context.hubEndpoints);
      expect({
        url: checkClusterTrust({ server }, { allowAnyServer: true }, context),
        connect: check(spelling, 6443),
      }).toEqual({
        url: hubRefused(`"${server}" is refused: it is the hub's own API server`),
        connect: "is the hub's own API server",
      });
    },
  );

  it.each([
    ['https://[::ffff:10.96.0.1]', 'IPv4-mapped'],
    ['https://[::a60:1]', 'IPv4-compatible, hex'],
    ['https://174063617', 'decimal'],
  ])("refuses the hub's URL (hubServer https://10.96.0.1:443) spelt %s (%s)", (server) => {
    expect(checkClusterTrust({ server }, { allowAnyServer: true }, context)).toEqual(
      hubRefused(`"${server}" is refused: it is the hub's own API server`),
    );
  });

  it.each(['::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1', '2130706433', '0x7f.1', '::ffff:169.254.169.254'])(
    'treats %s as the reserved IPv4 address it reaches',
    (spelling) => {
      const server = `https://${spelling.includes(':') ? `[${spelling}]` : spelling}`;
      expect(addressCheck(server, { allowAnyServer: true }, () => undefined)(spelling, 443)).toMatch(
        /^is a loopback, link-local or unspecified address/,
      );
    },
  );
});

describe('a server name is checked by the addresses it resolves to', () => {
  const exec = { apiVersion: 'client.authentication.k8s.io/v1' as const, command: 'unused' };
  const DNS: Record<string, string[]> = {
    '169.254.169.254.nip.io': ['169.254.169.254'],
    'sneaky.example': ['203.0.113.7', '127.0.0.1'],
    'private.corp.example': ['10.20.30.40'],
  };
  const manager = (allowedServers?: string[]) => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok' });
    const access = createClusterAccess({
      providers: [
        {
          name: 'p',
          execConfig: { ...exec, command },
          ...(allowedServers ? { allowedServers } : { allowAnyServer: true }),
        },
      ],
      lookup: async (host) => (DNS[host] ?? []).map((address) => ({ address })),
    });
    return { access, dir };
  };
  const profile = (server: string): ClusterProfile => ({
    ...aClusterProfile('fleet/m'),
    status: { accessProviders: [{ name: 'p', cluster: { server } }] },
  });

  it.each([
    { server: 'https://169.254.169.254.nip.io', address: '169.254.169.254' },
    { server: 'https://sneaky.example:6443', address: '127.0.0.1' },
  ])('refuses $server (resolving to $address) before the plugin runs', async ({ server, address }) => {
    const { access, dir } = manager();
    const error = (await access.accessFor(profile(server)).catch((e: unknown) => e)) as McoError;
    expect({ code: error.code, message: error.message, runs: dir.calls() }).toEqual({
      code: 'Invalid',
      message: `ClusterProfile fleet/m: access provider "p": cluster.server "${server}" is refused: its host resolves to ${address}, which is a loopback, link-local or unspecified address; only an allowedServers entry naming the server's host allows it`,
      runs: 0,
    });
  });

  it('accepts a name resolving to an RFC 1918 address, and a reserved one its allowedServers entry names exactly', async () => {
    expect(await (await manager().access.accessFor(profile('https://private.corp.example'))).getToken()).toBe('tok');
    const named = manager(['https://sneaky.example:6443']).access;
    expect(await (await named.accessFor(profile('https://sneaky.example:6443'))).getToken()).toBe('tok');
  });
});

describe('createClusterAccess refuses before any credential is obtained', () => {
  const V1 = 'client.authentication.k8s.io/v1' as const;
  it.each([
    {
      name: 'a server outside the provider allowlist',
      cluster: { server: 'https://attacker.example' },
      message:
        'ClusterProfile fleet/hostile: access provider "p": cluster.server "https://attacker.example" is refused: it matches no allowedServers entry',
    },
    {
      name: 'kubernetes.default.svc',
      cluster: { server: 'https://kubernetes.default.svc' },
      message: `ClusterProfile fleet/hostile: access provider "p": cluster.server "https://kubernetes.default.svc" is refused: it is the hub's own API server`,
    },
    {
      name: 'insecure TLS',
      cluster: { server: 'https://a.example', 'insecure-skip-tls-verify': true },
      message:
        'ClusterProfile fleet/hostile: access provider "p": cluster.insecure-skip-tls-verify is refused: allowInsecureSkipTLSVerify is not set',
    },
    {
      name: 'a duplicate of an older profile server',
      cluster: { server: 'https://a.example/' },
      message:
        'ClusterProfile fleet/hostile: cluster.server "https://a.example/" is refused: ClusterProfile fleet/legit (older) names the same server',
    },
  ])('refuses $name and never runs the credential plugin', async ({ cluster, message }) => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok' });
    const manager = createClusterAccess({
      providers: [
        {
          name: 'p',
          execConfig: { apiVersion: V1, command },
          allowedServers: ['https://a.example', 'https://b.example'],
        },
      ],
    });
    const make = (name: string, c: Record<string, unknown>, created: string): ClusterProfile => {
      const p = aClusterProfile(`fleet/${name}`);
      return {
        ...p,
        metadata: { ...p.metadata, creationTimestamp: created },
        status: { accessProviders: [{ name: 'p', cluster: c as { server: string } }] },
      };
    };
    const legit = make('legit', { server: 'https://a.example' }, '2026-01-01T00:00:00Z');
    const hostile = make('hostile', cluster, '2026-02-01T00:00:00Z');
    const error = (await manager.accessFor(hostile, undefined, [legit, hostile]).catch((e: unknown) => e)) as McoError;
    const legitToken = await (await manager.accessFor(legit, undefined, [legit, hostile])).getToken();
    expect({ code: error.code, message: error.message, legitToken, pluginRuns: dir.calls() }).toEqual({
      code: 'Invalid',
      message,
      legitToken: 'tok',
      pluginRuns: 1,
    });
  });
});

describe('a refused profile never reaches its endpoint', () => {
  it('opens no connection to a hostile server or proxy, while the same endpoint allowed is reached', async () => {
    // The attacker's endpoint: it counts connections and never answers.
    const sockets: Socket[] = [];
    const trap = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
    const endpoint = `127.0.0.1:${(trap.address() as AddressInfo).port}`;
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok' });
    const exec = { apiVersion: 'client.authentication.k8s.io/v1' as const, command };
    const make = (name: string, provider: string, cluster: Record<string, unknown>): ClusterProfile => ({
      ...aClusterProfile(`fleet/${name}`),
      status: { accessProviders: [{ name: provider, cluster: cluster as { server: string } }] },
    });
    const manager = createClusterAccess({
      providers: [
        { name: 'strict', execConfig: exec, allowedServers: ['https://member.example'] },
        { name: 'trusting', execConfig: exec, allowedServers: [`https://${endpoint}`] },
      ],
    });
    const attempt = async (profile: ClusterProfile) => {
      try {
        const client = await manager.clientFor(profile, AbortSignal.timeout(500));
        await client.client.get('/version', { signal: AbortSignal.timeout(500) });
        return 'answered';
      } catch (error) {
        return (error as McoError).code === 'Invalid' ? 'refused' : 'no answer';
      }
    };
    try {
      const hostile = {
        server: await attempt(make('server', 'strict', { server: `https://${endpoint}` })),
        proxy: await attempt(
          make('proxy', 'strict', { server: 'https://member.example', 'proxy-url': `http://${endpoint}` }),
        ),
      };
      const connectionsAfterHostile = sockets.length;
      const allowed = await attempt(make('allowed', 'trusting', { server: `https://${endpoint}` }));
      expect({
        hostile,
        connectionsAfterHostile,
        allowed,
        reached: sockets.length > 0,
        pluginRuns: dir.calls(),
      }).toEqual({
        hostile: { server: 'refused', proxy: 'refused' },
        connectionsAfterHostile: 0,
        allowed: 'no answer',
        reached: true,
        pluginRuns: 1,
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => trap.close(resolve));
    }
  });
});

describe("the hub's own endpoints, as its API lists them", () => {
  /** A hub answering the default/kubernetes Service and EndpointSlice with `status` (and these bodies on 200). */
  async function hub(status: number) {
    const server = createHttpServer((request, response) => {
      response.statusCode = status;
      if (status !== 200) return response.end('{"kind":"Status","message":"forbidden"}');
      response.end(
        JSON.stringify(
          request.url?.includes('/endpointslices/')
            ? { endpoints: [{ addresses: ['192.168.0.10'] }, { addresses: ['192.168.0.11'] }], ports: [{ port: 6443 }] }
            : { spec: { clusterIP: '10.0.0.1', clusterIPs: ['10.0.0.1'], ports: [{ port: 443 }] } },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const connection = {
      server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      insecureSkipTlsVerify: false,
      getCredential: async () => ({}),
      invalidate: () => {},
    };
    return { connection, close: () => new Promise((resolve) => server.close(resolve)) };
  }
  const profile = (server: string): ClusterProfile => ({
    ...aClusterProfile('fleet/m'),
    status: { accessProviders: [{ name: 'p', cluster: { server } }] },
  });
  const providers = (command: string) => [
    {
      name: 'p',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1' as const, command },
      allowAnyServer: true,
    },
  ];

  it('refuses the Service and EndpointSlice addresses on their ports only', async () => {
    const { connection, close } = await hub(200);
    const dir = pluginDir();
    const access = createClusterAccess({
      providers: providers(credentialScript(dir, { token: 'tok' })),
      hub: connection,
    });
    const outcome = async (server: string) =>
      access.accessFor(profile(server)).then(
        () => 'accepted',
        (e: unknown) => (e as Error).message.replace(/^.*is refused: /, ''),
      );
    try {
      expect({
        clusterIP: await outcome('https://10.0.0.1'),
        node: await outcome('https://192.168.0.11:6443'),
        nodeOtherPort: await outcome('https://192.168.0.11:7443'),
        clusterIPOtherPort: await outcome('https://10.0.0.1:6443'),
      }).toEqual({
        clusterIP: "it is the hub's own API server",
        node: "it is the hub's own API server",
        nodeOtherPort: 'accepted',
        clusterIPOtherPort: 'accepted',
      });
    } finally {
      await close();
    }
  });

  it('without permission to read them, warns and refuses only by the hub URL and in-cluster names', async () => {
    const { connection, close } = await hub(403);
    const lines: string[] = [];
    const dir = pluginDir();
    const access = createClusterAccess({
      providers: providers(credentialScript(dir, { token: 'tok' })),
      hub: connection,
      logger: createLogger({ write: (line) => void lines.push(line) }),
    });
    try {
      expect(await (await access.accessFor(profile('https://192.168.0.11:6443'))).getToken()).toBe('tok');
      expect(lines.join('')).toContain("may not read the hub's own endpoints");
    } finally {
      await close();
    }
  });
});
