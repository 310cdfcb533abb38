import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitServer, type GitServer } from '../src/git.js';

// The server runs in this process: the git client must run asynchronously.
const git = async (args: string[], cwd?: string) =>
  (
    await promisify(execFile)('git', args, { cwd, env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } })
  ).stdout.trim();

describe('the git HTTP server', () => {
  let server: GitServer;
  const dir = mkdtempSync(join(tmpdir(), 'mco-testkit-git-'));

  beforeAll(async () => {
    server = await startGitServer();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a committed tree over smart HTTP, and each new commit', async () => {
    const first = server.commit('web', { 'deploy/web.yaml': 'kind: ConfigMap\n', README: 'one\n' });
    expect(server.repoUrl('web')).toBe(`${server.url}/web.git`);
    await git(['clone', '--quiet', '--branch', 'main', server.repoUrl('web'), join(dir, 'clone')]);
    expect(readFileSync(join(dir, 'clone', 'deploy', 'web.yaml'), 'utf8')).toBe('kind: ConfigMap\n');
    expect(await git(['rev-parse', 'HEAD'], join(dir, 'clone'))).toBe(first);

    const second = server.commit('web', { README: 'two\n' });
    expect(second).not.toBe(first);
    expect(await git(['ls-remote', server.repoUrl('web'), 'refs/heads/main'])).toBe(`${second}\trefs/heads/main`);
  });

  it('refuses a push and an unknown repository', async () => {
    await expect(git(['push', server.repoUrl('web'), 'HEAD:refs/heads/other'], join(dir, 'clone'))).rejects.toThrow();
    await expect(git(['ls-remote', `${server.url}/missing.git`])).rejects.toThrow();
    expect(await git(['ls-remote', '--heads', server.repoUrl('web')])).not.toContain('other');
  });
});
