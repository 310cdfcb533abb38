import type { ClusterProfile } from '@mco/core';
import { argoClusterName } from './parameters.js';

export const SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** Default value of the managed-by label on the Secrets mco owns; nothing else is ever touched. */
export const DEFAULT_MANAGER = 'mco-argocd-cluster-sync';
export const CLUSTER_PROFILE_ANNOTATION = 'orchestra.multicluster.x-k8s.io/cluster-profile';
export const CREDENTIAL_EXPIRES_ANNOTATION = 'orchestra.multicluster.x-k8s.io/credential-expires-at';
/**
 * When no placement listed the cluster of a vanished ClusterProfile any more:
 * the Secret is kept for a grace period after it, so Argo CD can still use it
 * to delete the workload (cascade delete of the Applications it generated).
 */
export const RELEASED_AT_ANNOTATION = 'orchestra.multicluster.x-k8s.io/released-at';

/**
 * How mco reaches a member cluster. The shape of @mco/cluster-access's
 * `ClusterAccess`, so its objects can be passed as they are.
 */
export interface ClusterAccessLike {
  readonly server: string;
  /** Base64 PEM, as in a kubeconfig. */
  readonly caData?: string;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
  readonly insecureSkipTlsVerify: boolean;
  getCredential(signal?: AbortSignal): Promise<{
    readonly token?: string;
    /** PEM. */
    readonly clientCertificateData?: string;
    /** PEM. */
    readonly clientKeyData?: string;
    readonly expiresAt?: Date;
  }>;
  /** Drops the cached credential, so the next getCredential obtains a new one. */
  invalidate?(): void;
}

/** Argo CD's cluster `config` (pkg/apis/application/v1alpha1 ClusterConfig), the fields mco writes. */
export interface ArgoClusterConfig {
  bearerToken?: string;
  tlsClientConfig: { insecure: boolean; serverName?: string; caData?: string; certData?: string; keyData?: string };
  proxyUrl?: string;
}

export interface ClusterSecretOptions {
  /** Namespace Argo CD reads cluster Secrets from. */
  readonly namespace: string;
  readonly manager?: string;
}

/** A v1 Secret as mco writes it (data base64-encoded, as the API server returns it). */
export interface ClusterSecret {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
  };
  data: Record<string, string>;
}

/**
 * The Argo CD cluster Secret for a ClusterProfile: named `<ns>.<name>` like
 * the plugin's `name` output (and Google's syncer), the profile's labels
 * copied (mco's own labels win), `server` and TLS settings from the access
 * provider, and the credential mco obtained. Pure.
 */
export function buildClusterSecret(
  profile: ClusterProfile,
  access: Omit<ClusterAccessLike, 'getCredential'>,
  credential: Awaited<ReturnType<ClusterAccessLike['getCredential']>>,
  options: ClusterSecretOptions,
): ClusterSecret {
  const name = argoClusterName(profile.metadata.namespace, profile.metadata.name);
  const config: ArgoClusterConfig = {
    ...(credential.token ? { bearerToken: credential.token } : {}),
    tlsClientConfig: {
      insecure: access.insecureSkipTlsVerify,
      ...(access.tlsServerName ? { serverName: access.tlsServerName } : {}),
      ...(access.caData ? { caData: access.caData } : {}),
      ...(credential.clientCertificateData ? { certData: base64(credential.clientCertificateData) } : {}),
      ...(credential.clientKeyData ? { keyData: base64(credential.clientKeyData) } : {}),
    },
    ...(access.proxyUrl ? { proxyUrl: access.proxyUrl } : {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace: options.namespace,
      labels: {
        ...profile.metadata.labels,
        [SECRET_TYPE_LABEL]: 'cluster',
        [MANAGED_BY_LABEL]: options.manager ?? DEFAULT_MANAGER,
      },
      annotations: {
        [CLUSTER_PROFILE_ANNOTATION]: `${profile.metadata.namespace}/${profile.metadata.name}`,
        ...(credential.expiresAt ? { [CREDENTIAL_EXPIRES_ANNOTATION]: credential.expiresAt.toISOString() } : {}),
      },
    },
    data: {
      name: base64(name),
      server: base64(access.server),
      config: base64(JSON.stringify(config)),
    },
  };
}

/** True when `existing` already says what `desired` says (labels, annotations, data), so no write is needed. */
export function isUpToDate(
  existing: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    data?: Record<string, string>;
  },
  desired: ClusterSecret,
): boolean {
  return (
    sameRecord(existing.metadata?.labels, desired.metadata.labels) &&
    sameRecord(pick(existing.metadata?.annotations, desired.metadata.annotations), desired.metadata.annotations) &&
    sameRecord(existing.data, desired.data)
  );
}

/** Secret names are DNS subdomains of at most 253 characters; `<ns>.<name>` can exceed that. */
export function isValidSecretName(name: string): boolean {
  return name.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);
}

function pick(record: Record<string, string> | undefined, like: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(like)) if (record?.[key] !== undefined) out[key] = record[key];
  // Our annotations must match exactly: a stale expiry annotation counts as a difference.
  for (const key of [CLUSTER_PROFILE_ANNOTATION, CREDENTIAL_EXPIRES_ANNOTATION]) {
    if (record?.[key] !== undefined) out[key] = record[key];
  }
  return out;
}

function sameRecord(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const ak = Object.keys(a ?? {});
  return ak.length === Object.keys(b).length && ak.every((k) => a?.[k] === b[k]);
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
