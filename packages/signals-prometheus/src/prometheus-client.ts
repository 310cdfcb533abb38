import { McoError, type McoErrorCode } from '@mco/runtime';

export interface InstantQueryOptions {
  /** Evaluation time; mco passes its clock so that every query of a cluster sees the same instant. */
  readonly time: Date;
  readonly headers?: Readonly<Record<string, string>>;
  readonly maxResponseBytes: number;
  readonly signal?: AbortSignal;
}

/**
 * One number, or `undefined` when the query selected no series (unknown).
 * Anything else (an error, a partial answer with warnings, several series, NaN)
 * is an McoError: the field stays unknown and the reason is reported.
 */
export type QueryValue = number | undefined;

/** `<base>/api/v1/query`, accepting a base URL or the query endpoint itself (GKE's metricsEndpoint). */
export function queryEndpoint(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return trimmed.endsWith('/api/v1/query') ? trimmed : `${trimmed}/api/v1/query`;
}

/** Runs a PromQL instant query (`POST /api/v1/query`) against a Prometheus-compatible API. */
export async function queryInstant(
  endpoint: string,
  promql: string,
  options: InstantQueryOptions,
): Promise<QueryValue> {
  const body = new URLSearchParams({ query: promql, time: (options.time.getTime() / 1000).toFixed(3) });
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        ...options.headers,
        'Content-Type': 'application/x-www-form-urlencoded',
        Accept: 'application/json',
      },
      body,
      ...(options.signal ? { signal: options.signal } : {}),
      redirect: 'error',
    });
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new McoError(
      'Unavailable',
      `cannot reach ${redactUrl(endpoint)}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      true,
      {
        cause: error,
      },
    );
  }
  const text = await readLimited(response, options.maxResponseBytes, options.signal);
  let doc: {
    status?: unknown;
    data?: { resultType?: unknown; result?: unknown };
    errorType?: unknown;
    error?: unknown;
    warnings?: unknown;
  };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    throw new McoError(
      response.ok ? 'Invalid' : codeOfStatus(response.status),
      `HTTP ${response.status}: the answer is not JSON (${text.length} bytes)`,
      !response.ok,
    );
  }
  if (!response.ok || doc.status !== 'success') {
    const code =
      doc.errorType === 'timeout'
        ? 'Timeout'
        : doc.errorType === 'bad_data'
          ? 'Invalid'
          : codeOfStatus(response.status);
    throw new McoError(
      code,
      `HTTP ${response.status}: ${String(doc.errorType ?? 'error')}: ${String(doc.error ?? 'no message')}`,
      code !== 'Invalid',
    );
  }
  if (Array.isArray(doc.warnings) && doc.warnings.length) {
    throw new McoError('Unavailable', `partial answer: ${doc.warnings.map(String).join('; ')}`, true);
  }
  const { resultType, result } = doc.data ?? {};
  if (resultType === 'scalar') return sampleValue(result);
  if (resultType !== 'vector' || !Array.isArray(result)) {
    throw new McoError('Invalid', `expected an instant vector or a scalar, got ${String(resultType)}`, false);
  }
  if (result.length === 0) return undefined;
  if (result.length > 1) {
    throw new McoError(
      'Invalid',
      `${result.length} series answered where one was expected (check clusterLabels and the query's aggregation)`,
      false,
    );
  }
  return sampleValue((result[0] as { value?: unknown }).value);
}

function sampleValue(sample: unknown): number {
  const raw = Array.isArray(sample) ? sample[1] : undefined;
  const value = typeof raw === 'string' ? Number(raw) : NaN;
  if (!Number.isFinite(value))
    throw new McoError('Invalid', `the value ${JSON.stringify(raw)} is not a finite number`, false);
  return value;
}

async function readLimited(response: Response, max: number, signal?: AbortSignal): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > max) {
    await response.body?.cancel();
    throw new McoError('Invalid', `the answer is larger than maxResponseBytes (${max})`, false);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    if (signal?.aborted) {
      await reader.cancel();
      throw signal.reason;
    }
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new McoError('Invalid', `the answer is larger than maxResponseBytes (${max})`, false);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function codeOfStatus(status: number): McoErrorCode {
  if (status === 401 || status === 403) return 'Unauthorized';
  if (status === 404) return 'NotFound';
  if (status === 400 || status === 422) return 'Invalid';
  return 'Unavailable';
}

/** The URL without credentials or query string, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
