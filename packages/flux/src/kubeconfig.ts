import type { ClusterAccess, Credential } from '@mco/cluster-access';
import type { DesiredObject } from '@mco/kube-runtime';
import {
  CLUSTER_LABEL,
  CLUSTER_PROFILE_ANNOTATION,
  CREDENTIAL_EXPIRES_ANNOTATION,
  FLUX_WATCH_LABEL,
  KUBECONFIG_KEY,
  MANAGED_BY_LABEL,
  clusterSlug,
  kubeconfigSecretName,
} from './names.js';

/** Where and how to reach a member cluster (the TLS side of `ClusterAccess` from @mco/cluster-access). */
export type ClusterEndpoint = Pick<
  ClusterAccess,
  'server' | 'caData' | 'tlsServerName' | 'proxyUrl' | 'insecureSkipTlsVerify'
>;

export interface KubeconfigSecretOptions {
  readonly namespace: string;
  readonly manager: string;
}

/**
 * The kubeconfig Secret Flux's `spec.kubeConfig.secretRef` points at, for the
 * cluster behind ClusterProfile `profileNamespace/profileName`: a
 * self-contained kubeconfig (server, CA, the credential mco obtained; never an
 * exec plugin, which Flux's controllers could not run) under key `value`,
 * labelled so Flux reconciles when it changes. Pure.
 */
export function buildKubeconfigSecret(
  profileNamespace: string,
  profileName: string,
  access: ClusterEndpoint,
  credential: Credential,
  options: KubeconfigSecretOptions,
): DesiredObject {
  const user: Record<string, string> = {};
  if (credential.token) user.token = credential.token;
  if (credential.clientCertificateData) user['client-certificate-data'] = base64(credential.clientCertificateData);
  if (credential.clientKeyData) user['client-key-data'] = base64(credential.clientKeyData);
  const cluster: Record<string, unknown> = { server: access.server };
  if (access.caData) cluster['certificate-authority-data'] = access.caData;
  if (access.tlsServerName) cluster['tls-server-name'] = access.tlsServerName;
  if (access.proxyUrl) cluster['proxy-url'] = access.proxyUrl;
  if (access.insecureSkipTlsVerify) cluster['insecure-skip-tls-verify'] = true;
  // JSON is YAML: Flux parses it as a kubeconfig as it is.
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'member', cluster }],
    users: [{ name: 'mco', user }],
    contexts: [{ name: 'member', context: { cluster: 'member', user: 'mco' } }],
    'current-context': 'member',
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: kubeconfigSecretName(profileNamespace, profileName),
      namespace: options.namespace,
      labels: {
        [MANAGED_BY_LABEL]: options.manager,
        [FLUX_WATCH_LABEL]: 'Enabled',
        [CLUSTER_LABEL]: clusterSlug(profileNamespace, profileName),
      },
      annotations: {
        [CLUSTER_PROFILE_ANNOTATION]: `${profileNamespace}/${profileName}`,
        ...(credential.expiresAt ? { [CREDENTIAL_EXPIRES_ANNOTATION]: credential.expiresAt.toISOString() } : {}),
      },
    },
    data: { [KUBECONFIG_KEY]: base64(JSON.stringify(kubeconfig)) },
  } as DesiredObject;
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
