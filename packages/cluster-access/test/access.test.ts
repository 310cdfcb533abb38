import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { McoError } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import {
  createClusterAccess,
  parseProviderFile,
  parseStaticKubeconfig,
  selectAccessProvider,
  type ProviderConfig,
} from '../src/index.js';
import { credentialScript, pluginDir } from './plugin-scripts.js';

const V1 = 'client.authentication.k8s.io/v1' as const;
const exec = (command: string) => ({ apiVersion: V1, command, provideClusterInfo: true });

function profile(name: string, status: ClusterProfile['status'], annotations?: Record<string, string>): ClusterProfile {
  const p = aClusterProfile(`fleet/${name}`);
  return {
    ...p,
    metadata: { ...p.metadata, ...(annotations ? { annotations } : {}) },
    status: { ...p.status, ...status },
  };
}

describe('parseProviderFile', () => {
  it('reads the Cluster Inventory API consumer file', () => {
    const text = JSON.stringify({
      providers: [
        {
          name: 'google',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1beta1',
            command: 'gke-gcloud-auth-plugin',
            args: null,
            env: null,
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
          allowedServers: ['https://connectgateway.googleapis.com/v1/projects/123/'],
        },
      ],
    });
    expect(parseProviderFile(text)).toEqual({
      providers: [
        {
          name: 'google',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1beta1',
            command: 'gke-gcloud-auth-plugin',
            args: null,
            env: null,
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
          allowedServers: ['https://connectgateway.googleapis.com/v1/projects/123/'],
        },
      ],
    });
  });

  it.each([
    {
      name: 'an unknown exec apiVersion',
      text: 'providers: [{name: a, execConfig: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}]',
      message: 'providers.yaml: providers.0.execConfig.apiVersion:',
    },
    {
      name: 'a missing command',
      text: 'providers: [{name: a, execConfig: {apiVersion: client.authentication.k8s.io/v1}}]',
      message: 'providers.yaml: providers.0.execConfig.command:',
    },
    {
      name: 'a provider named twice',
      text: 'providers: [{name: a, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: x}, allowAnyServer: true}, {name: a, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: y}, allowAnyServer: true}]',
      message: 'providers.yaml: providers: provider names must be unique',
    },
    { name: 'text that is not YAML', text: 'providers: [', message: 'providers.yaml: not valid YAML or JSON' },
  ])('names the field for $name', ({ text, message }) => {
    expect(() => parseProviderFile(text, 'providers.yaml')).toThrow(message);
  });
});

describe('selectAccessProvider', () => {
  const providers: ProviderConfig[] = [
    { name: 'token-secretreader', execConfig: exec('/bin/a') },
    { name: 'google', execConfig: exec('/bin/b') },
  ];
  it.each([
    {
      name: 'picks the first provider in file order that the profile offers, not the profile order',
      status: {
        accessProviders: [
          { name: 'google', cluster: { server: 'https://g' } },
          { name: 'token-secretreader', cluster: { server: 'https://t' } },
        ],
      },
      want: { ok: true, provider: 'token-secretreader', server: 'https://t' },
    },
    {
      name: 'falls back to the deprecated credentialProviders',
      status: { credentialProviders: [{ name: 'google', cluster: { server: 'https://g' } }] },
      want: { ok: true, provider: 'google', server: 'https://g' },
    },
    {
      name: 'reports when nothing matches',
      status: { accessProviders: [{ name: 'azure', cluster: { server: 'https://z' } }] },
      want: {
        ok: false,
        error:
          'ClusterProfile fleet/a offers access providers ["azure"] and the provider file configures ["token-secretreader", "google"]: no match',
      },
    },
    {
      name: 'reports a matching entry without a server',
      status: { accessProviders: [{ name: 'google' }] },
      want: { ok: false, error: 'ClusterProfile fleet/a: access provider "google" has no cluster.server' },
    },
  ])('$name', ({ status, want }) => {
    const got = selectAccessProvider(profile('a', status), providers);
    expect(got.ok ? { ok: true, provider: got.provider.name, server: got.cluster.server } : got).toEqual(want);
  });
});

