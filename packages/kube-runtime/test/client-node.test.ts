import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { connectionFromKubeConfig, hubClient, toClientNodeKubeConfig } from '../src/client-node.js';

describe('the client-node bridges', () => {
  it('a converted connection puts its client certificate on client-node requests', async () => {
    const kc = toClientNodeKubeConfig({
      server: 'https://a:6443',
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ clientCertificateData: 'CERT', clientKeyData: 'KEY' }),
      invalidate: () => {},
    });
    const opts = (await kc.applyToFetchOptions({})) as unknown as {
      headers: Headers;
      agent: { options: { cert?: Buffer; key?: Buffer } };
    };
    expect({
      server: kc.getCurrentCluster()?.server,
      authorization: opts.headers.get('authorization'),
      cert: opts.agent.options.cert?.toString(),
      key: opts.agent.options.key?.toString(),
    }).toEqual({ server: 'https://a:6443', authorization: null, cert: 'CERT', key: 'KEY' });
  });

  it('gives each conversion its own user, so client-node does not mix their credentials', async () => {
    const connection = (token: string) => ({
      server: 'https://a:6443',
      insecureSkipTlsVerify: true,
      getCredential: () => Promise.resolve({ token }),
      invalidate: () => {},
    });
    const [a, b] = [toClientNodeKubeConfig(connection('ta')), toClientNodeKubeConfig(connection('tb'))];
    const header = async (kc: KubeConfig) =>
      ((await kc.applyToFetchOptions({})).headers as unknown as Headers).get('authorization');
    expect({
      distinct: a.getCurrentUser()?.name !== b.getCurrentUser()?.name,
      headers: [await header(a), await header(b)],
    }).toEqual({ distinct: true, headers: ['Bearer ta', 'Bearer tb'] });
  });

  it('a client-node KubeConfig becomes a connection with its server, CA and token', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://hub:6443', caData: 'Q0E=', skipTLSVerify: false, tlsServerName: 'k' }],
      users: [{ name: 'u', token: 'tok' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const connection = connectionFromKubeConfig(kc);
    expect({
      server: connection.server,
      caData: connection.caData,
      tlsServerName: connection.tlsServerName,
      insecure: connection.insecureSkipTlsVerify,
      credential: await connection.getCredential(),
    }).toEqual({
      server: 'https://hub:6443',
      caData: 'Q0E=',
      tlsServerName: 'k',
      insecure: false,
      credential: { token: 'tok' },
    });
  });

  it('hubClient makes the one client of a connection or of a KubeConfig, and refuses neither or both naming the fields', () => {
    const hub = {
      server: 'https://hub:6443',
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ token: 't' }),
      invalidate: () => {},
    };
    const kubeConfig = toClientNodeKubeConfig({ ...hub, server: 'https://other:6443' });
    const refusal = (source: Parameters<typeof hubClient>[0]) => {
      try {
        hubClient(source);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect({
      fromHub: hubClient({ hub }).connection.server,
      fromKubeConfig: hubClient({ kubeConfig }).connection.server,
      neither: refusal({}),
      both: refusal({ hub, kubeConfig }),
    }).toEqual({
      fromHub: 'https://hub:6443',
      fromKubeConfig: 'https://other:6443',
      neither: 'hub: missing (give hub, a connection from loadKubeConfig, or kubeConfig)',
      both: 'hub and kubeConfig: give one of them, not both',
    });
  });
});
