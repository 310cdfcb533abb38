import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/** Who is looking at the page. */
export interface Identity {
  readonly user: string;
  readonly groups: readonly string[];
}

/**
 * How a request is authenticated: `none` (a local `mco dashboard` on the
 * loopback address: the viewer sees what the hub kubeconfig sees), `proxy`
 * (an authenticating proxy in front, proving itself with a client certificate,
 * sets X-Remote-User/X-Remote-Group), or
 * `token` (a bearer token posted once to /api/login, exchanged for a session
 * cookie; the token itself is not kept).
 */
export type AuthMode = 'none' | 'proxy' | 'token';
export const AUTH_MODES: readonly AuthMode[] = ['none', 'proxy', 'token'];

export const SESSION_COOKIE = 'mco_dashboard_session';

/**
 * What proves that a request came through the authenticating proxy, as the
 * Kubernetes aggregation layer's request-header options do: a client
 * certificate that chains to `clientCA` (and names one of `allowedNames`).
 */
export interface ProxyTrust {
  /** PEM: the CA that signs the proxy's client certificate (--requestheader-client-ca-file). */
  readonly clientCA: string | Buffer;
  /** Common names the proxy's certificate may carry; empty: any the CA signed (--requestheader-allowed-names). */
  readonly allowedNames: readonly string[];
  /** Headers naming the user, the first one set wins (--requestheader-username-headers). */
  readonly usernameHeaders: readonly string[];
  /** Headers naming the groups, all of them read (--requestheader-group-headers). */
  readonly groupHeaders: readonly string[];
}

export const DEFAULT_USERNAME_HEADERS: readonly string[] = ['X-Remote-User'];
export const DEFAULT_GROUP_HEADERS: readonly string[] = ['X-Remote-Group'];

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/**
 * Whether the connection carries a client certificate that the server
 * verified against the proxy CA, for client authentication, with an allowed
 * common name. Anything else is not the proxy, whatever headers it sends.
 */
export function fromProxy(socket: Socket, allowedNames: readonly string[]): boolean {
  if (!(socket instanceof TLSSocket) || !socket.authorized) return false;
  const cert = socket.getPeerCertificate();
  if (cert.ext_key_usage && !cert.ext_key_usage.includes(CLIENT_AUTH)) return false;
  return allowedNames.length === 0 || (typeof cert.subject?.CN === 'string' && allowedNames.includes(cert.subject.CN));
}

/** The identity an authenticating proxy asserts, or undefined without a user header. */
export function proxyIdentity(
  headers: IncomingHttpHeaders,
  usernameHeaders: readonly string[] = DEFAULT_USERNAME_HEADERS,
  groupHeaders: readonly string[] = DEFAULT_GROUP_HEADERS,
): Identity | undefined {
  const values = (name: string) => {
    const raw = headers[name.toLowerCase()];
    return Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  };
  const name = usernameHeaders.map((h) => values(h)[0]?.trim()).find(Boolean);
  if (!name) return undefined;
  // Node joins repeated headers with ", "; the aggregator sends one header per group.
  const groups = groupHeaders
    .flatMap(values)
    .flatMap((g) => g.split(','))
    .map((g) => g.trim())
    .filter(Boolean);
  return { user: name, groups };
}

const HOST_HEADER = /^[A-Za-z0-9.:[\]-]+$/;

/**
 * With `--auth none`: whether a request's Host header names a loopback
 * address, `localhost` or one of `allowed`. A page on any other name that
 * resolves to this machine (DNS rebinding) is refused.
 */
export function allowedHost(header: string | undefined, allowed: readonly string[]): boolean {
  if (!header || !HOST_HEADER.test(header)) return false;
  let hostname: string;
  try {
    // Lower-cased, IPv4 canonical, IPv6 in brackets.
    hostname = new URL(`http://${header}`).hostname;
  } catch {
    return false;
  }
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  if (isIP(hostname) === 4 && hostname.startsWith('127.')) return true;
  return allowed.some((a) => {
    const name = a.toLowerCase();
    return hostname === (isIP(name) === 6 ? `[${name}]` : name);
  });
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const digest = (id: string) => createHash('sha256').update(id).digest();

/**
 * Server-side sessions: the cookie holds a random id; the map holds its
 * SHA-256 (a memory dump shows no usable id) with the identity and expiry.
 * Lookups compare digests in constant time. Bounded: the oldest session goes
 * first when full.
 */
export class SessionStore {
  private readonly sessions = new Map<string, { digest: Buffer; identity: Identity; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxSessions = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new session for `identity`; returns the id to put in the cookie. */
  create(identity: Identity): string {
    const id = randomBytes(32).toString('base64url');
    if (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
    const d = digest(id);
    this.sessions.set(d.toString('hex'), { digest: d, identity, expiresAt: this.now() + this.ttlMs });
    return id;
  }

  get(id: string | undefined): Identity | undefined {
    if (!id || id.length > 128) return undefined;
    const d = digest(id);
    const key = d.toString('hex');
    const session = this.sessions.get(key);
    if (!session || !timingSafeEqual(session.digest, d)) return undefined;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return session.identity;
  }

  delete(id: string | undefined): void {
    if (id) this.sessions.delete(digest(id).toString('hex'));
  }

  get size(): number {
    return this.sessions.size;
  }
}

/** A resource the page shows, as a SubjectAccessReview names it. */
export interface ResourceRef {
  readonly group: string;
  readonly resource: string;
}

/** Asks the API server whether `identity` may `list` `resource` in `namespace` (a SubjectAccessReview). */
export type ReviewAccess = (identity: Identity, namespace: string, resource: ResourceRef) => Promise<boolean>;

/**
 * SubjectAccessReviews, cached briefly per identity, namespace and resource:
 * a page update asks again once the entry is older than `ttlMs`, so a revoked
 * RoleBinding hides a namespace within that time. A failed review denies.
 */
export class AccessCache {
  private readonly entries = new Map<string, { allowed: Promise<boolean>; at: number }>();

  constructor(
    private readonly review: ReviewAccess,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {}

  mayList(identity: Identity, namespace: string, resource: ResourceRef): Promise<boolean> {
    const key = JSON.stringify([
      identity.user,
      [...identity.groups].sort(),
      namespace,
      resource.group,
      resource.resource,
    ]);
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.allowed;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    const allowed = this.review(identity, namespace, resource).catch(() => false);
    this.entries.set(key, { allowed, at: now });
    return allowed;
  }
}

/** The SubjectAccessReview body asking whether `identity` may list `resource` in `namespace`. */
export function subjectAccessReview(identity: Identity, namespace: string, resource: ResourceRef): object {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: identity.user,
      groups: identity.groups,
      resourceAttributes: { namespace, verb: 'list', group: resource.group, resource: resource.resource },
    },
  };
}
