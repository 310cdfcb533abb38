import { execFile } from 'node:child_process';
import { McoError, readBoundedJson, toMcoError } from '@mco/runtime';
import { z } from 'zod';

/** An OAuth access token for Google APIs, cached until shortly before it expires. */
export interface TokenSource {
  token(abort?: AbortSignal): Promise<string>;
  /** Forget the cached token (after a 401), so the next call fetches a new one. */
  invalidate(): void;
}

export const DEFAULT_METADATA_URL = 'http://metadata.google.internal';

export const AuthConfigSchema = z
  .discriminatedUnion('type', [
    z.strictObject({
      /** The metadata server of GCE/GKE (Workload Identity): no secret on disk. */
      type: z.literal('metadata'),
      baseUrl: z.url({ protocol: /^https?$/ }).default(DEFAULT_METADATA_URL),
    }),
    z.strictObject({
      /** A command that prints an access token, e.g. `gcloud auth application-default print-access-token`. */
      type: z.literal('exec'),
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      /** How long a printed token is reused when the command does not say when it expires. */
      cacheSeconds: z.number().positive().default(300),
    }),
  ])
  .default({ type: 'metadata', baseUrl: DEFAULT_METADATA_URL });
export type AuthConfig = z.output<typeof AuthConfigSchema>;

interface FetchedToken {
  readonly token: string;
  /** Seconds of validity from now, when known. */
  readonly expiresInSeconds?: number;
}

export interface TokenSourceOptions {
  readonly now: () => Date;
  readonly timeoutMs: number;
  readonly fetch?: typeof fetch;
}

export function createTokenSource(config: AuthConfig, options: TokenSourceOptions): TokenSource {
  return config.type === 'metadata'
    ? cachedTokenSource((abort) => fetchMetadataToken(config.baseUrl, options, abort), options.now, undefined)
    : cachedTokenSource(
        (abort) => execToken(config.command, config.args, options.timeoutMs, abort),
        options.now,
        config.cacheSeconds,
      );
}

/**
 * Caches a token until a minute before it expires (or half its lifetime when
 * shorter); concurrent callers share one fetch.
 */
export function cachedTokenSource(
  fetchToken: (abort?: AbortSignal) => Promise<FetchedToken>,
  now: () => Date,
  defaultLifetimeSeconds: number | undefined,
): TokenSource {
  let cached: { token: string; refreshAt: number } | undefined;
  let inflight: Promise<string> | undefined;
  return {
    async token(abort) {
      if (cached && now().getTime() < cached.refreshAt) return cached.token;
      inflight ??= (async () => {
        try {
          const fetched = await fetchToken(abort);
          const lifetime = fetched.expiresInSeconds ?? defaultLifetimeSeconds ?? 0;
          const margin = Math.min(60, lifetime / 2);
          cached = { token: fetched.token, refreshAt: now().getTime() + (lifetime - margin) * 1000 };
          return fetched.token;
        } finally {
          inflight = undefined;
        }
      })();
      return inflight;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

const MetadataTokenSchema = z.looseObject({
  access_token: z.string().min(1),
  expires_in: z.number().nonnegative().optional(),
  token_type: z.string().optional(),
});

/** `GET {baseUrl}/computeMetadata/v1/instance/service-accounts/default/token` with `Metadata-Flavor: Google`. */
async function fetchMetadataToken(
  baseUrl: string,
  options: TokenSourceOptions,
  abort?: AbortSignal,
): Promise<FetchedToken> {
  const url = `${baseUrl.replace(/\/+$/, '')}/computeMetadata/v1/instance/service-accounts/default/token`;
  const signal = abort
    ? AbortSignal.any([abort, AbortSignal.timeout(options.timeoutMs)])
    : AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, { headers: { 'Metadata-Flavor': 'Google' }, signal });
  } catch (error) {
    throw unauthorized(`metadata server ${baseUrl} did not answer: ${toMcoError(error).message}`, error);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw unauthorized(`metadata server ${baseUrl} answered ${response.status} for the default service account token`);
  }
  // Anything else at that address (a proxy, a captive portal) is not the metadata server.
  if (response.headers.get('metadata-flavor') !== 'Google') {
    await response.body?.cancel();
    throw unauthorized(`${baseUrl} is not a metadata server (no Metadata-Flavor: Google header)`);
  }
  const parsed = MetadataTokenSchema.safeParse(await readBoundedJson(response, 64 * 1024));
  if (!parsed.success) throw unauthorized(`metadata server ${baseUrl} sent no access_token`);
  return { token: parsed.data.access_token, expiresInSeconds: parsed.data.expires_in };
}

const ExecTokenSchema = z.looseObject({ access_token: z.string().min(1), expires_in: z.number().optional() });
// `gcloud config config-helper --format=json`
const ExecConfigHelperSchema = z.looseObject({
  credential: z.looseObject({ access_token: z.string().min(1), token_expiry: z.string().optional() }),
});

/**
 * Runs the command (no shell) and reads a token from its output: a bare token,
 * `{"access_token", "expires_in"}`, or gcloud's config-helper JSON. The output
 * never reaches an error message or a log.
 */
function execToken(command: string, args: readonly string[], timeoutMs: number, abort?: AbortSignal) {
  return new Promise<FetchedToken>((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: timeoutMs, maxBuffer: 64 * 1024, signal: abort, windowsHide: true },
      (error, stdout, stderr) => {
        if (error) {
          const detail = scrub(String(stderr)).split('\n')[0]?.slice(0, 200) ?? '';
          const why = error.killed ? `timed out after ${timeoutMs} ms` : `failed (${error.code ?? error.name})`;
          reject(unauthorized(`token command ${command} ${why}${detail ? `: ${detail}` : ''}`));
          return;
        }
        const text = String(stdout).trim();
        try {
          resolve(parseExecOutput(text));
        } catch {
          reject(unauthorized(`token command ${command} printed no access token`));
        }
      },
    );
  });
}

export function parseExecOutput(text: string, now: Date = new Date()): FetchedToken {
  if (text.startsWith('{')) {
    const json: unknown = JSON.parse(text);
    const plain = ExecTokenSchema.safeParse(json);
    if (plain.success) return { token: plain.data.access_token, expiresInSeconds: plain.data.expires_in };
    const parsed = ExecConfigHelperSchema.parse(json);
    const expiry = parsed.credential.token_expiry ? Date.parse(parsed.credential.token_expiry) : NaN;
    return {
      token: parsed.credential.access_token,
      ...(Number.isFinite(expiry) ? { expiresInSeconds: Math.max(0, (expiry - now.getTime()) / 1000) } : {}),
    };
  }
  if (!/^[\x21-\x7e]+$/.test(text)) throw new Error('not a token');
  return { token: text };
}

/** Google access tokens start with `ya29.`; never let one into a message. */
function scrub(text: string): string {
  return text.replace(/ya29\.[\w.-]+/g, '[REDACTED]');
}

function unauthorized(message: string, cause?: unknown): McoError {
  return new McoError('Unauthorized', message, true, { cause });
}
