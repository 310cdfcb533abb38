import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { McoError, type Credential, type KubeConnection } from '@mco/runtime';

/**
 * An answer of the API server other than 2xx: the one error shape of every
 * request. `code` is the HTTP status (`httpStatusOf` reads it), `reason` the
 * `Status` reason (`NotFound`, `Conflict`, `AlreadyExists`, `Gone`,
 * `Forbidden`, ...; empty when the body is no Status), `retryable` whether
 * the same request may succeed later (409, 429, 5xx), as `toMcoError` decides.
 */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly reason: string;
  readonly retryable: boolean;
  constructor(
    readonly code: number,
    /** The response body as text (a `Status` object in JSON, usually). */
    readonly body: string,
    message: string,
  ) {
    super(message);
    this.reason = statusOf(body).reason ?? '';
    this.retryable = code === 409 || code === 429 || code >= 500;
  }
}

function statusOf(text: string): { reason?: string; message?: string } {
  try {
    const parsed = JSON.parse(text) as { reason?: unknown; message?: unknown } | null;
    return {
      ...(typeof parsed?.reason === 'string' ? { reason: parsed.reason } : {}),
      ...(typeof parsed?.message === 'string' ? { message: parsed.message } : {}),
    };
  } catch {
    return {}; // not a Status object
  }
}

/**
 * An answer (a response body, a list page, or one watch event line) larger
 * than the client's limit (`maxResponseBytes`, `maxWatchLineBytes`). It was
 * cut off while it streamed, never held whole. Not retryable as is: the same
 * request gets the same answer (an informer asks for smaller list pages).
 */
export class ResponseTooLargeError extends McoError {
  constructor(
    message: string,
    /** The limit that was exceeded, in bytes. */
    readonly limitBytes: number,
  ) {
    super('Invalid', message, false);
  }
}

/** Default of `KubeClientOptions.maxResponseBytes`: 16 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Default of `KubeClientOptions.maxWatchLineBytes`: 4 MiB. */
export const DEFAULT_MAX_WATCH_LINE_BYTES = 4 * 1024 * 1024;

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
  /** The `Accept` header (default `application/json`), e.g. a metadata-only list's. */
  readonly accept?: string;
  /**
   * Server-side dry run (`All`): validated and admitted, nothing stored. It
   * goes in the body of a DELETE (DeleteOptions; the API server ignores the
   * query once a body is sent, so a query there would delete for real) and
   * in the query of every other request.
   */
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
  /** Overrides the client's request timeout. */
  readonly timeoutMs?: number;
}

export interface KubeClientOptions {
  /** Per-request deadline (default 30 s); a watch has none (the informer's watchdog ends a silent one). */
  readonly timeoutMs?: number;
  /** Awaited before every request and watch, e.g. a member cluster's rate limiter. */
  readonly beforeRequest?: (signal: AbortSignal | undefined) => Promise<void>;
  /**
   * The largest response body (of one request, or one list page) read, in
   * bytes (default 16 MiB, `DEFAULT_MAX_RESPONSE_BYTES`). A larger answer is
   * cut off while it streams and the request rejects with a
   * ResponseTooLargeError, so one hostile or broken server cannot exhaust
   * the heap.
   */
  readonly maxResponseBytes?: number;
  /**
   * The longest line (one event) of a watch stream, in bytes (default 4 MiB,
   * `DEFAULT_MAX_WATCH_LINE_BYTES`; an object stored in etcd is at most
   * 1.5 MiB by default). A longer one ends the watch with a ResponseTooLargeError.
   */
  readonly maxWatchLineBytes?: number;
  /**
   * Called, when a connection is opened, with each address the server's host
   * resolves to (or the IP it names) and the port: a reason refuses the
   * connection (an McoError `Invalid`, not retryable). Checked after DNS, so a
   * name cannot lead to an address a check of the name alone would refuse.
   * Not called through a `proxy-url`, which resolves the server itself.
   */
  readonly checkAddress?: (address: string, port: number) => string | undefined;
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
  private readonly maxResponseBytes: number;
  private readonly maxWatchLineBytes: number;
  private agent: { signature: string; agent: http.Agent } | undefined;

