import { readFile } from 'node:fs/promises';
import { createCachedCredential, runExecPlugin, type CachedCredential } from '@mco/cluster-access';
import { McoError } from '@mco/runtime';
import type { PrometheusAuth } from './config.js';

/** Request headers that authenticate to the query API. */
export interface Auth {
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /** Drops a cached token (after a 401). */
  invalidate(): void;
}

export interface AuthOptions {
  readonly now?: () => Date;
  readonly execTimeoutMs?: number;
}

/**
 * Files are read for every request so that a rotated Secret is picked up;
 * tokens from a plugin or the metadata server are cached until shortly before
 * they expire, one refresh at a time.
 */
export function createAuth(auth: PrometheusAuth | undefined, options: AuthOptions = {}): Auth {
  const none: Auth = { headers: async () => ({}), invalidate: () => {} };
  if (!auth) return none;
  if (auth.bearerTokenFile) {
    const file = auth.bearerTokenFile;
    return {
      headers: async () => ({ Authorization: `Bearer ${await readSecretFile(file, 'bearerTokenFile')}` }),
      invalidate: () => {},
    };
  }
  if (auth.basicAuth) {
    const { username, passwordFile } = auth.basicAuth;
    return {
      async headers() {
        const password = await readSecretFile(passwordFile, 'basicAuth.passwordFile');
        return { Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` };
      },
      invalidate: () => {},
    };
  }
  const cacheOptions = options.now ? { now: options.now } : {};
  let cache: CachedCredential | undefined;
  if (auth.exec) {
    const exec = auth.exec;
    cache = createCachedCredential(
      () =>
        runExecPlugin(exec, {
          provider: 'prometheus auth',
          ...(options.execTimeoutMs ? { timeoutMs: options.execTimeoutMs } : {}),
        }),
      cacheOptions,
    );
  } else if (auth.metadataServer) {
    const url = auth.metadataServer.url;
    const now = options.now ?? (() => new Date());
    cache = createCachedCredential(() => metadataToken(url, now), cacheOptions);
  }
  if (!cache) return none;
  const c = cache;
  return {
    async headers(signal) {
      const credential = await c.get(signal);
      if (!credential.token) throw new McoError('Unauthorized', 'the auth plugin gave no token', false);
      return { Authorization: `Bearer ${credential.token}` };
    },
    invalidate: () => c.invalidate(),
  };
}

async function readSecretFile(path: string, field: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(path, 'utf8')).trim();
  } catch (error) {
    throw new McoError(
      'Unauthorized',
      `${field} ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`,
      true,
      {
        cause: error,
      },
    );
  }
  if (!text) throw new McoError('Unauthorized', `${field} ${path} is empty`, true);
  return text;
}

/** An OAuth access token from the GCE metadata server: `{access_token, expires_in, token_type}`. */
async function metadataToken(url: string, now: () => Date) {
  const started = now().getTime();
  let response: Response;
  try {
    response = await fetch(url, { headers: { 'Metadata-Flavor': 'Google' }, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new McoError('Unauthorized', `metadata server ${url}: ${(error as Error).message}`, true, { cause: error });
  }
  if (!response.ok) throw new McoError('Unauthorized', `metadata server ${url}: HTTP ${response.status}`, true);
  const doc = (await response.json().catch(() => undefined)) as
    { access_token?: unknown; expires_in?: unknown } | undefined;
  if (typeof doc?.access_token !== 'string' || !doc.access_token) {
    throw new McoError('Unauthorized', `metadata server ${url}: no access_token in the answer`, false);
  }
  const seconds = typeof doc.expires_in === 'number' ? doc.expires_in : undefined;
  return { token: doc.access_token, ...(seconds ? { expiresAt: new Date(started + seconds * 1000) } : {}) };
}
