export {
  EXEC_API_VERSIONS,
  ExecConfigSchema,
  ProviderFileSchema,
  parseProviderFile,
  type ExecConfig,
  type ProviderConfig,
  type ProviderFile,
} from './provider-file.js';
export {
  parseExecCredential,
  runExecPlugin,
  redactTokens,
  type Credential,
  type ExecClusterInfo,
  type ExecPluginOptions,
} from './exec-plugin.js';
export {
  abortable,
  createCachedCredential,
  type CachedCredential,
  type CachedCredentialOptions,
} from './cached-credential.js';
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
export { MCO_AUTH_PROVIDER, memberKubeConfig, type MemberClusterClient } from './member-client.js';
export { createClusterAccess, type ClusterAccessManager, type ClusterAccessOptions } from './manager.js';
