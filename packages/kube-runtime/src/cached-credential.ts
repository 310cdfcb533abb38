import type { Credential } from '@mco/runtime';

export interface CachedCredential {
  /** The cached credential, or a fresh one when it is missing or about to expire. */
  get(signal?: AbortSignal): Promise<Credential>;
  /** Forgets the cached credential, e.g. after the server answered 401. */
  invalidate(): void;
}

export interface CachedCredentialOptions {
  readonly now?: () => Date;
  /** Refresh this long before `expiresAt` (default 60 s), at most half the credential's lifetime. */
  readonly refreshBeforeMs?: number;
  /**
   * Re-read a credential that names no expiry (a static token, a kubeconfig
   * Secret) after this long (default 5 minutes), so a rotated one is picked up.
   */
  readonly reReadAfterMs?: number;
}

/**
 * Caches a credential until shortly before it expires (one without expiry for
 * `reReadAfterMs`). Concurrent callers share
 * one fetch (single flight); a caller that gives up (`signal`) does not cancel
 * the fetch for the others. A failed fetch is not cached: the next call retries.
 */
export function createCachedCredential(
  fetchCredential: () => Promise<Credential>,
  options: CachedCredentialOptions = {},
): CachedCredential {
  const now = options.now ?? (() => new Date());
  const refreshBeforeMs = options.refreshBeforeMs ?? 60_000;
  const reReadAfterMs = options.reReadAfterMs ?? 5 * 60_000;
  let cached: { credential: Credential; refreshAt: number } | undefined;
  let inflight: Promise<Credential> | undefined;
  let generation = 0;

  const refresh = (): Promise<Credential> => {
    if (inflight) return inflight;
    const started = now().getTime();
    const mine = ++generation;
    const p = fetchCredential().then(
      (credential) => {
        if (mine === generation) {
          const expires = credential.expiresAt?.getTime();
          const margin = expires === undefined ? 0 : Math.min(refreshBeforeMs, (expires - started) / 2);
          cached = { credential, refreshAt: expires === undefined ? started + reReadAfterMs : expires - margin };
          inflight = undefined;
        }
        return credential;
      },
      (error: unknown) => {
        if (mine === generation) inflight = undefined;
        throw error;
      },
    );
    inflight = p;
    return p;
  };

  return {
    get(signal) {
      if (cached && now().getTime() < cached.refreshAt) return Promise.resolve(cached.credential);
      return abortable(refresh(), signal);
    },
    invalidate() {
      cached = undefined;
      inflight = undefined;
      generation++;
    },
  };
}

/** Resolves like `promise`, or rejects with the abort reason as soon as `signal` fires. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
