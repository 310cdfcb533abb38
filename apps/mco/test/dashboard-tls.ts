import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key, as PEM files on disk and their text. */
export interface Pem {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function pem(dir: string, name: string): Pem {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

/**
 * A throwaway CA (openssl, valid for a day) that signs the dashboard's serving
 * certificate and proxies' client certificates for the tests.
 */
export function testCA(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `mco-tls-${name}-`));
  openssl(
    dir,
    'req',
    '-x509',
    ...EC,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  const ca = pem(dir, 'ca');
  let serial = 0;
  const sign = (cn: string, extensions: string): Pem => {
    const file = `leaf-${++serial}`;
    writeFileSync(join(dir, `${file}.ext`), extensions);
    openssl(dir, 'req', ...EC, '-keyout', `${file}.key`, '-out', `${file}.csr`, '-subj', `/CN=${cn}`);
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${file}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-set_serial',
      String(serial),
      '-days',
      '1',
      '-extfile',
      `${file}.ext`,
      '-out',
      `${file}.crt`,
    );
    return pem(dir, file);
  };
  return {
    ...ca,
    /** A client certificate with this common name (extended key usage clientAuth, or `usage`). */
    client: (cn: string, usage = 'clientAuth') => sign(cn, `extendedKeyUsage=${usage}\n`),
    /** A serving certificate for 127.0.0.1 and localhost. */
    server: () => sign('mco-dashboard', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'),
  };
}

/** A GET over https trusting `ca`, with `client`'s certificate if given; resolves with the response (a stream). */
export function tlsGet(
  url: string,
  options: { ca: string; client?: Pem; headers?: Record<string, string> },
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    https
      .get(url, {
        ca: options.ca,
        ...(options.client ? { cert: options.client.cert, key: options.client.key } : {}),
        headers: options.headers ?? {},
        // A fresh connection each time: no TLS session of another request's certificate is resumed.
        agent: false,
      })
      .on('response', resolve)
      .on('error', reject);
  });
}

/** Every complete `view` event of an /api/stream body, parsed. */
export function viewEvents(body: string): unknown[] {
  return [...body.matchAll(/event: view\ndata: (.*)\n\n/g)].map((match) => JSON.parse(match[1]!) as unknown);
}

/** The status of a GET, and its body; for /api/stream the first `view` event, after which it hangs up. */
export async function tlsRead(
  url: string,
  options: Parameters<typeof tlsGet>[1],
): Promise<{ status: number; body: string; view?: unknown }> {
  const res = await tlsGet(url, options);
  return firstView(res, res.statusCode!, () => res.destroy());
}

/** The same over plain http (the dashboard on 127.0.0.1 without TLS). */
export async function httpRead(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; view?: unknown }> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  // Node's ReadableStream is async-iterable; the DOM typings do not say so.
  return firstView(res.body! as unknown as AsyncIterable<Uint8Array>, res.status, () => abort.abort());
}

async function firstView(
  chunks: AsyncIterable<unknown>,
  status: number,
  hangUp: () => void,
): Promise<{ status: number; body: string; view?: unknown }> {
  let body = '';
  let view: unknown;
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    body += typeof chunk === 'string' ? chunk : decoder.decode(chunk as Uint8Array, { stream: true });
    [view] = viewEvents(body);
    if (view !== undefined) break;
  }
  hangUp();
  return view === undefined ? { status, body } : { status, body, view };
}
