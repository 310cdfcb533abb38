import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAuth } from '../src/index.js';

describe('createAuth', () => {
  it('gets a bearer token from an ExecCredential plugin once and reuses it until it nears expiry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-prom-exec-'));
    const plugin = join(dir, 'plugin.sh');
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 'ya29.exec', expirationTimestamp: '2026-01-01T01:00:00Z' },
    });
    writeFileSync(plugin, `#!/bin/sh\necho run >> '${dir}/runs'\necho '${credential}'\n`);
    chmodSync(plugin, 0o755);
    let now = new Date('2026-01-01T00:00:00Z');
    const auth = createAuth(
      { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: plugin } },
      { now: () => now },
    );
    const first = await Promise.all([auth.headers(), auth.headers()]);
    now = new Date('2026-01-01T00:59:30Z'); // within a minute of expiry: refreshed
    const later = await auth.headers();
    expect({ first, later, runs: readFileSync(join(dir, 'runs'), 'utf8').trim().split('\n').length }).toEqual({
      first: [{ Authorization: 'Bearer ya29.exec' }, { Authorization: 'Bearer ya29.exec' }],
      later: { Authorization: 'Bearer ya29.exec' },
      runs: 2,
    });
  });

  it('builds basic auth from a password file and reports an empty token file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-prom-basic-'));
    writeFileSync(join(dir, 'password'), 's3cret\n');
    writeFileSync(join(dir, 'empty'), '\n');
    const basic = await createAuth({ basicAuth: { username: 'mco', passwordFile: join(dir, 'password') } }).headers();
    await expect(createAuth({ bearerTokenFile: join(dir, 'empty') }).headers()).rejects.toThrow(
      `bearerTokenFile ${join(dir, 'empty')} is empty`,
    );
    expect(basic).toEqual({ Authorization: `Basic ${Buffer.from('mco:s3cret').toString('base64')}` });
  });
});
