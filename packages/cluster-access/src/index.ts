export {
  EXEC_API_VERSIONS,
  ExecConfigSchema,
  ProviderFileSchema,
  ServerPolicySchema,
  parseProviderFile,
  type ExecConfig,
  type ProviderConfig,
  type ProviderFile,
} from './provider-file.js';
// The credential plugin runner and cache moved to @mco/kube-runtime (the hub's
// kubeconfig loader uses them too); re-exported for this package's users.
export {
  abortable,
  createCachedCredential,
  parseExecCredential,
  redactTokens,
  runExecPlugin,
  type CachedCredential,
  type CachedCredentialOptions,
  type Credential,
  type ExecClusterInfo,
  type ExecPluginOptions,
} from '@mco/kube-runtime';
export { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rate-limiter.js';
export {
  EXEC_EXTENSION_NAME,
  execClusterInfo,
  providerAccess,
  selectAccessProvider,
  type ClusterAccess,
  type SelectedProvider,
} from './access.js';
export {
  KUBECONFIG_SECRET_ANNOTATION,
  KUBECONFIG_SECRET_KEY,
  parseStaticKubeconfig,
  type StaticKubeconfig,
} from './kubeconfig-secret.js';
export { type MemberClusterClient } from './member-client.js';
export {
  createClusterAccess,
  HubServerRefusedError,
  type ClusterAccessManager,
  type ClusterAccessOptions,
} from './manager.js';
export { readHubEndpoints } from './hub-endpoints.js';
export {
  addressCheck,
  checkClusterTrust,
  checkDuplicateServer,
  hubEndpointKey,
  normalizeAddress,
  normalizeServer,
  serverHolders,
  type ServerPolicy,
  type TrustContext,
  type TrustResult,
} from './server-trust.js';
