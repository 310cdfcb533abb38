import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { PLACEMENT_GROUP } from '@mco/core';
import { readJsonRequest, RequestBodyError, silentLogger, type Logger } from '@mco/runtime';
import {
  allowedHost,
  cookieValue,
  fromProxy,
  proxyIdentity,
  SESSION_COOKIE,
  type AccessCache,
  type AuthMode,
  type Identity,
  type ProxyTrust,
  type SessionStore,
} from './auth.js';
import { SEE_ALL, type FleetModel, type Visibility } from './model.js';
import { PAGE_CSS, PAGE_JS } from './page.generated.js';

/** The largest request body read (a login posts one token). */
export const MAX_BODY_BYTES = 16 * 1024;

export interface DashboardServerOptions {
  readonly model: FleetModel;
  readonly synced: () => boolean;
  readonly auth: AuthMode;
  /** SubjectAccessReviews (proxy and token modes). */
  readonly access?: AccessCache;
  /** Token mode: the identity a bearer token authenticates as (a SelfSubjectReview made with it). */
  readonly login?: (token: string) => Promise<Identity>;
  readonly sessions?: SessionStore;
  /** Mark the session cookie Secure (default true); false only for plain http on a loopback address. */
  readonly secureCookies?: boolean;
  /** Serve https with this certificate and key (PEM); proxy mode requires it. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Proxy mode: what proves that a request came through the proxy. */
  readonly proxy?: ProxyTrust;
  /** None mode: Host names served besides `localhost` and loopback addresses. */
  readonly allowedHosts?: readonly string[];
  readonly logger?: Logger;
  /** The shortest time between two updates of one page (default 100 ms). */
  readonly throttleMs?: number;
  /** A comment line on idle streams, and a re-check of access (default 15 s). */
  readonly heartbeatMs?: number;
}

