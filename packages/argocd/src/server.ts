import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClusterProfile, Placement } from '@mco/core';
import {
  McoError,
  readJsonRequest,
  RequestBodyError,
  silentLogger,
  type Logger,
  type ReconcileRecorder,
} from '@mco/runtime';
import { selectAccessProvider } from './access.js';
import { parsePluginRequest, placementParameters, type ProfileLookup } from './parameters.js';
import type { TokenVerifier } from './token.js';
import type { PlacementView } from './view.js';

/** The path Argo CD's plugin generator posts to (`{baseUrl}/api/v1/getparams.execute`). */
export const PLUGIN_PATH = '/api/v1/getparams.execute';

export interface PluginServerLimits {
  /** Largest accepted request body (default 64 KiB); Argo CD sends a few hundred bytes. */
  readonly maxBodyBytes?: number;
  /** Largest accepted request head (default 16 KiB). */
  readonly maxHeaderBytes?: number;
  /** Time allowed to receive the request head (default 10 s). */
  readonly headersTimeoutMs?: number;
  /** Time allowed to receive the whole request (default 30 s). */
  readonly requestTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open (default 120 s). Longer
   * than Go's http.Transport IdleConnTimeout (90 s), so Argo CD always closes
   * first and never reuses a connection the server is closing.
   */
  readonly keepAliveTimeoutMs?: number;
  /**
   * After refusing a request whose body is still arriving (413, 401, ...),
   * how much more of it is read and discarded so the client, still sending,
   * reads the answer instead of a connection reset (default 16 MiB).
   */
  readonly lingerBytes?: number;
  /** How long that discarding may last (default 5 s). */
  readonly lingerMs?: number;
}

export interface PluginServerOptions {
  readonly view: PlacementView;
  readonly token: TokenVerifier;
  /** Access provider names in order of preference, for the `server` output (default: first with a server). */
  readonly accessProviderNames?: readonly string[];
  /**
   * The `server` output of a profile (null: none); `createTrustedServerOf`
   * refuses what the Secret syncer refuses. Default: the selected provider's server as it is.
   */
  readonly serverOf?: (profile: ClusterProfile) => string | null;
  readonly limits?: PluginServerLimits;
  readonly logger?: Logger;
  /** Each answered request is recorded: ok, or error for a 5xx answer (`reconcileMetrics` of @mco/runtime). */
  readonly reconciles?: ReconcileRecorder;
  /** GET /metrics (no token, as /healthz): the Prometheus text of this process. */
  readonly metrics?: { readonly contentType: string; text(): Promise<string> };
}

export interface PluginServer {
  readonly server: Server;
  listen(port: number, host?: string): Promise<AddressInfo>;
  close(): Promise<void>;
}

