import { KubeClient } from '@mco/kube-runtime';
import { McoError } from '@mco/runtime';
import type { ClusterAccess } from './access.js';
import type { RateLimiter } from './rate-limiter.js';

/** Requests to one member cluster, sharing the cluster's rate limiter and credential. */
export interface MemberClusterClient {
  readonly cluster: string;
  readonly access: ClusterAccess;
  /**
   * Every request and watch waits for the cluster's rate limiter (cancelled by
   * the request's `signal`) and uses the cluster's credential, which a 401 drops.
   */
  readonly client: KubeClient;
}

/** `checkAddress` refuses, at connect time, addresses the server's host must not lead to (server-trust.ts). */
export function memberClusterClient(
  access: ClusterAccess,
  limiter: RateLimiter,
  checkAddress?: (address: string, port: number) => string | undefined,
): MemberClusterClient {
  let client: KubeClient;
  try {
    client = new KubeClient(access, {
      beforeRequest: (signal) => limiter.acquire(signal),
      ...(checkAddress ? { checkAddress } : {}),
    });
  } catch (error) {
    throw new McoError('Invalid', `ClusterProfile ${access.cluster}: ${(error as Error).message}`, false);
  }
  return { cluster: access.cluster, access, client };
}