const RESOURCES = {
  clusterProfiles: { group: 'multicluster.x-k8s.io', resource: 'clusterprofiles' },
  placements: { group: PLACEMENT_GROUP, resource: 'multikubernetesclusterplacements' },
  events: { group: '', resource: 'events' },
} as const;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mco dashboard</title>
<link rel="stylesheet" href="/app.css">
<script type="module" src="/app.js"></script>
</head>
<body><div id="app"></div></body>
</html>
`;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The dashboard's HTTP server: the page, its script and stylesheet, the
 * session endpoints and `/api/stream`, a server-sent-events stream of the
 * viewer's {@link View}. Read-only: nothing it serves writes to the hub.
 */
export function createDashboardServer(options: DashboardServerOptions) {
  const logger = options.logger ?? silentLogger;
  const throttleMs = options.throttleMs ?? 100;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const streams = new Set<http.ServerResponse>();
  const proxy = options.proxy;
  if (options.auth === 'proxy' && (!proxy || !options.tls)) {
    throw new Error('proxy mode needs a serving certificate and the CA of the proxy client certificate');
  }
  const secureCookies = options.secureCookies ?? true;

  function identityOf(req: http.IncomingMessage): Identity | undefined {
    switch (options.auth) {
      case 'none':
        return { user: 'the hub kubeconfig', groups: [] };
      case 'proxy':
        // Headers count only on a connection whose client certificate proves it is the proxy.
        return fromProxy(req.socket, proxy!.allowedNames)
          ? proxyIdentity(req.headers, proxy!.usernameHeaders, proxy!.groupHeaders)
          : undefined;
      case 'token':
        return options.sessions!.get(cookieValue(req.headers.cookie, SESSION_COOKIE));
    }
  }

  /** Per namespace, whether the viewer may list each resource (SubjectAccessReviews, cached briefly). */
  async function visibilityOf(identity: Identity): Promise<Visibility> {
    if (options.auth === 'none' || !options.access) return SEE_ALL;
    const access = options.access;
    const namespaces = [...options.model.namespaces()];
    const allowed = async (ref: { group: string; resource: string }) => {
      const answers = await Promise.all(namespaces.map((ns) => access.mayList(identity, ns, ref)));
      const set = new Set(namespaces.filter((_, i) => answers[i]));
      return (ns: string) => set.has(ns);
    };
    const [clusterProfiles, placements, events] = await Promise.all([
      allowed(RESOURCES.clusterProfiles),
      allowed(RESOURCES.placements),
      allowed(RESOURCES.events),
    ]);
    return { clusterProfiles, placements, events };
  }

  async function stream(req: http.IncomingMessage, res: http.ServerResponse, url: URL, identity: Identity) {
    const selected = url.searchParams.get('placement') ?? undefined;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    });
    res.write('retry: 2000\n\n');
    streams.add(res);
    let last = '';
    /** Milliseconds the last view took to build and send. */
    let cost = 0;
    let timer: NodeJS.Timeout | undefined;
    let running = false;
    let again = false;
    const push = async () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      const started = performance.now();
      try {
        do {
          again = false;
          const view = options.model.view(await visibilityOf(identity), identity.user, options.synced(), selected);
          const { now: _now, ...comparable } = view;
          const text = JSON.stringify(comparable);
          if (text !== last && !res.destroyed) {
            last = text;
            res.write(`event: view\ndata: ${JSON.stringify(view)}\n\n`);
          }
        } while (again && !res.destroyed);
      } catch (error) {
        logger.warn('dashboard: cannot build a view', { error: (error as Error).message });
      } finally {
        running = false;
        cost = performance.now() - started;
      }
    };
    // A large fleet's view takes tens of milliseconds to build and send: wait at least twice that between
    // two, so that a busy hub cannot keep the server building views.
    const schedule = () => {
      timer ??= setTimeout(
        () => {
          timer = undefined;
          void push();
        },
        Math.max(throttleMs, 2 * cost),
      );
    };
    const unsubscribe = options.model.onChange(schedule);
    const heartbeat = setInterval(() => {
      if (res.destroyed) return;
      res.write(': keep-alive\n\n');
      void push();
    }, heartbeatMs);
    req.on('close', () => {
      unsubscribe();
      clearInterval(heartbeat);
      clearTimeout(timer);
      streams.delete(res);
    });
    await push();
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (options.auth === 'none' && !allowedHost(req.headers.host, options.allowedHosts ?? [])) {
      throw new HttpError(
        403,
        'this Host is not served: reach the dashboard on a loopback address (or --allowed-hosts)',
      );
    }
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case 'GET /':
        return send(res, 200, 'text/html; charset=utf-8', HTML);
      case 'GET /app.js':
        return send(res, 200, 'text/javascript; charset=utf-8', PAGE_JS);
      case 'GET /app.css':
        return send(res, 200, 'text/css; charset=utf-8', PAGE_CSS);
      case 'GET /healthz':
        return send(res, options.synced() ? 200 : 503, 'text/plain', options.synced() ? 'ok\n' : 'syncing\n');
      case 'GET /api/session': {
        // 200 either way: the page asks before signing in, and a browser logs every 401 as an error.
        const identity = identityOf(req);
        return json(res, 200, identity ? { auth: options.auth, ...identity } : { auth: options.auth });
      }
      case 'POST /api/login':
        return login(req, res);
      case 'POST /api/logout': {
        sameOrigin(req);
        options.sessions?.delete(cookieValue(req.headers.cookie, SESSION_COOKIE));
        res.setHeader('set-cookie', cookie('', 0));
        return json(res, 200, {});
      }
      case 'GET /api/stream': {
        const identity = identityOf(req);
        if (!identity) return json(res, 401, { auth: options.auth });
        return stream(req, res, url, identity);
      }
    }
    if (req.method !== 'GET' && req.method !== 'POST') throw new HttpError(405, 'method not allowed');
    throw new HttpError(404, 'not found');
  }

  async function login(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (options.auth !== 'token' || !options.login || !options.sessions) {
      throw new HttpError(404, 'this dashboard does not take tokens');
    }
    sameOrigin(req);
    const token = ((await readJsonRequest(req, MAX_BODY_BYTES)) as { token?: unknown } | null)?.token;
    if (typeof token !== 'string' || token.trim() === '' || token.length > 8192) {
      throw new HttpError(400, 'token: expected a non-empty string of at most 8192 characters');
    }
    let identity: Identity;
    try {
      identity = await options.login(token.trim());
    } catch (error) {
      logger.info('dashboard: a login was refused', { error: (error as Error).message });
      throw new HttpError(401, 'the API server did not accept this token');
    }
    const id = options.sessions.create(identity);
    res.setHeader('set-cookie', cookie(id, 8 * 3600));
    return json(res, 200, { user: identity.user, groups: identity.groups });
  }

  function cookie(value: string, maxAge: number): string {
    return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secureCookies ? '; Secure' : ''}`;
  }

  const respond = (req: http.IncomingMessage, res: http.ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError || error instanceof RequestBodyError ? error.status : 500;
      if (status === 500) logger.error('dashboard: request failed', { error: (error as Error).message });
      if (res.headersSent) return res.destroy();
      // A refused body may still be arriving: close the connection after the answer rather than read it.
      if (!req.complete) res.setHeader('connection', 'close');
      json(res, status, { error: status === 500 ? 'internal error' : (error as Error).message });
    });
  };
  // Proxy mode asks every client for a certificate but does not require one: /healthz and the page's
  // script need none, and a request without the proxy's certificate is refused at /api/stream.
  const server = options.tls
    ? https.createServer(
        {
          cert: options.tls.cert,
          key: options.tls.key,
          ...(proxy ? { ca: proxy.clientCA, requestCert: true, rejectUnauthorized: false } : {}),
        },
        respond,
      )
    : http.createServer(respond);
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  return {
    server,
    /** Resolves with the bound address. */
    listen(host: string, port: number): Promise<AddressInfo> {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve(server.address() as AddressInfo));
      });
    },
    async close(): Promise<void> {
      for (const res of streams) res.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A stream or request that arrived meanwhile would hold close() open: at shutdown, end every connection.
      server.closeAllConnections();
      await closed;
    },
  };
}

/** A POST must come from the page itself: a browser sends Origin, which must name the Host it was sent to. */
function sameOrigin(req: http.IncomingMessage): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new HttpError(403, 'bad Origin');
  }
  if (host !== req.headers.host) throw new HttpError(403, 'cross-origin request refused');
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type });
  res.end(body);
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}