describe('parseStaticKubeconfig', () => {
  it('reports where YAML is broken by line and column only, never the line itself (it may hold the token)', () => {
    const token = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IkXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX';
    const text = `apiVersion: v1\nusers:\n- name: u\n  user:\n    token: "${token}\n    x: [\n`;
    let message = '';
    try {
      parseStaticKubeconfig(text);
    } catch (error) {
      message = (error as Error).message;
    }
    expect({ message: message.replace(/\d+/g, 'N'), leaks: message.includes(token.slice(8, 20)) }).toEqual({
      message: 'not valid YAML at line N, column N',
      leaks: false,
    });
  });

  const kubeconfig = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) =>
    JSON.stringify({
      'current-context': 'c',
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
      clusters: [
        { name: 'k', cluster: { server: 'https://m:6443', 'certificate-authority-data': 'Q0E=', ...cluster } },
      ],
      users: [{ name: 'u', user }],
    });
  it.each([
    {
      name: 'a token',
      text: kubeconfig({ token: 'abc' }),
      want: {
        cluster: { server: 'https://m:6443', 'certificate-authority-data': 'Q0E=' },
        credential: { token: 'abc' },
      },
    },
    {
      name: 'an inline client certificate, decoded to PEM',
      text: kubeconfig(
        {
          'client-certificate-data': Buffer.from('CERT').toString('base64'),
          'client-key-data': Buffer.from('KEY').toString('base64'),
        },
        { 'tls-server-name': 'kube' },
      ),
      want: {
        cluster: { server: 'https://m:6443', 'certificate-authority-data': 'Q0E=', 'tls-server-name': 'kube' },
        credential: { clientCertificateData: 'CERT', clientKeyData: 'KEY' },
      },
    },
  ])('reads $name', ({ text, want }) => {
    expect(parseStaticKubeconfig(text)).toEqual(want);
  });
  it.each([
    {
      name: 'an exec plugin',
      text: kubeconfig({ exec: { command: 'rm' } }),
      message: 'users[].user.exec is not allowed in a kubeconfig Secret',
    },
    {
      name: 'a token file',
      text: kubeconfig({ 'token-file': '/etc/shadow' }),
      message: 'users[].user.token-file is not allowed',
    },
    {
      name: 'a CA file',
      text: kubeconfig({ token: 't' }, { 'certificate-authority': '/ca' }),
      message: 'clusters[].cluster.certificate-authority (a file) is not allowed',
    },
    {
      name: 'no credential',
      text: kubeconfig({}),
      message: 'users[].user has neither token nor client-certificate-data',
    },
    { name: 'no current context', text: '{"contexts": []}', message: 'current-context is not set' },
  ])('refuses $name', ({ text, message }) => {
    expect(() => parseStaticKubeconfig(text)).toThrow(message);
  });
});

describe('createClusterAccess', () => {
  it('keeps one access per cluster while its access data is unchanged, and runs the plugin once for concurrent callers', async () => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok', expirationTimestamp: '2099-01-01T00:00:00Z' }, V1, 0.2);
    const manager = createClusterAccess({
      providers: [{ name: 'p', execConfig: exec(command), allowedServers: ['https://a:6443', 'https://a2:6443'] }],
    });
    const p = profile('a', { accessProviders: [{ name: 'p', cluster: { server: 'https://a:6443' } }] });
    const first = await manager.accessFor(p);
    const tokens = await Promise.all(Array.from({ length: 5 }, async () => (await manager.accessFor(p)).getToken()));
    const same = (await manager.accessFor(p)) === first;
    const changed = await manager.accessFor(
      profile('a', { accessProviders: [{ name: 'p', cluster: { server: 'https://a2:6443' } }] }),
    );
    expect({
      same,
      tokens,
      calls: dir.calls(),
      changedServer: changed.server,
      rebuilt: changed !== first,
    }).toEqual({
      same: true,
      tokens: Array(5).fill('tok'),
      calls: 1,
      changedServer: 'https://a2:6443',
      rebuilt: true,
    });
  });

  it('rejects a profile with no usable provider with an McoError naming it', async () => {
    const manager = createClusterAccess({ providers: [] });
    const error = (await manager.accessFor(profile('a', {})).catch((e: unknown) => e)) as McoError;
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'Invalid',
      message:
        'ClusterProfile fleet/a offers access providers [none] and the provider file configures [none]: no match',
    });
  });

  it('rejects a kubeconfig-secret profile when no hub access was given', async () => {
    const manager = createClusterAccess({ providers: [] });
    const p = profile('a', {}, { 'orchestra.multicluster.x-k8s.io/kubeconfig-secret': 'a-kubeconfig' });
    await expect(manager.accessFor(p)).rejects.toThrow(
      'ClusterProfile fleet/a: annotation orchestra.multicluster.x-k8s.io/kubeconfig-secret needs hub access, which this component was not given',
    );
  });

  it('gives up reading a kubeconfig Secret from a hub that never answers after the request timeout, naming the profile', async () => {
    // A hub that accepts the connection and never answers: without a timeout the read would hang forever.
    const sockets: Socket[] = [];
    const hub = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
    const { port } = hub.address() as AddressInfo;
    const hubConnection = {
      server: `http://127.0.0.1:${port}`,
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ token: 't' }),
      invalidate: () => {},
    };
    try {
      const manager = createClusterAccess({ providers: [], hub: hubConnection, requestTimeoutMs: 300 });
      const p = profile('a', {}, { 'orchestra.multicluster.x-k8s.io/kubeconfig-secret': 'a-kubeconfig' });
      const started = Date.now();
      const error = (await manager.accessFor(p).catch((e: unknown) => e)) as McoError;
      expect({
        message: error.message.startsWith('ClusterProfile fleet/a: reading kubeconfig Secret fleet/a-kubeconfig'),
        within: Date.now() - started < 5000,
      }).toEqual({ message: true, within: true });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hub.close(resolve));
    }
  });
});
