import { McoError } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import { parseExecCredential, runExecPlugin, redactTokens, type ExecConfig } from '../src/index.js';
import { credentialScript, pluginDir } from './plugin-scripts.js';

const V1 = 'client.authentication.k8s.io/v1' as const;
const cluster = {
  server: 'https://10.0.0.1:443',
  'certificate-authority-data': 'Q0E=',
  config: { audience: 'fleet' },
};

describe('runExecPlugin', () => {
  it('passes the cluster and the exec extension in KUBERNETES_EXEC_INFO when provideClusterInfo is true', async () => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok-1', expirationTimestamp: '2030-01-01T00:00:00Z' });
    const exec: ExecConfig = {
      apiVersion: V1,
      command,
      env: [{ name: 'EXTRA', value: 'x1' }],
      provideClusterInfo: true,
    };

    const credential = await runExecPlugin(exec, { provider: 'google', cluster });

    expect(credential).toEqual({ token: 'tok-1', expiresAt: new Date('2030-01-01T00:00:00Z') });
    expect(JSON.parse(dir.read('exec-info'))).toEqual({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: { interactive: false, cluster },
    });
    expect(dir.read('extra')).toBe('x1');
  });

  it('leaves the cluster out of KUBERNETES_EXEC_INFO when provideClusterInfo is false', async () => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 'tok-2' }, 'client.authentication.k8s.io/v1beta1');
    const exec: ExecConfig = { apiVersion: 'client.authentication.k8s.io/v1beta1', command, args: ['--x'] };

    expect(await runExecPlugin(exec, { provider: 'p', cluster })).toEqual({ token: 'tok-2' });
    expect(JSON.parse(dir.read('exec-info'))).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  it('returns a client certificate credential', async () => {
    const dir = pluginDir();
    const command = credentialScript(dir, { clientCertificateData: 'CERT', clientKeyData: 'KEY' });
    expect(await runExecPlugin({ apiVersion: V1, command }, { provider: 'p' })).toEqual({
      clientCertificateData: 'CERT',
      clientKeyData: 'KEY',
    });
  });

  it("hands a failed plugin's standard error to onStderr (the log), not to the error", async () => {
    const dir = pluginDir();
    const command = dir.script(
      'plugin.sh',
      'echo "error: token ya29.a0AfB_byC1234567890abcdefXYZ expired (HTTP 401)" >&2; exit 1',
    );
    const heard: string[] = [];
    const error = (await runExecPlugin(
      { apiVersion: V1, command },
      { provider: 'google', onStderr: (text) => heard.push(text) },
    ).catch((e: unknown) => e)) as McoError;
    expect({ heard, inError: error.message.includes('ya29') }).toEqual({
      heard: ['error: token [redacted 33 characters] expired (HTTP 401)'],
      inError: false,
    });
  });

  it.each([
    ['a hex token', 'bad token 7bcd9545f2915aafc77d683165d798a2', 'bad token [redacted 32 characters]'],
    ['a JWT', 'jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln rejected', 'jwt [redacted 41 characters] rejected'],
    ['base64 with / and =', 'key=QUJDREVGR0hJSktMTU5PUA/+==;', '[redacted 30 characters];'],
    ['15 characters, kept', 'id abcdefghijklmno ok', 'id abcdefghijklmno ok'],
    [
      'ordinary words and numbers',
      'error: HTTP 401 Unauthorized (retry in 30s)',
      'error: HTTP 401 Unauthorized (retry in 30s)',
    ],
  ])('redactTokens: %s', (_name, text, redacted) => {
    expect(redactTokens(text)).toBe(redacted);
  });

  it.each([
    {
      name: 'a plugin that exits non-zero is reported with its exit code; its standard error goes to the log only',
      body: 'echo "please run gcloud auth login" >&2; exit 3',
      message: `access provider "google": credential plugin "CMD" exited with code 3; its standard error is in mco's log`,
      code: 'Unauthorized',
    },
    {
      name: 'a plugin that prints something other than JSON is reported without quoting it',
      body: 'echo "secret-token-value"',
      message:
        'access provider "google": credential plugin "CMD" printed something that is not JSON (19 bytes); expected an ExecCredential',
      code: 'Unauthorized',
    },
    {
      name: 'a plugin that answers in another apiVersion is refused',
      body: `echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'`,
      message:
        'access provider "google": credential plugin "CMD" printed an ExecCredential of apiVersion "client.authentication.k8s.io/v1beta1", expected "client.authentication.k8s.io/v1"',
      code: 'Unauthorized',
    },
    {
      name: 'a plugin that prints an ExecCredential without a credential is refused',
      body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'`,
      message:
        'access provider "google": credential plugin "CMD" printed an ExecCredential with neither status.token nor a client certificate',
      code: 'Unauthorized',
    },
    {
      name: 'a plugin that hangs is killed after the timeout',
      body: 'sleep 10',
      message: 'access provider "google": credential plugin "CMD" did not finish within 300 ms',
      code: 'Timeout',
    },
  ])('$name', async ({ body, message, code }) => {
    const dir = pluginDir();
    const command = dir.script('plugin.sh', body);
    const started = Date.now();
    const error = await runExecPlugin({ apiVersion: V1, command }, { provider: 'google', timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McoError);
    expect({ code: (error as McoError).code, message: (error as McoError).message }).toEqual({
      code,
      message: message.replace('CMD', command),
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('names the install hint when the command does not exist', async () => {
    const error = (await runExecPlugin(
      {
        apiVersion: V1,
        command: '/nonexistent/gke-gcloud-auth-plugin',
        installHint: 'Install gke-gcloud-auth-plugin.',
      },
      { provider: 'google' },
    ).catch((e: unknown) => e)) as McoError;
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'Unauthorized',
      message:
        'access provider "google": credential plugin "/nonexistent/gke-gcloud-auth-plugin" was not found (Install gke-gcloud-auth-plugin.)',
    });
  });

  it('refuses interactiveMode Always without running anything', async () => {
    const dir = pluginDir();
    const command = credentialScript(dir, { token: 't' });
    const error = (await runExecPlugin({ apiVersion: V1, command, interactiveMode: 'Always' }, { provider: 'p' }).catch(
      (e: unknown) => e,
    )) as McoError;
    expect(error.message).toBe(
      `access provider "p": credential plugin "${command}" needs a terminal (interactiveMode: Always) and mco has none`,
    );
    expect(dir.calls()).toBe(0);
  });
});

describe('parseExecCredential', () => {
  it.each([
    {
      name: 'a v1 token with expiry',
      status: { token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' },
      want: { token: 't', expiresAt: new Date('2030-01-01T00:00:00Z') },
    },
    { name: 'a token without expiry', status: { token: 't' }, want: { token: 't' } },
    {
      name: 'a certificate and a token together',
      status: { token: 't', clientCertificateData: 'c', clientKeyData: 'k' },
      want: { token: 't', clientCertificateData: 'c', clientKeyData: 'k' },
    },
  ])('reads $name', ({ status, want }) => {
    expect(parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status }), V1)).toEqual(want);
  });

  it.each([
    {
      name: 'a certificate without its key',
      status: { clientCertificateData: 'c' },
      message: 'printed an ExecCredential with only one of status.clientCertificateData and status.clientKeyData',
    },
    {
      name: 'an unparsable expiry',
      status: { token: 't', expirationTimestamp: 'soon' },
      message: 'printed an invalid status.expirationTimestamp',
    },
  ])('refuses $name', ({ status, message }) => {
    expect(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status }), V1)).toThrow(
      message,
    );
  });
});
