/** Structured logger handed to every part of mco; one JSON object per line. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}
export type LogFields = Readonly<Record<string, unknown>>;
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * Keys whose string values are never logged, whatever their nesting. Matched
 * at the end of the key, so `clientSecret` and `bearerToken` are hidden but
 * `tokenFile`, `secretName` or `syncClusterSecrets` (a namespace) are not:
 * only values that are secrets are redacted, never settings that mention one.
 * A plural "secrets" names Kubernetes Secrets (objects, a namespace), not
 * secret values; a Secret's name goes under `secretName`.
 */
const SECRET_KEY =
  /(tokens?|secret|passwords?|passwd|authorization|credentials?|bearer|private-?key|key-?data|cookies?)$/i;
export const REDACTED = '[REDACTED]';

/** Replaces the string values of secret keys; also turns Errors into {message, code}. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return '[…]';
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { message: value.message, ...(code !== undefined ? { code } : {}) };
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = SECRET_KEY.test(k) && isSecretValue(v) ? REDACTED : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}

/** A string, or a list of strings (e.g. several tokens); booleans, numbers and objects are not secrets themselves. */
function isSecretValue(value: unknown): boolean {
  return typeof value === 'string' || (Array.isArray(value) && value.some((v) => typeof v === 'string'));
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** Where lines go; stderr by default. */
  readonly write?: (line: string) => void;
  readonly now?: () => Date;
}

export function createLogger(options: LoggerOptions = {}, bound: LogFields = {}): Logger {
  const min = LEVELS[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const log = (level: LogLevel) => (message: string, fields?: LogFields) => {
    if (LEVELS[level] < min) return;
    const record = redact({ ...bound, ...fields }) as Record<string, unknown>;
    write(`${JSON.stringify({ time: now().toISOString(), level, msg: message, ...record })}\n`);
  };
  return {
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: (fields) => createLogger(options, { ...bound, ...fields }),
  };
}

/** A logger that drops everything, for tests and library defaults. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
