/** Closed set of error codes at mco's I/O edges. */
export type McoErrorCode =
  | 'Unavailable' // the remote end cannot be reached or answered 5xx
  | 'Timeout'
  | 'Unauthorized' // 401/403, or credentials could not be obtained
  | 'NotFound'
  | 'Conflict' // 409: a stale write
  | 'Invalid' // the remote answer or the input does not have the expected shape
  | 'Internal';

/** The one error type of mco's I/O edges: a code, a cause, and whether retrying may help. */
export class McoError extends Error {
  override readonly name = 'McoError';
  constructor(
    readonly code: McoErrorCode,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const RETRYABLE: ReadonlySet<McoErrorCode> = new Set(['Unavailable', 'Timeout', 'Conflict']);

/** Normalises anything thrown by a client library into an McoError. */
export function toMcoError(error: unknown, context = ''): McoError {
  if (error instanceof McoError) return error;
  const prefix = context ? `${context}: ` : '';
  const status = httpStatusOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const code: McoErrorCode =
    status === 401 || status === 403
      ? 'Unauthorized'
      : status === 404
        ? 'NotFound'
        : status === 409
          ? 'Conflict'
          : status === 400 || status === 422
            ? 'Invalid'
            : (error as { name?: string })?.name === 'AbortError' ||
                (error as { name?: string })?.name === 'TimeoutError'
              ? 'Timeout'
              : status === undefined || status >= 500 || status === 429
                ? 'Unavailable'
                : 'Internal';
  return new McoError(code, `${prefix}${message}`, RETRYABLE.has(code), { cause: error });
}

/** The HTTP status of a client-node ApiException or a fetch Response-like error, if any. */
export function httpStatusOf(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown; status?: unknown } | null;
  for (const v of [e?.code, e?.statusCode, e?.status]) if (typeof v === 'number' && v >= 100 && v < 600) return v;
  return undefined;
}