  constructor(
    readonly connection: KubeConnection,
    private readonly options: KubeClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.maxWatchLineBytes = options.maxWatchLineBytes ?? DEFAULT_MAX_WATCH_LINE_BYTES;
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

  /** `body` is DeleteOptions, e.g. `{ preconditions: { uid, resourceVersion } }`. */
  delete<T>(path: string, body?: unknown, options: Omit<KubeRequest, 'method' | 'path' | 'body'> = {}): Promise<T> {
    return this.request<T>({ ...options, method: 'DELETE', path, body });
  }

  /** One request; resolves with the parsed JSON body, rejects with a KubeApiError or a network/timeout error. */
  async request<T>(request: KubeRequest): Promise<T> {
    // AbortSignal.timeout takes whole milliseconds only.
    const timeoutMs = Math.ceil(request.timeoutMs ?? this.timeoutMs);
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    const { response, url } = await this.send(request, signal, timeoutMs);
    const text = await this.readBody(request.method, response, signal, url, timeoutMs);
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
      const text = await this.readBody('GET', response, AbortSignal.timeout(this.timeoutMs), url, this.timeoutMs);
      throw this.apiError('GET', path, status, text);
    }
    let done = false;
    const finish = (error: unknown) => {
      if (done) return;
      done = true;
      handlers.onDone(error);
    };
    const lines = new LineSplitter(this.maxWatchLineBytes);
    response.on('data', (chunk: Buffer) => {
      const { lines: complete, tooLong } = lines.push(chunk);
      for (const line of complete) {
        if (done) return;
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
      if (tooLong && !done) {
        abort.abort();
        response.destroy();
        finish(
          new ResponseTooLargeError(
            `watch ${url}: the server sent an event line longer than ${this.maxWatchLineBytes} bytes (maxWatchLineBytes); the watch was ended`,
            this.maxWatchLineBytes,
          ),
        );
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
    // A server with a trailing slash (`https://host/prefix/`) must not double it, as in client-go.
    const inBody = request.dryRun && request.method === 'DELETE';
    const query = request.dryRun && !inBody ? { ...request.query, dryRun: 'All' } : request.query;
    const url = new URL(this.connection.server.replace(/\/+$/, '') + request.path + queryString(query));
    const payload = inBody
      ? { apiVersion: 'v1', kind: 'DeleteOptions', ...(request.body as object | undefined), dryRun: ['All'] }
      : request.body;
    const body = payload === undefined ? undefined : JSON.stringify(payload);
    const headers: Record<string, string> = { Accept: request.accept ?? 'application/json' };
    if (credential.token) headers.Authorization = `Bearer ${credential.token}`;
    if (body !== undefined) {
      headers['Content-Type'] = request.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const secure = url.protocol === 'https:';
    const target = `${url.origin}${url.pathname}`;
    const lookup = this.addressCheck(url, target);
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const options: http.RequestOptions & TunnelOptions = {
        method: request.method,
        headers,
        agent: this.agentFor(secure, credential),
        signal,
        // Read by TunnelAgent (custom request options reach createConnection): a CONNECT ends with the request.
        tunnelSignal: signal,
        ...(lookup ? { lookup } : {}),
      };
      const req = (secure ? https : http).request(url, options, resolve);
      req.on('error', (error: NodeJS.ErrnoException) => reject(requestError(error, signal, target, timeoutMs)));
      req.end(body);
    });
    if (response.statusCode === 401) this.connection.invalidate();
    return { response, url: target };
  }

  /**
   * The `checkAddress` hook as a DNS lookup for new connections; an IP the
   * URL names is checked here (no lookup runs for it). Nothing through a proxy.
   */
  private addressCheck(url: URL, target: string): LookupFunction | undefined {
    const check = this.options.checkAddress;
    if (!check || this.proxy) return undefined;
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const refused = (address: string, why: string) =>
      new McoError('Invalid', `request to ${target} refused: ${address} port ${port} ${why}`, false);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host)) {
      const why = check(host, port);
      if (why) throw refused(host, why);
      return undefined;
    }
    return (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) return callback(error, '', 0);
        for (const { address } of addresses) {
          const why = check(address, port);
          if (why) return callback(refused(address, why), '', 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
        const first = addresses[0];
        if (!first) return callback(Object.assign(new Error(`${hostname}: no address`), { code: 'ENOTFOUND' }), '', 0);
        callback(null, first.address, first.family);
      });
    };
  }

