import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Credential, KubeConnection } from '@mco/runtime';

/** An answer of the API server other than 2xx. `code` is the HTTP status (`httpStatusOf` reads it). */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  constructor(
    readonly code: number,
    /** The response body as text (a `Status` object in JSON, usually). */
    readonly body: string,
    message: string,
  ) {
    super(message);
  }
}

export type PatchType = 'merge' | 'json' | 'apply';

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  // JSON is YAML: the apply body is sent as JSON.
  apply: 'application/apply-patch+yaml',
};

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** An API path, e.g. `/apis/coordination.k8s.io/v1/namespaces/x/leases/y`. */
  readonly path: string;
  readonly query?: Query;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** Overrides the client's request timeout. */
  readonly timeoutMs?: number;
}

export interface KubeClientOptions {
  /** Per-request deadline (default 30 s); a watch has none (the informer's watchdog ends a silent one). */
  readonly timeoutMs?: number;
  /** Awaited before every request and watch, e.g. a member cluster's rate limiter. */
  readonly beforeRequest?: (signal: AbortSignal | undefined) => Promise<void>;
}

export interface WatchHandlers<T> {
  onEvent(type: string, object: T): void;
  /** Called once: with an error, or with null when the server ended the stream. Not called after `stop`. */
  onDone(error: unknown): void;
}

/**
 * mco's own Kubernetes client: JSON requests on any API path and streaming
 * watches over one keep-alive agent per connection (rebuilt when the client
 * certificate changes), a deadline per request, and the connection's
 * credential (dropped on 401). It replaces @kubernetes/client-node on the
 * controller's path, which loads every generated API and model (about
 * 65 MiB) even for a `KubeConfig` (docs/performance.md).
 */
export class KubeClient {
  readonly timeoutMs: number;
  private agent: { signature: string; agent: http.Agent } | undefined;

  constructor(
    readonly connection: KubeConnection,
    private readonly options: KubeClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (connection.proxyUrl) {
      const proxy = new URL(connection.proxyUrl);
      if (proxy.protocol !== 'http:' || !connection.server.startsWith('https:')) {
        throw new Error(`proxy-url ${proxy.protocol}// is not supported: an http:// proxy for an https:// server is`);
      }
      this.proxy = proxy;
    }
  }

  private readonly proxy: URL | undefined;

  get<T>(path: string, options: Omit<KubeRequest, 'method' | 'path' | 'body'> = {}): Promise<T> {
    return this.request<T>({ ...options, method: 'GET', path });
  }

  create<T>(path: string, body: unknown, options: Omit<KubeRequest, 'method' | 'path' | 'body'> = {}): Promise<T> {
    return this.request<T>({ ...options, method: 'POST', path, body });
  }

  replace<T>(path: string, body: unknown, options: Omit<KubeRequest, 'method' | 'path' | 'body'> = {}): Promise<T> {
    return this.request<T>({ ...options, method: 'PUT', path, body });
  }

  /** `apply` is server-side apply: pass `fieldManager` (and `force`) in `query`. */
  patch<T>(
    path: string,
    type: PatchType,
    body: unknown,
    options: Omit<KubeRequest, 'method' | 'path' | 'body' | 'contentType'> = {},
  ): Promise<T> {
    return this.request<T>({ ...options, method: 'PATCH', path, body, contentType: PATCH_CONTENT_TYPES[type] });
  }

  delete<T>(path: string, body?: unknown, options: Omit<KubeRequest, 'method' | 'path' | 'body'> = {}): Promise<T> {
    return this.request<T>({ ...options, method: 'DELETE', path, body });
  }

