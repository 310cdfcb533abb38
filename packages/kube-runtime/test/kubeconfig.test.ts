import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadKubeConfig, type LoadedKubeConfig } from '../src/index.js';

const SECRET = 's3cr3t-token-value';
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const b64 = (text: string) => Buffer.from(text).toString('base64');

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'mco-kubeconfig-'));
}

function write(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** A kubeconfig with one context `ctx` of cluster `c` and user `u`; `user` and `cluster` are YAML flow mappings. */
function kubeconfig(user: string, cluster = '{server: "https://hub.example:6443"}', current = 'ctx'): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: c, cluster: ${cluster}}]`,
    `users: [{name: u, user: ${user}}]`,
    'contexts: [{name: ctx, context: {cluster: c, user: u}}]',
    `current-context: ${current}`,
    '',
  ].join('\n');
}

/** The observable result of a load: where, TLS settings and the credential (never printed by the code under test). */
async function summary(loaded: LoadedKubeConfig) {
  const credential = await loaded.getCredential();
  return {
    source: loaded.source,
    context: loaded.context,
    server: loaded.server,
    caData: loaded.caData,
    tlsServerName: loaded.tlsServerName,
    insecure: loaded.insecureSkipTlsVerify,
    credential,
  };
}

/** A credential plugin (POSIX sh) that counts its runs and prints `status` in an ExecCredential of `apiVersion`. */
function plugin(dir: string, apiVersion: string, status: Record<string, unknown>): string {
  const path = join(dir, 'plugin.sh');
  const json = JSON.stringify({ apiVersion, kind: 'ExecCredential', status });
  writeFileSync(
    path,
    `#!/bin/sh\necho run >> '${dir}/runs'\nprintf '%s' "$KUBERNETES_EXEC_INFO" > '${dir}/info'\ncat <<'JSON'\n${json}\nJSON\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

const runs = (dir: string) =>
  existsSync(join(dir, 'runs')) ? readFileSync(join(dir, 'runs'), 'utf8').split('\n').filter(Boolean).length : 0;