  /** The body as text, cut off (the connection destroyed) once it passes `maxResponseBytes`. */
  private async readBody(
    method: string,
    response: http.IncomingMessage,
    signal: AbortSignal,
    target: string,
    timeoutMs: number,
  ): Promise<string> {
    const limit = this.maxResponseBytes;
    const tooLarge = () => {
      response.destroy();
      return new ResponseTooLargeError(
        `${method} ${target}: the answer is larger than ${limit} bytes (maxResponseBytes); it was cut off`,
        limit,
      );
    };
    if (Number(response.headers['content-length']) > limit) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limit) throw tooLarge();
        chunks.push(chunk);
      }
    } catch (error) {
      if (error instanceof ResponseTooLargeError) throw error;
      throw requestError(error as NodeJS.ErrnoException, signal, target, timeoutMs);
    }
    return Buffer.concat(chunks, size).toString('utf8');
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
        ? new TunnelAgent(this.proxy, { ...options, ...tls }, this.timeoutMs)
        : new https.Agent({ ...options, ...tls });
    this.agent = { signature, agent };
    return agent;
  }

  private apiError(method: string, path: string, status: number, text: string): KubeApiError {
    const { message } = statusOf(text);
    return new KubeApiError(status, text, `${method} ${path}: HTTP ${status}${message ? `: ${message}` : ''}`);
  }
}

/** What `send` hands TunnelAgent with each request. */
interface TunnelOptions {
  readonly tunnelSignal?: AbortSignal;
}

/**
 * An https agent whose connections are tunnels through an HTTP proxy
 * (CONNECT), as client-go does for `proxy-url`. A CONNECT the proxy does not
 * answer within `connectTimeoutMs`, or whose request is aborted, is destroyed.
 */
class TunnelAgent extends https.Agent {
  constructor(
    private readonly proxy: URL,
    options: https.AgentOptions,
    private readonly connectTimeoutMs: number,
  ) {
    super(options);
  }

  override createConnection(
    args: http.ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): undefined {
    const options = args as tls.ConnectionOptions & TunnelOptions & { host?: string; port?: number };
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
    const signal = options.tunnelSignal;
    let settled = false;
    const done = (error: Error | null, socket: Duplex) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      callback!(error, socket);
    };
    const fail = (error: Error) => {
      connect.destroy();
      done(error, connect.socket!);
    };
    const timer = setTimeout(
      () =>
        fail(
          Object.assign(
            new Error(
              `the proxy ${this.proxy.host} did not answer CONNECT to ${target} within ${this.connectTimeoutMs} ms`,
            ),
            { code: 'ETIMEDOUT' },
          ),
        ),
      this.connectTimeoutMs,
    );
    const onAbort = () =>
      fail(signal?.reason instanceof Error ? signal.reason : new Error(`CONNECT to ${target} aborted`));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
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

/**
 * Splits a watch stream into lines, holding at most `maxBytes` of a line that
 * is not complete yet: a longer one is reported (`tooLong`), not buffered.
 */
class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): { lines: string[]; tooLong: boolean } {
    const lines: string[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(10); newline >= 0; newline = chunk.indexOf(10, start)) {
      if (this.pendingBytes + newline - start > this.maxBytes) return { lines, tooLong: true };
      const piece = chunk.subarray(start, newline);
      const line = (this.pending.length ? Buffer.concat([...this.pending, piece]) : piece).toString('utf8').trim();
      this.pending = [];
      this.pendingBytes = 0;
      if (line) lines.push(line);
      start = newline + 1;
    }
    if (start < chunk.length) {
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > this.maxBytes) return { lines, tooLong: true };
      this.pending.push(chunk.subarray(start));
    }
    return { lines, tooLong: false };
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
  if (error instanceof McoError) return error;
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