  /** One request; resolves with the parsed JSON body, rejects with a KubeApiError or a network/timeout error. */
  async request<T>(request: KubeRequest): Promise<T> {
    const timeoutMs = request.timeoutMs ?? this.timeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    const { response, url } = await this.send(request, signal, timeoutMs);
    const text = await readBody(response, signal, url, timeoutMs);
    const status = response.statusCode ?? 0;
    if (status < 200 || status >= 300) throw this.apiError(request.method, request.path, status, text);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /**
   * A watch on `path` (`watch=true` is added): newline-delimited JSON events,
   * handed to `onEvent` as they arrive. Resolves once the server accepted it
   * (a 410 or any other refusal rejects with a KubeApiError; no answer within
   * the request timeout, with a TimeoutError), with a function that ends it.
   */
  async watch<T>(path: string, query: Query, handlers: WatchHandlers<T>): Promise<() => void> {
    const abort = new AbortController();
    // The stream itself has no deadline (the informer's watchdog ends a silent one), its start has one.
    const started = setTimeout(
      () => abort.abort(Object.assign(new Error('no response headers'), { name: 'TimeoutError' })),
      this.timeoutMs,
    );
    const { response, url } = await this.send(
      { method: 'GET', path, query: { ...query, watch: true } },
      abort.signal,
      this.timeoutMs,
    ).finally(() => clearTimeout(started));
    const status = response.statusCode ?? 0;
    if (status !== 200) {
      const text = await readBody(response, AbortSignal.timeout(this.timeoutMs), url, this.timeoutMs);
      throw this.apiError('GET', path, status, text);
    }
    let done = false;
    const finish = (error: unknown) => {
      if (done) return;
      done = true;
      handlers.onDone(error);
    };
    let buffered = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline >= 0 && !done) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (!line) continue;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          abort.abort();
          finish(new Error(`watch ${path}: the server sent a line that is not JSON (${line.length} characters)`));
          return;
        }
        handlers.onEvent(String(event.type), event.object as T);
      }
    });
    response.on('end', () => finish(null));
    response.on('error', (error) => finish(abort.signal.aborted ? null : error));
    response.on('close', () => finish(abort.signal.aborted ? null : new Error(`watch ${path}: connection closed`)));
    return () => {
      done = true;
      abort.abort();
      response.destroy();
    };
  }

  /** Closes the idle keep-alive connections. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  private async send(
    request: KubeRequest,
    signal: AbortSignal,
    timeoutMs: number | undefined,
  ): Promise<{ response: http.IncomingMessage; url: string }> {
    await this.options.beforeRequest?.(signal);
    const credential = await this.connection.getCredential(signal);
    const url = new URL(this.connection.server + request.path + queryString(request.query));
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (credential.token) headers.Authorization = `Bearer ${credential.token}`;
    if (body !== undefined) {
      headers['Content-Type'] = request.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const secure = url.protocol === 'https:';
    const target = `${url.origin}${url.pathname}`;
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = (secure ? https : http).request(
        url,
        { method: request.method, headers, agent: this.agentFor(secure, credential), signal },
        resolve,
      );
      req.on('error', (error: NodeJS.ErrnoException) => reject(requestError(error, signal, target, timeoutMs)));
      req.end(body);
    });
    if (response.statusCode === 401) this.connection.invalidate();
    return { response, url: target };
  }

  private agentFor(secure: boolean, credential: Credential): http.Agent {
    const c = this.connection;
    const tls = secure
      ? {
          ...(c.caData ? { ca: Buffer.from(c.caData, 'base64').toString('utf8') } : {}),
          ...(credential.clientCertificateData
            ? { cert: credential.clientCertificateData, key: credential.clientKeyData }
            : {}),
          rejectUnauthorized: !c.insecureSkipTlsVerify,
          ...(c.tlsServerName ? { servername: c.tlsServerName } : {}),
        }
      : {};
    const signature = `${credential.clientCertificateData ?? ''}\u0000${credential.clientKeyData ?? ''}`;
    if (this.agent?.signature === signature) return this.agent.agent;
    this.agent?.agent.destroy();
    const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 120_000 };
    const agent = !secure
      ? new http.Agent(options)
      : this.proxy
        ? new TunnelAgent(this.proxy, { ...options, ...tls })
        : new https.Agent({ ...options, ...tls });
    this.agent = { signature, agent };
    return agent;
  }

  private apiError(method: string, path: string, status: number, text: string): KubeApiError {
    let detail = '';
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed.message === 'string') detail = `: ${parsed.message}`;
    } catch {
      // not a Status object
    }
    return new KubeApiError(status, text, `${method} ${path}: HTTP ${status}${detail}`);
  }
}

/** An https agent whose connections are tunnels through an HTTP proxy (CONNECT), as client-go does for `proxy-url`. */
class TunnelAgent extends https.Agent {
  constructor(
    private readonly proxy: URL,
    options: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(
    args: http.ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): undefined {
    const options = args as tls.ConnectionOptions & { host?: string; port?: number };
    const done = callback!;
    const target = `${options.host}:${options.port}`;
    const auth = this.proxy.username
      ? `${decodeURIComponent(this.proxy.username)}:${decodeURIComponent(this.proxy.password)}`
      : undefined;
    const connect = http.request({
      host: this.proxy.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: this.proxy.port || 80,
      method: 'CONNECT',
      path: target,
      headers: {
        Host: target,
        ...(auth ? { 'Proxy-Authorization': `Basic ${Buffer.from(auth).toString('base64')}` } : {}),
      },
    });
    connect.once('connect', (response, socket) => {
      if (response.statusCode !== 200) {
        socket.destroy();
        done(
          new Error(`the proxy ${this.proxy.host} refused a tunnel to ${target}: HTTP ${response.statusCode}`),
          socket,
        );
        return;
      }
      const host = options.host ?? '';
      done(null, tls.connect({ ...options, socket, servername: options.servername ?? (isIP(host) ? '' : host) }));
    });
    connect.once('error', (error) => done(error, connect.socket!));
    connect.end();
    return undefined;
  }
}

function queryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** A network error says which server it could not reach (`explainFailure` of the app reads the URL), never a header. */
function requestError(
  error: NodeJS.ErrnoException,
  signal: AbortSignal,
  target: string,
  timeoutMs: number | undefined,
): Error {
  if (signal.aborted) {
    const reason = signal.reason as { name?: string } | undefined;
    if (reason?.name === 'TimeoutError') {
      return Object.assign(new Error(`request to ${target} failed, reason: no answer within ${timeoutMs} ms`), {
        name: 'TimeoutError',
        code: 'ETIMEDOUT',
      });
    }
    return signal.reason instanceof Error ? signal.reason : error;
  }
  return Object.assign(new Error(`request to ${target} failed, reason: ${error.message}`, { cause: error }), {
    code: error.code,
  });
}

async function readBody(
  response: http.IncomingMessage,
  signal: AbortSignal,
  target: string,
  timeoutMs: number,
): Promise<string> {
  response.setEncoding('utf8');
  let text = '';
  try {
    for await (const chunk of response) text += chunk as string;
  } catch (error) {
    throw requestError(error as NodeJS.ErrnoException, signal, target, timeoutMs);
  }
  return text;
}