const DEFAULT_LIMITS: Required<PluginServerLimits> = {
  maxBodyBytes: 64 * 1024,
  maxHeaderBytes: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 120_000,
  lingerBytes: 16 * 1024 * 1024,
  lingerMs: 5_000,
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * The ApplicationSet plugin generator endpoint (docs/argocd.md). Status codes:
 * 200 with one parameter set per listed cluster; 400 bad parameters; 401 no
 * bearer token; 403 wrong token; 404 unknown path or placement; 405 wrong
 * method; 413 body too large; 415 not JSON; 503 cache not synced or partial;
 * 500 a placement status mco cannot read. Argo CD changes nothing on any
 * non-2xx answer, so every doubt is an error, never a list.
 */
export function createPluginServer(options: PluginServerOptions): PluginServer {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const logger = options.logger ?? silentLogger;
  const lookup: ProfileLookup = {
    clusterProfile: (namespace, name) => options.view.clusterProfile(namespace, name),
    serverOf:
      options.serverOf ??
      ((profile: ClusterProfile) => selectAccessProvider(profile, options.accessProviderNames)?.cluster.server ?? null),
  };

  // Node checks the head and request timeouts every connectionsCheckingInterval
  // (30 s by default); check every second so the limits above hold as set.
  const server = createServer(
    { maxHeaderSize: limits.maxHeaderBytes, connectionsCheckingInterval: 1000 },
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        logger.error('plugin request failed', { error });
        if (!res.headersSent) send(res, 500, { error: 'Internal', message: 'internal error' });
        else res.destroy();
      });
    },
  );
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxHeadersCount = 64;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path === '/healthz') return send(res, 200, { status: 'ok' });
    if (path === '/metrics' && options.metrics && req.method === 'GET') {
      const text = await options.metrics.text();
      res.writeHead(200, { 'content-type': options.metrics.contentType }).end(text);
      return;
    }
    if (path === '/readyz') {
      return options.view.synced()
        ? send(res, 200, { status: 'ok' })
        : send(res, 503, { error: 'NotSynced', message: 'cache not synced' });
    }
    try {
      if (path !== PLUGIN_PATH) throw new HttpError(404, 'NotFound', `no such path; Argo CD posts to ${PLUGIN_PATH}`);
      if (req.method !== 'POST') {
        throw new HttpError(405, 'MethodNotAllowed', 'only POST is allowed', { Allow: 'POST' });
      }
      await authenticate(req);
      const body = await readJsonRequest(req, limits.maxBodyBytes).catch((error: unknown) => {
        throw error instanceof RequestBodyError ? new HttpError(error.status, error.reason, error.message) : error;
      });
      const parsed = parsePluginRequest(body);
      if (!parsed.ok) throw new HttpError(400, 'BadRequest', parsed.message);
      const { placementNamespace: ns, placementName: name, applicationSetName } = parsed.value;
      if (!options.view.synced()) {
        throw new HttpError(503, 'NotSynced', 'the placement cache is not synced yet; Argo CD will retry', {
          'Retry-After': '5',
        });
      }
      const placement = readPlacement(ns, name);
      if (!placement) throw new HttpError(404, 'PlacementNotFound', `placement ${ns}/${name} not found`);
      const answer = answerOf(placement);
      logger.debug('plugin answered', { applicationSet: applicationSetName, placement: `${ns}/${name}` });
      sendText(res, 200, answer);
      options.reconciles?.record('ok');
    } catch (error) {
      if (!(error instanceof HttpError) || error.status >= 500) options.reconciles?.record('error');
      if (!(error instanceof HttpError)) throw error;
      const fields = { status: error.status, reason: error.reason, path, method: req.method };
      if (error.status >= 500) logger.warn(error.message, fields);
      else logger.debug(error.message, fields);
      const answer = JSON.stringify({ error: error.reason, message: error.message });
      if (req.complete) sendText(res, error.status, answer, error.headers);
      else sendLingering(req, res, error.status, answer, error.headers, limits);
    }
  }

  // Cache objects are replaced, never changed, on update: an answer computed
  // from the same placement object and the same ClusterProfile objects is the
  // same answer, so its JSON is reused (it is 30+ KiB for 100 clusters).
  const answers = new WeakMap<Placement, { profiles: (ClusterProfile | undefined)[]; body: string }>();
  function answerOf(placement: Placement): string {
    const profiles = (placement.status?.clusters ?? []).map((c) =>
      c.namespace ? options.view.clusterProfile(c.namespace, c.name) : undefined,
    );
    const cached = answers.get(placement);
    if (cached && cached.profiles.length === profiles.length && cached.profiles.every((p, i) => p === profiles[i])) {
      return cached.body;
    }
    const result = placementParameters(placement, lookup);
    if (!result.ok) throw new HttpError(result.status, result.reason, result.message);
    const body = JSON.stringify({ output: { parameters: result.value } });
    answers.set(placement, { profiles, body });
    return body;
  }

  function readPlacement(namespace: string, name: string) {
    try {
      return options.view.placement(namespace, name);
    } catch (error) {
      if (error instanceof McoError && error.code === 'Invalid') {
        throw new HttpError(500, 'InvalidPlacementStatus', error.message);
      }
      throw error;
    }
  }

  async function authenticate(req: IncomingMessage): Promise<void> {
    const header = req.headers.authorization;
    const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
    if (!match?.[1]) {
      throw new HttpError(401, 'Unauthorized', 'a bearer token is required', { 'WWW-Authenticate': 'Bearer' });
    }
    if (!(await options.token.verify(match[1]))) throw new HttpError(403, 'Forbidden', 'invalid token');
  }

  return {
    server,
    listen: (port, host = '0.0.0.0') =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendText(res, status, JSON.stringify(body), headers);
}

/**
 * Answers a request whose body is still arriving, then closes the connection
 * the way HTTP servers must (RFC 9112 section 9.6, "lingering close"): the
 * whole answer is written first (its Content-Length tells the client it is
 * complete), then the rest of the body is read and discarded, within
 * `lingerBytes` and `lingerMs`, before the connection closes. Closing while
 * the client still sends makes the kernel reset the connection, and the reset
 * discards the answer unread: Go's net/http would report "connection reset by
 * peer" instead of the 413. A client sending more than the bounds allow gets
 * the reset.
 */
function sendLingering(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string>,
  limits: Required<PluginServerLimits>,
): void {
  res.writeHead(status, answerHeaders(text, { Connection: 'close', ...headers }));
  res.write(text);
  let discarded = 0;
  const stop = (done: boolean) => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', onEnd);
    // Ending the response closes the connection (Connection: close); the client sent everything.
    if (done) res.end();
    else req.socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > limits.lingerBytes) stop(false);
  };
  const onEnd = () => stop(true);
  const timer = setTimeout(() => stop(false), limits.lingerMs);
  req.on('data', onData);
  req.once('end', onEnd);
  req.resume();
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, answerHeaders(text, headers));
  res.end(text);
}

function answerHeaders(text: string, headers: Record<string, string>): Record<string, string | number> {
  return {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  };
}
