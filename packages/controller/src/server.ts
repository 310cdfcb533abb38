import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  /** /healthz: the process works (its loops are alive). */
  readonly isHealthy: () => boolean;
  /** /readyz: every informer synced. */
  readonly isReady: () => boolean;
  /** Why /readyz fails, when there is more to say than "not ready" (no secrets: the body is public). */
  readonly notReadyReason?: () => string | undefined;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * /healthz, /readyz and /metrics. Only GET and HEAD; request bodies are never
 * read; nothing here reveals more than the metrics do.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      request.destroy();
      return;
    }
    const check = (ok: boolean, reason?: string) =>
      response
        .writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ok ? 'ok\n' : `not ready${reason ? `: ${reason}` : ''}\n`);
    if (path === '/healthz' || path === '/livez') return check(options.isHealthy());
    if (path === '/readyz') {
      const ready = options.isReady();
      return check(ready, ready ? undefined : options.notReadyReason?.());
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
