import { checkClusterTrust, normalizeServer, serverHolders, type ServerPolicy } from '@mco/cluster-access';
import { clusterKey, type ClusterProfile } from '@mco/core';
import { selectAccessProvider } from './access.js';
import type { ObjectCache } from './cache.js';

/** An access provider's bounds (a provider-file entry of @mco/cluster-access fits). */
export type NamedServerPolicy = ServerPolicy & { readonly name: string };

export interface TrustedServerOptions {
  readonly clusterProfiles: ObjectCache<ClusterProfile>;
  /** Access provider names in order of preference (default: the first entry with a server). */
  readonly accessProviderNames?: readonly string[] | undefined;
  /** Bounds per access provider; a provider without one gets any https server that is not reserved. */
  readonly policies?: readonly NamedServerPolicy[] | undefined;
  /** The hub's API server URL, never a member's. */
  readonly hubServer?: string | undefined;
}

/**
 * The plugin's `server` output: the selected access provider's server, or
 * null when the Secret syncer would refuse it (a reserved or disallowed
 * server, insecure TLS or a proxy not allowed, or a server an older profile
 * names; @mco/cluster-access's rules). ApplicationSets that use `{{server}}`
 * as destination then never point at the hub or at another cluster. Who
 * holds each server is worked out once per change of the profile cache.
 */
export function createTrustedServerOf(options: TrustedServerOptions): (profile: ClusterProfile) => string | null {
  let holders: Map<string, string> | undefined;
  options.clusterProfiles.addHandler(() => (holders = undefined));
  const checked = (profile: ClusterProfile): string | undefined => {
    const selected = selectAccessProvider(profile, options.accessProviderNames);
    if (!selected) return undefined;
    // No bounds given (no provider file): the plugin hands out no credential, so any server that is not reserved.
    const policy = options.policies?.find((p) => p.name === selected.providerName) ?? { allowAnyServer: true };
    const result = checkClusterTrust(selected.cluster, policy, {
      cluster: clusterKey(profile.metadata.namespace, profile.metadata.name),
      source: `access provider "${selected.providerName}"`,
      hubServer: options.hubServer,
    });
    return result.ok ? selected.cluster.server : undefined;
  };
  return (profile) => {
    const server = checked(profile);
    if (server === undefined) return null;
    holders ??= serverHolders(options.clusterProfiles.list(), checked);
    const key = clusterKey(profile.metadata.namespace, profile.metadata.name);
    return holders.get(normalizeServer(server) ?? '') === key ? server : null;
  };
}
