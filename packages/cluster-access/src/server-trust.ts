import { BlockList, isIP } from 'node:net';
import type { AccessProviderCluster, ClusterProfile } from '@mco/core';
import { clusterKey } from '@mco/core';
import { KUBECONFIG_SECRET_ANNOTATION } from './kubeconfig-secret.js';

/**
 * What a ClusterProfile may point mco's credentials at, per access provider
 * (and for kubeconfig Secrets). Whoever can write a ClusterProfile chooses its
 * server, proxy and TLS settings; this is the administrator's bound on that
 * choice. See docs/cluster-access.md, "Which servers a profile may name".
 */
export interface ServerPolicy {
  /**
   * `https://host[:port][/path]` entries; a server must match one (same host,
   * the same port, 443 when the entry gives none, the path on a `/`
   * boundary). `*.` in front of a host matches its subdomains. A reserved
   * loopback, link-local or in-cluster host (or a name resolving to one) is
   * only reached when an entry names that host exactly. Required unless
   * `allowAnyServer` is true.
   */
  readonly allowedServers?: readonly string[] | undefined;
  /**
   * The explicit opt-out of `allowedServers`: any https server that is not
   * reserved and not the hub (default false). Credentials then go wherever a
   * ClusterProfile writer points them.
   */
  readonly allowAnyServer?: boolean | undefined;
  /** Accept `insecure-skip-tls-verify: true` from a profile (default false). */
  readonly allowInsecureSkipTLSVerify?: boolean | undefined;
  /** Proxies a profile's `proxy-url` may name (same matching); absent or empty: proxy-url is refused. */
  readonly allowedProxyURLs?: readonly string[] | undefined;
}

/** Where the server and the policy came from, for messages that name the field. */
export interface TrustContext {
  /** ClusterProfile `namespace/name`. */
  readonly cluster: string;
  /** `access provider "google"` or `kubeconfig Secret fleet/lab-1`. */
  readonly source: string;
  /** The hub's own API server URL: never a member's server. */
  readonly hubServer?: string | undefined;
  /**
   * The hub's own endpoints (keys of hubEndpointKey: address and port), as the
   * `default/kubernetes` Service and its EndpointSlice list them: never a
   * member's server. Compared by address and port, so another API server on
   * the same address (a test's loopback member) is not the hub.
   */
  readonly hubEndpoints?: ReadonlySet<string> | undefined;
}

/** `hub`: refused because the server is the hub's own API server (in any spelling, or a name resolving to it). */
export type TrustResult =
  { readonly ok: true } | { readonly ok: false; readonly field: string; readonly error: string; readonly hub?: true };

/** Host names that reach the hub's own API server from inside the hub. */
const HUB_NAMES = new Set([
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
]);

/** Loopback, link-local (the cloud metadata servers at 169.254.169.254 among them) and unspecified addresses. */
const RESERVED_ADDRESSES = (() => {
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addSubnet('169.254.0.0', 16, 'ipv4');
  list.addSubnet('0.0.0.0', 8, 'ipv4');
  list.addAddress('::1', 'ipv6');
  list.addAddress('::', 'ipv6');
  list.addSubnet('fe80::', 10, 'ipv6');
  list.addAddress('fd00:ec2::254', 'ipv6');
  return list;
})();

const RESERVED_ADDRESS = 'a loopback, link-local or unspecified address';

/** Why a host name or IP is reserved (it reaches the hub's pod, node or metadata server), or undefined. */
function reservedHost(hostname: string): string | undefined {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return 'a loopback name';
  if (hostname === 'metadata' || hostname === 'metadata.google.internal') return 'a cloud metadata server';
  if (hostname.endsWith('.svc') || hostname.endsWith('.svc.cluster.local') || hostname.endsWith('.cluster.local')) {
    return 'an in-cluster service name of the hub';
  }
  const ip = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(ip) ? reservedAddress(ip) : undefined;
}

/** Why an IP address is reserved, or undefined; RFC 1918 and other private ranges are not. */
function reservedAddress(ip: string): string | undefined {
  const address = normalizeAddress(ip);
  if (address === undefined) return undefined;
  return RESERVED_ADDRESSES.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6') ? RESERVED_ADDRESS : undefined;
}

