import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Who is looking at the page. */
export interface Identity {
  readonly user: string;
  readonly groups: readonly string[];
}

/**
 * How a request is authenticated: `none` (a local `mco dashboard` on the
 * loopback address: the viewer sees what the hub kubeconfig sees), `proxy`
 * (an authenticating proxy in front sets X-Remote-User/X-Remote-Group), or
 * `token` (a bearer token posted once to /api/login, exchanged for a session
 * cookie; the token itself is not kept).
 */
export type AuthMode = 'none' | 'proxy' | 'token';
export const AUTH_MODES: readonly AuthMode[] = ['none', 'proxy', 'token'];

export const SESSION_COOKIE = 'mco_dashboard_session';

/** The identity an authenticating proxy asserts, or undefined without X-Remote-User. */
export function proxyIdentity(headers: IncomingHttpHeaders): Identity | undefined {
  const user = headers['x-remote-user'];
  const name = Array.isArray(user) ? user[0] : user;
  if (!name?.trim()) return undefined;
  const raw = headers['x-remote-group'];
  // Node joins repeated headers with ", "; the aggregator sends one header per group.
  const groups = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
    .flatMap((g) => g.split(','))
    .map((g) => g.trim())
    .filter(Boolean);
  return { user: name.trim(), groups };
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
