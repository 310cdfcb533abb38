import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../src/http.js';

// A server in ANOTHER process that answers like Go's net/http (no Keep-Alive
// header, so a client cannot know its idle limit) and, like kube-apiserver
// (IdleTimeout 90 s), closes connections left idle, here after 100 ms.
const SERVER = `
const tls = require('node:tls');
const fs = require('node:fs');
const [key, cert] = process.argv.slice(1).map((f) => fs.readFileSync(f));
const server = tls.createServer({ key, cert }, (socket) => {
  let idle;
  const arm = () => { clearTimeout(idle); idle = setTimeout(() => socket.destroy(), 100); };
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk) => {
    buffered += chunk;
    while (buffered.includes('\\r\\n\\r\\n')) {
      buffered = buffered.slice(buffered.indexOf('\\r\\n\\r\\n') + 4);
      socket.write('HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nContent-Length: 2\\r\\n\\r\\nok');
      arm();
    }
  });
  socket.on('error', () => {});
  arm();
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

/** Blocks this process's event loop, as a synchronous build inside a test once did (execFileSync for minutes). */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('requests to an apiserver', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mco-testkit-http-'));
  let server: ChildProcess;
  let url: string;
  let cert: string;

  beforeAll(async () => {
    const [keyFile, certFile] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(certFile, 'utf8');
    server = spawn(process.execPath, ['-e', SERVER, keyFile, certFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise<string>((resolve, reject) => {
      server.stdout!.setEncoding('utf8').once('data', (line: string) => resolve(line.trim()));
      server.once('exit', (code) => reject(new Error(`test server exited (${code})`)));
    });
    url = `https://127.0.0.1:${port}`;
  });

  afterAll(() => {
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  // The root cause of "write EPIPE" in a whole integration suite: helm was built
  // synchronously inside a test for 212 s; meanwhile kube-apiserver closed the
  // idle keep-alive connection of Node's global agent, and the next request,
  // issued before the loop could see the close, was written into the dead socket.
  it('succeeds after the event loop was blocked for longer than the server keeps idle connections', async () => {
    const first = await rawRequest(url, cert, 'token', '/');
    await new Promise((resolve) => setTimeout(resolve, 20)); // the connection is back in its pool
    blockEventLoop(500);
    const second = await rawRequest(url, cert, 'token', '/', { method: 'PATCH', body: JSON.stringify({ kind: 'x' }) });
    expect([first, second]).toEqual([
      { status: 200, body: 'ok' },
      { status: 200, body: 'ok' },
    ]);
  });
});