/** `::ffff:a.b.c.d` (IPv4-mapped) and `::a.b.c.d` (IPv4-compatible), in the URL parser's hex form. */
const EMBEDDED_IPV4 = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * One spelling per address, so a comparison cannot be dodged by another
 * one: IPv4 in dotted decimal whatever the input spelling (`2130706433`,
 * `0x7f.1`, `0177.0.0.1`, `127.000.000.001`: the URL parser's reading, which
 * is what a server URL connects to), IPv6 compressed in lower case, and an
 * IPv6 address that embeds an IPv4 one (IPv4-mapped `::ffff:127.0.0.1` or
 * `::ffff:7f00:1`, IPv4-compatible `::127.0.0.1`) as that IPv4 address: a
 * socket to it reaches the IPv4 address. Undefined when not an IP address.
 */
export function normalizeAddress(ip: string): string | undefined {
  const bare = ip.replace(/^\[(.*)\]$/, '$1');
  let host: string;
  try {
    host = new URL(`https://${bare.includes(':') ? `[${bare}]` : bare}`).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return undefined;
  }
  const family = isIP(host);
  if (family !== 6) return family === 4 ? host : undefined;
  const embedded = EMBEDDED_IPV4.exec(host);
  if (!embedded) return host;
  const n = (parseInt(embedded[1]!, 16) << 16) | parseInt(embedded[2]!, 16);
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** The key of one hub endpoint in `TrustContext.hubEndpoints`. */
export function hubEndpointKey(address: string, port: number | string): string {
  return `${normalizeAddress(address) ?? address}|${port}`;
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** Host without a trailing dot, lower case (the URL parser already lower-cases and normalises IPv4 forms). */
function hostOf(url: URL): string {
  return url.hostname.replace(/\.$/, '');
}

/** A host as compared with the hub's: an address in its one spelling (normalizeAddress), a name as it is. */
function hostKey(host: string): string {
  return normalizeAddress(host) ?? host;
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
}

/**
 * The form two servers are compared in: scheme, host, port (443 when
 * implicit) and path without a trailing slash. Different paths on one host
 * are different clusters (Connect Gateway). Undefined when not a URL.
 */
export function normalizeServer(server: string): string | undefined {
  if (normalized.has(server)) return normalized.get(server);
  const url = parseUrl(server);
  const result = url ? `${url.protocol}//${hostOf(url)}:${portOf(url)}${url.pathname.replace(/\/+$/, '')}` : undefined;
  // The duplicate check normalises every peer's server on each call: remember them (a fleet has few distinct ones).
  if (normalized.size >= 10_000) normalized.clear();
  normalized.set(server, result);
  return result;
}
const normalized = new Map<string, string | undefined>();

/** Is `url` matched by the allowlist entry `entry` (see ServerPolicy.allowedServers)? `exact`: no `*.` wildcard used. */
function matchEntry(url: URL, entry: string): { matched: boolean; exact: boolean } {
  const wildcard = /^([a-z0-9+.-]+:\/\/)\*\./i.exec(entry);
  const pattern = parseUrl(wildcard ? entry.replace('*.', 'wildcard.') : entry);
  if (!pattern || pattern.protocol !== url.protocol) return { matched: false, exact: false };
  const host = hostOf(url);
  const patternHost = hostOf(pattern);
  const hostMatches = wildcard ? host.endsWith(patternHost.slice('wildcard'.length)) : host === patternHost;
  if (!hostMatches) return { matched: false, exact: false };
  // An entry without a port means the scheme's default (443): a server on another port is another endpoint.
  if (portOf(pattern) !== portOf(url)) return { matched: false, exact: false };
  const prefix = pattern.pathname.replace(/\/+$/, '');
  const path = url.pathname;
  const pathMatches = prefix === '' || path === prefix || path.startsWith(`${prefix}/`);
  return { matched: pathMatches, exact: pathMatches && !wildcard };
}

/** Checks an allowlist entry of a provider file; the message says what is wrong, or undefined when it is fine. */
export function allowlistEntryProblem(entry: string, schemes: readonly string[]): string | undefined {
  const pattern = parseUrl(entry.replace(/^([a-z0-9+.-]+:\/\/)\*\./i, '$1wildcard.'));
  if (!pattern || !pattern.hostname) return `"${entry}" is not a URL with a host`;
  if (!schemes.includes(pattern.protocol))
    return `"${entry}" must start with ${schemes.map((s) => `${s}//`).join(' or ')}`;
  if (pattern.username || pattern.password) return `"${entry}" must not hold a user or password`;
  if (pattern.search || pattern.hash) return `"${entry}" must not have a query or fragment`;
  return undefined;
}

/**
 * Checks the cluster a ClusterProfile (or kubeconfig Secret) gives against a
 * policy, before any credential is obtained: https only, never the hub, the
 * allowlist (or the explicit `allowAnyServer`), a reserved host only when an
 * entry names it exactly, and insecure TLS and proxies only when opted in.
 * Pure: a name's addresses are checked by `addressCheck` when they are known.
 */
export function checkClusterTrust(
  cluster: Pick<AccessProviderCluster, 'server' | 'proxy-url' | 'insecure-skip-tls-verify'>,
  policy: ServerPolicy,
  context: TrustContext,
): TrustResult {
  const refuse = (field: string, why: string) => ({
    ok: false as const,
    field,
    error: `ClusterProfile ${context.cluster}: ${context.source}: ${field} ${why}`,
  });
  const server = cluster.server;
  const url = parseUrl(server);
  if (!url || !url.hostname) return refuse('cluster.server', `"${server}" is not a URL with a host`);
  if (url.protocol !== 'https:') {
    return refuse('cluster.server', `"${server}" is refused: mco sends credentials over https only`);
  }
  if (url.username || url.password) return refuse('cluster.server', `is refused: it holds a user or password`);
  const host = hostOf(url);
  const hub = context.hubServer ? parseUrl(context.hubServer) : undefined;
  const ip = host.replace(/^\[(.*)\]$/, '$1');
  if (
    HUB_NAMES.has(host) ||
    (hub && hostKey(hostOf(hub)) === hostKey(host) && portOf(hub) === portOf(url)) ||
    (isIP(ip) && context.hubEndpoints?.has(hubEndpointKey(ip, portOf(url))))
  ) {
    return { ...refuse('cluster.server', `"${server}" is refused: it is the hub's own API server`), hub: true };
  }
  const allowed = policy.allowedServers;
  if (!allowed && policy.allowAnyServer !== true) {
    return refuse(
      'cluster.server',
      `"${server}" is refused: ${context.source} has no allowedServers${context.source.startsWith('kubeconfig') ? ' (kubeconfigSecrets in the provider file)' : ''}; list the servers its credentials may go to, or set allowAnyServer: true`,
    );
  }
  const matches = (allowed ?? []).map((entry) => matchEntry(url, entry));
  if (allowed && !matches.some((m) => m.matched)) {
    return refuse('cluster.server', `"${server}" is refused: it matches no allowedServers entry`);
  }
  const reserved = reservedHost(host);
  if (reserved && !matches.some((m) => m.exact)) {
    return refuse(
      'cluster.server',
      `"${server}" is refused: its host is ${reserved}; only an allowedServers entry naming that host allows it`,
    );
  }
  if (cluster['insecure-skip-tls-verify'] === true && policy.allowInsecureSkipTLSVerify !== true) {
    return refuse('cluster.insecure-skip-tls-verify', 'is refused: allowInsecureSkipTLSVerify is not set');
  }
  const proxy = cluster['proxy-url'];
  if (proxy) {
    const proxyUrl = parseUrl(proxy);
    if (!proxyUrl || !proxyUrl.hostname) return refuse('cluster.proxy-url', `"${proxy}" is not a URL with a host`);
    if (!(policy.allowedProxyURLs ?? []).some((entry) => matchEntry(proxyUrl, entry).matched)) {
      return refuse('cluster.proxy-url', `"${proxy}" is refused: it matches no allowedProxyURLs entry`);
    }
  }
  return { ok: true };
}

/** addressCheck's reason for the hub's own endpoint. */
export const HUB_REASON = "is the hub's own API server";

/**
 * The connect-time half of checkClusterTrust, for a server it accepted: given
 * an address the server's host resolved to and the port, why it is refused
 * (the hub's own endpoint; a reserved address, unless an allowedServers entry
 * names the server's host exactly), or undefined. `hubEndpoints` is read on
 * each call, so a refreshed set applies to new connections.
 */
export function addressCheck(
  server: string,
  policy: ServerPolicy,
  hubEndpoints: () => ReadonlySet<string> | undefined,
): (address: string, port: number) => string | undefined {
  const url = parseUrl(server);
  const named = !!url && (policy.allowedServers ?? []).some((entry) => matchEntry(url, entry).exact);
  return (address, port) => {
    if (hubEndpoints()?.has(hubEndpointKey(address, port))) return HUB_REASON;
    const reserved = named ? undefined : reservedAddress(address);
    return reserved ? `is ${reserved}; only an allowedServers entry naming the server's host allows it` : undefined;
  };
}

/**
 * A profile claiming a server another profile already claims. The older
 * profile keeps it (creation time, then `namespace/name`), the younger is
 * refused: a newcomer cannot take over or block a working cluster, and
 * nothing already written is deleted on its account. Only servers visible in
 * ClusterProfile status are compared; profiles that name a kubeconfig Secret
 * carry their own credential and are not. `claimOf` gives a profile's
 * checked server (undefined when it claims none: refused, or a Secret). Pure.
 */
export function checkDuplicateServer(
  profile: ClusterProfile,
  server: string,
  peers: Iterable<ClusterProfile>,
  claimOf: (peer: ClusterProfile) => string | undefined,
): TrustResult {
  const normalized = normalizeServer(server);
  const self = claimant(profile);
  let holder: Claimant | undefined;
  for (const peer of peers) {
    const other = claimant(peer);
    if (other.key === self.key || !claims(peer)) continue;
    const claimed = claimOf(peer);
    if (claimed === undefined || normalizeServer(claimed) !== normalized) continue;
    if (isOlder(other, self) && (!holder || isOlder(other, holder))) holder = other;
  }
  if (!holder) return { ok: true };
  return {
    ok: false,
    field: 'cluster.server',
    error: `ClusterProfile ${self.key}: cluster.server "${server}" is refused: ClusterProfile ${holder.key} (older) names the same server`,
  };
}

/**
 * The holder of every claimed server (normalised) among `profiles`, by the
 * rule of checkDuplicateServer: one pass for components that answer for many
 * profiles at once (the Argo CD plugin's `server` output). Pure.
 */
export function serverHolders(
  profiles: Iterable<ClusterProfile>,
  claimOf: (profile: ClusterProfile) => string | undefined,
): Map<string, string> {
  const holders = new Map<string, Claimant>();
  for (const profile of profiles) {
    if (!claims(profile)) continue;
    const claimed = claimOf(profile);
    const normalized = claimed === undefined ? undefined : normalizeServer(claimed);
    if (normalized === undefined) continue;
    const current = holders.get(normalized);
    const candidate = claimant(profile);
    if (!current || isOlder(candidate, current)) holders.set(normalized, candidate);
  }
  return new Map([...holders].map(([server, holder]) => [server, holder.key]));
}

interface Claimant {
  readonly key: string;
  /** RFC 3339 in UTC, so it orders as a string; '' when unknown. */
  readonly created: string;
}

function claimant(profile: ClusterProfile): Claimant {
  return {
    key: clusterKey(profile.metadata.namespace, profile.metadata.name),
    created: profile.metadata.creationTimestamp ?? '',
  };
}

/** Profiles being deleted, and those whose server is in a kubeconfig Secret, claim nothing. */
function claims(profile: ClusterProfile): boolean {
  return !profile.metadata.deletionTimestamp && !profile.metadata.annotations?.[KUBECONFIG_SECRET_ANNOTATION];
}

/** Older creation time first (a missing one counts as newest), then `namespace/name`. */
function isOlder(a: Claimant, b: Claimant): boolean {
  if (a.created !== b.created) return a.created !== '' && (b.created === '' || a.created < b.created);
  return a.key < b.key;
}