describe('loadKubeConfig: where it looks', () => {
  const config = (server: string) => kubeconfig(`{token: ${SECRET}}`, `{server: "${server}"}`);

  it('takes the path over KUBECONFIG, KUBECONFIG over ~/.kube/config, and that over the service account', () => {
    const dir = tempDir();
    const flag = write(dir, 'flag', config('https://flag.example'));
    const env = write(dir, 'env', config('https://env.example'));
    const home = tempDir();
    mkdirSync(join(home, '.kube'));
    write(join(home, '.kube'), 'config', config('https://home.example'));
    const sa = tempDir();
    write(sa, 'token', SECRET);
    const inPod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const server = (path: string | undefined, vars: Record<string, string>) =>
      loadKubeConfig({ path, env: vars, serviceAccountDir: sa }).server;
    expect([
      server(flag, { HOME: home, KUBECONFIG: env, ...inPod }),
      server(undefined, { HOME: home, KUBECONFIG: env, ...inPod }),
      server(undefined, { HOME: home, ...inPod }),
      server(undefined, { HOME: tempDir(), ...inPod }),
    ]).toEqual(['https://flag.example', 'https://env.example', 'https://home.example', 'https://10.0.0.1:443']);
  });

  it('names every place it looked at when there is no kubeconfig at all', () => {
    const home = tempDir();
    expect(() => loadKubeConfig({ env: { HOME: home }, serviceAccountDir: tempDir() })).toThrow(
      `no kubeconfig found: pass --kubeconfig <path>, set KUBECONFIG, or create ${home}/.kube/config (in a pod, the service account is used)`,
    );
  });

  it('in a pod: the service host (IPv6 in brackets), its CA, and the projected token re-read after a minute', async () => {
    const sa = tempDir();
    write(sa, 'token', 'first\n');
    write(sa, 'ca.crt', CERT);
    let now = new Date('2026-11-24T12:00:00Z');
    const loaded = loadKubeConfig({
      env: { HOME: tempDir(), KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' },
      serviceAccountDir: sa,
      now: () => now,
    });
    const first = await summary(loaded);
    write(sa, 'token', 'second\n');
    const cached = await loaded.getCredential();
    now = new Date(now.getTime() + 61_000);
    const reread = await loaded.getCredential();
    expect({ first, cached: cached.token, reread: reread.token }).toEqual({
      first: {
        source: 'in-cluster',
        context: undefined,
        server: 'https://[fd00::1]:6443',
        caData: b64(CERT),
        tlsServerName: undefined,
        insecure: false,
        credential: { token: 'first' },
      },
      cached: 'first',
      reread: 'second',
    });
  });

  it('merges a KUBECONFIG list: the first file to name an entry or the current context wins', async () => {
    const dir = tempDir();
    const first = write(
      dir,
      'first',
      [
        'clusters: [{name: c, cluster: {server: "https://first.example"}}]',
        'contexts: [{name: ctx, context: {cluster: c, user: u}}]',
        'current-context: ctx',
      ].join('\n'),
    );
    const second = write(
      dir,
      'second',
      kubeconfig(`{token: ${SECRET}}`, '{server: "https://second.example"}', 'other'),
    );
    const loaded = loadKubeConfig({ env: { KUBECONFIG: `${first}:${second}`, HOME: tempDir() } });
    expect(await summary(loaded)).toEqual({
      source: `${first}:${second}`,
      context: 'ctx',
      server: 'https://first.example',
      caData: undefined,
      tlsServerName: undefined,
      insecure: false,
      credential: { token: SECRET },
    });
  });

  it('uses another context when asked, and names a missing one', () => {
    const dir = tempDir();
    const path = write(
      dir,
      'config',
      [
        'clusters: [{name: a, cluster: {server: "https://a.example"}}, {name: b, cluster: {server: "https://b.example"}}]',
        'users: [{name: u, user: {}}]',
        'contexts: [{name: ca, context: {cluster: a, user: u}}, {name: cb, context: {cluster: b}}]',
        'current-context: ca',
      ].join('\n'),
    );
    expect(loadKubeConfig({ path, context: 'cb' }).server).toBe('https://b.example');
    expect(() => loadKubeConfig({ path, context: 'nope' })).toThrow(`context "nope" not found in ${path}`);
  });
});

describe('loadKubeConfig: every way to authenticate', () => {
  it.each([
    {
      name: 'a token, with CA data, a TLS server name and a proxy',
      user: `{token: ${SECRET}}`,
      cluster: `{server: "https://hub:6443/", certificate-authority-data: ${b64(CERT)}, tls-server-name: kubernetes, proxy-url: "http://proxy:3128"}`,
      want: {
        server: 'https://hub:6443',
        caData: b64(CERT),
        tlsServerName: 'kubernetes',
        proxyUrl: 'http://proxy:3128',
        insecure: false,
      },
      credential: { token: SECRET },
    },
    {
      name: 'a client certificate and key as data, without TLS verification',
      user: `{client-certificate-data: ${b64(CERT)}, client-key-data: ${b64(KEY)}}`,
      cluster: '{server: "https://hub:6443", insecure-skip-tls-verify: true}',
      want: {
        server: 'https://hub:6443',
        caData: undefined,
        tlsServerName: undefined,
        proxyUrl: undefined,
        insecure: true,
      },
      credential: { clientCertificateData: CERT, clientKeyData: KEY },
    },
    {
      name: 'no credential at all (an anonymous user)',
      user: '{}',
      cluster: '{server: "http://127.0.0.1:8080"}',
      want: {
        server: 'http://127.0.0.1:8080',
        caData: undefined,
        tlsServerName: undefined,
        proxyUrl: undefined,
        insecure: false,
      },
      credential: {},
    },
  ])('$name', async ({ user, cluster, want, credential }) => {
    const path = write(tempDir(), 'config', kubeconfig(user, cluster));
    const loaded = loadKubeConfig({ path });
    const { server, caData, tlsServerName, insecure, credential: got } = await summary(loaded);
    expect({ server, caData, tlsServerName, proxyUrl: loaded.proxyUrl, insecure, credential: got }).toEqual({
      ...want,
      credential,
    });
  });

  it('reads the CA, certificate, key and token files relative to the kubeconfig, and reads them again after a minute', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'pki'));
    write(join(dir, 'pki'), 'ca.crt', CERT);
    write(join(dir, 'pki'), 'client.crt', CERT);
    write(join(dir, 'pki'), 'client.key', KEY);
    write(dir, 'token', `${SECRET}\n`);
    const path = write(
      dir,
      'config',
      kubeconfig(
        '{client-certificate: pki/client.crt, client-key: pki/client.key, tokenFile: token}',
        '{server: "https://hub:6443", certificate-authority: pki/ca.crt}',
      ),
    );
    let now = new Date('2026-11-24T12:00:00Z');
    const loaded = loadKubeConfig({ path, now: () => now });
    const first = await summary(loaded);
    write(dir, 'token', 'rotated');
    now = new Date(now.getTime() + 60_000);
    expect({ first, after: (await loaded.getCredential()).token }).toEqual({
      first: {
        source: path,
        context: 'ctx',
        server: 'https://hub:6443',
        caData: b64(CERT),
        tlsServerName: undefined,
        insecure: false,
        credential: { token: SECRET, clientCertificateData: CERT, clientKeyData: KEY },
      },
      after: 'rotated',
    });
  });

  it.each(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'])(
    'runs an exec credential plugin of %s once until shortly before its credential expires, with the cluster info',
    async (apiVersion) => {
      const dir = tempDir();
      let now = new Date('2026-11-24T12:00:00Z');
      const expires = new Date(now.getTime() + 10 * 60_000).toISOString();
      const command = plugin(dir, apiVersion, { token: SECRET, expirationTimestamp: expires });
      const path = write(
        dir,
        'config',
        kubeconfig(
          `{exec: {apiVersion: ${apiVersion}, command: "${command}", provideClusterInfo: true, env: [{name: A, value: b}]}}`,
          `{server: "https://hub:6443", certificate-authority-data: ${b64(CERT)}}`,
        ),
      );
      const loaded = loadKubeConfig({ path, now: () => now, env: { PATH: process.env.PATH } });
      const credentials = [await loaded.getCredential(), await loaded.getCredential()];
      const runsBefore = runs(dir);
      now = new Date(now.getTime() + 9.5 * 60_000); // within the refresh margin (60 s) before expiry
      await loaded.getCredential();
      loaded.invalidate(); // a 401
      await loaded.getCredential();
      const info = JSON.parse(readFileSync(join(dir, 'info'), 'utf8')) as unknown;
      expect({ tokens: credentials.map((c) => c.token), runsBefore, runsAfter: runs(dir), info }).toEqual({
        tokens: [SECRET, SECRET],
        runsBefore: 1,
        runsAfter: 3,
        info: {
          apiVersion,
          kind: 'ExecCredential',
          spec: {
            interactive: false,
            cluster: { server: 'https://hub:6443', 'certificate-authority-data': b64(CERT) },
          },
        },
      });
    },
  );

  it('names the kubeconfig user in a plugin failure, without its output', async () => {
    const dir = tempDir();
    const command = write(dir, 'fail.sh', `#!/bin/sh\necho ${SECRET}\nexit 3\n`);
    chmodSync(command, 0o755);
    const path = write(
      dir,
      'config',
      kubeconfig(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: "${command}"}}`),
    );
    const error = (await loadKubeConfig({ path })
      .getCredential()
      .catch((e: unknown) => e)) as Error;
    expect({ message: error.message, leaks: error.message.includes(SECRET) }).toEqual({
      message: `kubeconfig user "u": credential plugin "${command}" exited with code 3`,
      leaks: false,
    });
  });
});

describe('loadKubeConfig: bad input is an error naming the file and the field, never a secret', () => {
  it.each([
    { name: 'not YAML', text: 'clusters: [unclosed', want: /^the kubeconfig .*\/config is not valid YAML: / },
    { name: 'not a mapping', text: '- a\n- b\n', want: /^the kubeconfig .*\/config is not a mapping$/ },
    {
      name: 'no current context',
      text: kubeconfig(`{token: ${SECRET}}`).replace('current-context: ctx', ''),
      want: /^the kubeconfig .*\/config has no current context with a cluster: set current-context$/,
    },
    {
      name: 'a context naming a missing cluster',
      text: kubeconfig(`{token: ${SECRET}}`).replace('{cluster: c, user: u}', '{cluster: gone, user: u}'),
      want: /\/config: contexts\[name=ctx\]\.context\.cluster: cluster "gone" not found in /,
    },
    {
      name: 'a context naming a missing user',
      text: kubeconfig(`{token: ${SECRET}}`).replace('{cluster: c, user: u}', '{cluster: c, user: gone}'),
      want: /\/config: contexts\[name=ctx\]\.context\.user: user "gone" not found in /,
    },
    {
      name: 'a cluster without a server',
      text: kubeconfig(`{token: ${SECRET}}`, '{insecure-skip-tls-verify: true}'),
      want: /\/config: clusters\[name=c\]\.cluster\.server is missing$/,
    },
    {
      name: 'a server that is not a URL',
      text: kubeconfig(`{token: ${SECRET}}`, '{server: "://hub"}'),
      want: /\/config: clusters\[name=c\]\.cluster\.server is not a URL$/,
    },
    {
      name: 'a server without https://',
      text: kubeconfig(`{token: ${SECRET}}`, '{server: "hub:6443"}'),
      want: /\/config: clusters\[name=c\]\.cluster\.server must be an https:\/\/ \(or http:\/\/\) URL$/,
    },
    {
      name: 'CA data that is not base64',
      text: kubeconfig(`{token: ${SECRET}}`, '{server: "https://hub", certificate-authority-data: "not base64!"}'),
      want: /\/config: clusters\[name=c\]\.cluster\.certificate-authority-data is not base64$/,
    },
    {
      name: 'a missing CA file',
      text: kubeconfig(`{token: ${SECRET}}`, '{server: "https://hub", certificate-authority: nope.crt}'),
      want: /\/config: clusters\[name=c\]\.cluster\.certificate-authority: cannot read .*\/nope\.crt: ENOENT$/,
    },
    {
      name: 'a certificate without its key',
      text: kubeconfig(`{client-certificate-data: ${b64(CERT)}}`),
      want: /\/config: users\[name=u\]\.user: client-certificate and client-key go together; only one of them is set$/,
    },
    {
      name: 'a token that is not a string',
      text: kubeconfig('{token: [a, b]}'),
      want: /\/config: users\[name=u\]\.user\.token must be a string$/,
    },
    {
      name: 'a missing token file',
      text: kubeconfig('{tokenFile: /nonexistent/token}'),
      want: /\/config: users\[name=u\]\.user\.tokenFile: cannot read \/nonexistent\/token: ENOENT$/,
    },
    {
      name: 'an exec plugin of an unknown apiVersion',
      text: kubeconfig('{exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}'),
      want: /\/config: users\[name=u\]\.user\.exec\.apiVersion must be client\.authentication\.k8s\.io\/v1 or v1beta1$/,
    },
    {
      name: 'an exec plugin without a command',
      text: kubeconfig('{exec: {apiVersion: client.authentication.k8s.io/v1}}'),
      want: /\/config: users\[name=u\]\.user\.exec\.command must be a non-empty string$/,
    },
    {
      name: 'a legacy auth provider',
      text: kubeconfig('{auth-provider: {name: gcp}}'),
      want: /\/config: users\[name=u\]\.user\.auth-provider: auth providers are not supported; use a credential plugin/,
    },
    {
      name: 'basic authentication',
      text: kubeconfig(`{username: admin, password: ${SECRET}}`),
      want: /\/config: users\[name=u\]\.user\.username: basic authentication is not supported/,
    },
    {
      name: 'a SOCKS proxy',
      text: kubeconfig(`{token: ${SECRET}}`, '{server: "https://hub", proxy-url: "socks5://proxy:1080"}'),
      want: /\/config: clusters\[name=c\]\.cluster\.proxy-url: only an http:\/\/ proxy for an https:\/\/ server is supported$/,
    },
  ])('$name', ({ text, want }) => {
    const path = write(tempDir(), 'config', text);
    let message = '';
    try {
      loadKubeConfig({ path });
    } catch (error) {
      message = (error as Error).message;
    }
    expect({ matches: want.test(message) ? true : message, leaks: message.includes(SECRET) }).toEqual({
      matches: true,
      leaks: false,
    });
  });

  it('names a kubeconfig file that cannot be read', () => {
    expect(() => loadKubeConfig({ path: '/nonexistent/kubeconfig' })).toThrow(
      'cannot read the kubeconfig /nonexistent/kubeconfig: ENOENT',
    );
  });
});
