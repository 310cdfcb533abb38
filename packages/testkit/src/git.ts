import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A read-only git server over HTTP on loopback: Git's own `git http-backend`
 * (the smart HTTP protocol, which Flux's source-controller speaks) behind a
 * small Node HTTP server. Repositories are bare ones under `root`, written
 * with `commit()`; nothing can push over HTTP.
 */
export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The directory holding the bare repositories (`<name>.git`). */
  readonly root: string;
  /** The clone URL of repository `name`: `<url>/<name>.git`. */
  repoUrl(name: string): string;
  /**
   * Commits `files` (path → content) as the whole tree of `branch` of
   * repository `name` (created on first use) and returns the commit's sha1.
   */
  commit(
    name: string,
    files: Readonly<Record<string, string>>,
    options?: { branch?: string; message?: string },
  ): string;
  stop(): Promise<void>;
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'mco test',
  GIT_AUTHOR_EMAIL: 'test@mco.invalid',
  GIT_COMMITTER_NAME: 'mco test',
  GIT_COMMITTER_EMAIL: 'test@mco.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

const git = (args: readonly string[], cwd?: string): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_ENV } }).trim();

/** The CGI environment `git http-backend` reads (RFC 3875), for one request. */
function cgiEnv(request: IncomingMessage, root: string): NodeJS.ProcessEnv {
  const url = new URL(request.url ?? '/', 'http://git.invalid');
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(', ') : (value ?? '');
  };
  return {
    PATH: process.env.PATH,
    ...GIT_ENV,
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    REQUEST_METHOD: request.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: header('content-type'),
    CONTENT_LENGTH: header('content-length'),
    HTTP_CONTENT_ENCODING: header('content-encoding'),
    HTTP_GIT_PROTOCOL: header('git-protocol'),
    REMOTE_ADDR: request.socket.remoteAddress ?? '127.0.0.1',
  };
}

/** Runs `git http-backend` for one request and relays its CGI response. */
function serveGit(root: string, request: IncomingMessage, response: ServerResponse): void {
  const backend = spawn('git', ['http-backend'], { env: cgiEnv(request, root), stdio: ['pipe', 'pipe', 'pipe'] });
  let head = Buffer.alloc(0);
  let headersSent = false;
  let stderr = '';
  backend.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  backend.stdout.on('data', (chunk: Buffer) => {
    if (headersSent) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? { at: crlf, skip: 4 } : lf >= 0 ? { at: lf, skip: 2 } : null;
    if (!end) return;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end.at).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const [name, value] = [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
      else headers[name] = value;
    }
    response.writeHead(status, headers);
    headersSent = true;
    response.write(head.subarray(end.at + end.skip));
  });
  backend.on('close', (code) => {
    if (!headersSent) response.writeHead(500, { 'content-type': 'text/plain' }).end(`git http-backend: ${stderr}`);
    else response.end();
    if (code !== 0 && headersSent) response.destroy();
  });
  backend.on('error', (error) => {
    if (!headersSent) response.writeHead(500).end(error.message);
  });
  backend.stdin.on('error', () => undefined);
  request.pipe(backend.stdin);
}

/** Starts a git server on 127.0.0.1 and a free port (see GitServer). */
export async function startGitServer(): Promise<GitServer> {
  const root = mkdtempSync(join(tmpdir(), 'mco-git-'));
  const server = createServer((request, response) => serveGit(root, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    root,
    repoUrl: (name) => `${url}/${name}.git`,
    commit(name, files, { branch = 'main', message = 'update' } = {}) {
      const bare = join(root, `${name}.git`);
      if (!existsSync(bare)) git(['init', '--quiet', '--bare', `--initial-branch=${branch}`, bare]);
      const work = mkdtempSync(join(tmpdir(), 'mco-git-work-'));
      try {
        git(['init', '--quiet', `--initial-branch=${branch}`, work]);
        for (const [path, content] of Object.entries(files)) {
          mkdirSync(dirname(join(work, path)), { recursive: true });
          writeFileSync(join(work, path), content);
        }
        git(['add', '--all'], work);
        git(['commit', '--quiet', '--allow-empty', '-m', message], work);
        git(['push', '--quiet', '--force', bare, `HEAD:refs/heads/${branch}`], work);
        return git(['rev-parse', 'HEAD'], work);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
