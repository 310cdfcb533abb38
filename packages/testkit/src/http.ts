import { request } from 'node:https';

export interface RawResponse {
  readonly status: number;
  readonly body: string;
}

export interface RawRequestOptions {
  readonly method?: string;
  /** Extra headers, e.g. `accept` for Table output or `content-type` for a patch. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly timeoutMs?: number;
}

/**
 * One HTTPS request to an apiserver, verified against its CA. The default
 * timeout is generous for a loaded machine; polling loops pass a short one.
 * Each request has its own connection: kube-apiserver closes idle connections
 * after 90 s without announcing it (no Keep-Alive header), so a pooled one can
 * be dead by the time it is reused — a test that blocked its event loop for
 * minutes once wrote into such a socket (EPIPE).
 */
export function rawRequest(
  server: string,
  caPem: string,
  token: string,
  path: string,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server),
      {
        method: options.method ?? 'GET',
        ca: caPem,
        agent: false,
        headers: { accept: 'application/json', ...options.headers, authorization: `Bearer ${token}` },
        timeout: timeoutMs,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Status code, reason and message of a failed API call (client-node's ApiException or anything else). */
export interface ApiErrorInfo {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string;
}

export function apiErrorOf(error: unknown): ApiErrorInfo {
  const e = error as { code?: unknown; body?: unknown; message?: unknown };
  let body: unknown = e?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // keep the text
    }
  }
  const status = typeof body === 'object' && body !== null ? (body as { reason?: unknown; message?: unknown }) : {};
  const message =
    typeof status.message === 'string'
      ? status.message
      : typeof body === 'string' && body
        ? body
        : String(e?.message ?? error);
  return {
    code: typeof e?.code === 'number' ? e.code : undefined,
    reason: typeof status.reason === 'string' ? status.reason : undefined,
    message,
  };
}
