import { request } from 'node:https';

export interface RawResponse {
  readonly status: number;
  readonly body: string;
}

/** One HTTPS request to an apiserver, verified against its CA; short timeout for polling. */
export function rawRequest(
  server: string,
  caPem: string,
  token: string,
  method: string,
  path: string,
  timeoutMs = 5_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server),
      {
        method,
        ca: caPem,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
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
    req.end();
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
