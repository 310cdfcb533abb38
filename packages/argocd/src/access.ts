import type { AccessProvider, AccessProviderCluster, ClusterProfile } from '@mco/core';

export interface SelectedAccess {
  readonly providerName: string;
  readonly cluster: AccessProviderCluster;
}

/**
 * The access provider to reach a ClusterProfile's cluster through, as the
 * Cluster Inventory API's consumer convention picks it: the first of
 * `providerNames` (in that order) that the profile lists in
 * `status.accessProviders` (or the deprecated `credentialProviders`) with a
 * server; with no names configured, the first listed entry that has a server.
 */
export function selectAccessProvider(
  profile: ClusterProfile,
  providerNames: readonly string[] = [],
): SelectedAccess | undefined {
  const listed: readonly AccessProvider[] = [
    ...(profile.status?.accessProviders ?? []),
    ...(profile.status?.credentialProviders ?? []),
  ].filter((p) => p.cluster?.server);
  const pick =
    providerNames.length === 0
      ? listed[0]
      : providerNames.map((name) => listed.find((p) => p.name === name)).find((p) => p !== undefined);
  return pick?.cluster ? { providerName: pick.name, cluster: pick.cluster } : undefined;
}
