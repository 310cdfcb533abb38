import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { McoError } from '@mco/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_WATCH_LINE_BYTES,
  Informer,
  KubeClient,
  ResponseTooLargeError,
  createListWatch,
  type KubeObject,
} from '../src/index.js';

/** What a hostile member streams (400 MB by default: more than the chart's heap); MCO_TEST_OVERSIZED_BYTES overrides. */
const OVERSIZED_BYTES = Number(process.env.MCO_TEST_OVERSIZED_BYTES ?? 400_000_000);
/** Loopback socket buffers hold a few MiB that the server counts as sent before the client reads them. */
const SOCKET_SLACK = 16 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Writes `bytes` (`lead` first) as the client reads them (backpressure), until done or the client hangs up. */
async function stream(response: ServerResponse, lead: string, bytes: number): Promise<number> {
  response.on('error', () => {});
  let sent = 0;
  response.write(lead);
  sent += Buffer.byteLength(lead);
  while (sent < bytes && !response.destroyed) {
    const more = response.write(CHUNK);
    sent += CHUNK.length;
    if (!more) {
      await new Promise<void>((resolve) => {
        const go = () => {
          response.off('drain', go);
          response.off('close', go);
          resolve();
        };
        response.on('drain', go);
        response.on('close', go);
      });
    }
  }
  if (!response.destroyed) response.end();
  return sent;
}

async function listen(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return server;
}

function clientFor(server: Server, options: ConstructorParameters<typeof KubeClient>[1] = {}): KubeClient {
  const { port } = server.address() as AddressInfo;
  const client = new KubeClient(
    {
      server: `http://127.0.0.1:${port}`,
      insecureSkipTlsVerify: false,
      getCredential: async () => ({}),
      invalidate: () => {},
    },
    options,
  );
  closers.push(async () => client.close());
  return client;
}

const object = (name: string, rv: string, padding = 0): KubeObject => ({
  metadata: { name, namespace: 'fleet', resourceVersion: rv },
  data: { padding: 'p'.repeat(padding) },
});

describe('response size limit', () => {
  it('cuts off an oversized answer while it streams (the default 16 MiB) and the client keeps working', async () => {
    const sent: Promise<number>[] = [];
    const server = await listen((request, response) => {
      if (request.url === '/api/v1/namespaces/x/pods') {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        sent.push(stream(response, '{"items":["', OVERSIZED_BYTES));
      } else {
        response.end('{"kind":"PodList","items":[]}');
      }
    });
    const client = clientFor(server);
    const error: unknown = await client.get('/api/v1/namespaces/x/pods').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({
      code: 'Invalid',
      retryable: false,
      limitBytes: DEFAULT_MAX_RESPONSE_BYTES,
      message: expect.stringMatching(
        /^GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/x\/pods: the answer is larger than 16777216 bytes \(maxResponseBytes\); it was cut off$/,
      ),
    });
    // The server was stopped after the limit, not read to the end.
    expect(await sent[0]).toBeLessThan(DEFAULT_MAX_RESPONSE_BYTES + SOCKET_SLACK);
    expect(await client.get('/api/v1/namespaces/y/pods')).toEqual({ kind: 'PodList', items: [] });
  });

  it('refuses a declared Content-Length over the limit before reading the body', async () => {
    const sent: Promise<number>[] = [];
    const server = await listen((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(OVERSIZED_BYTES) });
      sent.push(stream(response, '{"items":["', OVERSIZED_BYTES));
    });
    const error: unknown = await clientFor(server, { maxResponseBytes: 1024 })
      .get('/api/v1/pods')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'McoError', code: 'Invalid', retryable: false, limitBytes: 1024 });
    expect(await sent[0]).toBeLessThan(SOCKET_SLACK);
  });

  it('an error answer (not 2xx) is bounded too', async () => {
    const server = await listen((_request, response) => {
      response.writeHead(500, { 'Content-Type': 'application/json' });
      void stream(response, '{"message":"', OVERSIZED_BYTES);
    });
    await expect(clientFor(server, { maxResponseBytes: 4096 }).get('/api/v1/pods')).rejects.toBeInstanceOf(
      ResponseTooLargeError,
    );
  });
});

/**
 * A member's API server for one list-watch: `list` answers a page (honouring
 * limit and continue) and `watch` a stream; both can be swapped by the test.
 */
async function member(state: {
  objects: KubeObject[];
  hostileList?: boolean;
  hostileWatch?: boolean;
  lists: number[];
  sent: Promise<number>[];
}): Promise<Server> {
  return listen((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    response.setHeader('Content-Type', 'application/json');
    if (url.searchParams.get('watch') === 'true') {
      response.writeHead(200);
      if (state.hostileWatch) state.sent.push(stream(response, '{"type":"ADDED","object":{"x":"', OVERSIZED_BYTES));
      else response.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } })}\n`);
      return;
    }
    const limit = Number(url.searchParams.get('limit'));
    state.lists.push(limit);
    if (state.hostileList) {
      response.writeHead(200);
      state.sent.push(stream(response, '{"items":["', OVERSIZED_BYTES));
      return;
    }
    const start = Number(url.searchParams.get('continue') ?? 0);
    const end = Math.min(start + limit, state.objects.length);
    response.end(
      JSON.stringify({
        metadata: { resourceVersion: '9', ...(end < state.objects.length ? { continue: String(end) } : {}) },
        items: state.objects.slice(start, end),
      }),
    );
  });
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('an informer on an oversized member answer', () => {
  const resource = { group: '', version: 'v1', plural: 'configmaps' };
  const start = (client: KubeClient, pageSize = 500) => {
    const informer = new Informer<KubeObject>({
      name: 'configmaps',
      listWatch: createListWatch(client, resource, { namespace: 'fleet' }),
      backoff: { baseMs: 10, maxMs: 50, jitter: 0 },
      pageSize,
    });
    informer.start();
    closers.push(() => informer.stop());
    return informer;
  };

  it('keeps running through an endless list answer and syncs once the member answers normally', async () => {
    const state = { objects: [object('a', '1')], hostileList: true, lists: [], sent: [] };
    const informer = start(clientFor(await member(state), { maxResponseBytes: 1024 * 1024 }), 2);
    // Smaller pages are tried (2, then 1), then the loop keeps retrying at the longest backoff.
    await until(() => state.lists.length >= 4, 'retries');
    expect(state.lists.slice(0, 3)).toEqual([2, 1, 1]);
    expect(informer.health()).toMatchObject({
      synced: false,
      lastError: expect.stringContaining('the answer is larger than 1048576 bytes (maxResponseBytes)'),
    });
    for (const sent of await Promise.all(state.sent)) expect(sent).toBeLessThan(1024 * 1024 + SOCKET_SLACK);
    state.hostileList = false;
    await informer.waitForSync();
    expect(informer.keys()).toEqual(['fleet/a']);
  });

  it('lists in smaller pages when a page is larger than the limit', async () => {
    const objects = Array.from({ length: 10 }, (_, i) => object(`cm-${i}`, String(i + 1), 300 * 1024));
    const state = { objects, lists: [] as number[], sent: [] };
    const informer = start(clientFor(await member(state), { maxResponseBytes: 1024 * 1024 }));
    await informer.waitForSync();
    expect(informer.size).toBe(10);
    // 500 (the whole list, ~3 MiB), 250, 125, 62, 31, 15, 7 are each too large; 3 objects (~900 KiB) fit.
    expect(state.lists).toEqual([500, 250, 125, 62, 31, 15, 7, 3, 3, 3, 3]);
  });

  it('ends a watch whose event line passes the limit (the default 4 MiB) and relists', async () => {
    const state = { objects: [object('a', '1')], hostileWatch: true, lists: [] as number[], sent: [] };
    const informer = start(clientFor(await member(state)));
    await informer.waitForSync();
    await until(() => state.lists.length >= 2, 'a relist after the watch was ended');
    expect(informer.health().restarts).toBeGreaterThan(0);
    expect(informer.keys()).toEqual(['fleet/a']);
    for (const sent of await Promise.all(state.sent)) {
      expect(sent).toBeLessThan(DEFAULT_MAX_WATCH_LINE_BYTES + SOCKET_SLACK);
    }
  });

  it('the watch reports the over-long line as a ResponseTooLargeError', async () => {
    const state = { objects: [], hostileWatch: true, lists: [] as number[], sent: [] };
    const client = clientFor(await member(state), { maxWatchLineBytes: 100_000 });
    const done = new Promise<unknown>((resolve) => {
      void client.watch('/api/v1/namespaces/fleet/configmaps', {}, { onEvent: () => {}, onDone: resolve });
    });
    expect(await done).toMatchObject({
      name: 'McoError',
      code: 'Invalid',
      retryable: false,
      limitBytes: 100_000,
      message: expect.stringMatching(
        /^watch http:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/fleet\/configmaps: the server sent an event line longer than 100000 bytes \(maxWatchLineBytes\); the watch was ended$/,
      ),
    });
  });

  it('splits lines across chunks and keeps lines of exactly the limit', async () => {
    const line = JSON.stringify({ type: 'ADDED', object: object('a', '1', 1000) });
    const server = await listen((_request, response) => {
      response.writeHead(200);
      // One event split in three writes, then two in one.
      response.write(line.slice(0, 10));
      response.write(line.slice(10, 500));
      response.write(`${line.slice(500)}\n${line}\n\n${line}\n`);
    });
    const names: string[] = [];
    const client = clientFor(server, { maxWatchLineBytes: Buffer.byteLength(line) });
    const stop = await client.watch<KubeObject>(
      '/api/v1/configmaps',
      {},
      {
        onEvent: (_type, o) => names.push(String(o.metadata?.name)),
        onDone: () => {},
      },
    );
    await until(() => names.length === 3, 'three events');
    stop();
    expect(names).toEqual(['a', 'a', 'a']);
  });
});

describe('proxy CONNECT', () => {
  /** A proxy that accepts connections and never answers; resolves each socket's close. */
  async function silentProxy(): Promise<{ url: string; connected: Promise<Socket>; closed: Promise<void> }> {
    let connected!: (socket: Socket) => void;
    let closed!: () => void;
    const connectedP = new Promise<Socket>((resolve) => (connected = resolve));
    const closedP = new Promise<void>((resolve) => (closed = resolve));
    const sockets = new Set<Socket>();
    const proxy = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('close', closed);
      socket.on('error', () => {});
      // Read (and ignore) the CONNECT, so the client's hang-up is seen.
      socket.resume();
      connected(socket);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    closers.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    });
    return {
      url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      connected: connectedP,
      closed: closedP,
    };
  }

  const tunnelled = (proxyUrl: string, timeoutMs: number) => {
    const client = new KubeClient(
      {
        server: 'https://member.invalid:6443',
        proxyUrl,
        insecureSkipTlsVerify: false,
        getCredential: async () => ({ token: 't' }),
        invalidate: () => {},
      },
      { timeoutMs },
    );
    closers.push(async () => client.close());
    return client;
  };

  it('gives up on a proxy that never answers CONNECT, closing the tunnel', async () => {
    const proxy = await silentProxy();
    // The request's own deadline is longer: the CONNECT's (the client's timeoutMs) ends it.
    const error: unknown = await tunnelled(proxy.url, 300)
      .get('/version', { timeoutMs: 600_000 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'ETIMEDOUT',
      message: expect.stringMatching(
        /^request to https:\/\/member\.invalid:6443\/version failed, reason: the proxy 127\.0\.0\.1:\d+ did not answer CONNECT to member\.invalid:6443 within 300 ms$/,
      ),
    });
    await proxy.closed;
  });

  it('destroys a pending CONNECT when the request is aborted', async () => {
    const proxy = await silentProxy();
    const abort = new AbortController();
    const request = tunnelled(proxy.url, 600_000).get('/version', { signal: abort.signal });
    await proxy.connected;
    abort.abort(new Error('caller gave up'));
    await expect(request).rejects.toThrow('caller gave up');
    await proxy.closed;
  });
});

describe('checkAddress', () => {
  it('refuses an address at connect time, after DNS, and an IP the server names', async () => {
    const server = await listen((_request, response) => response.end('{}'));
    const { port } = server.address() as AddressInfo;
    const seen: string[] = [];
    const connect = (host: string) =>
      new KubeClient(
        {
          server: `http://${host}:${port}`,
          insecureSkipTlsVerify: false,
          getCredential: async () => ({}),
          invalidate: () => {},
        },
        {
          checkAddress: (address, p) => {
            seen.push(`${address}:${p}`);
            return address === '127.0.0.1' ? 'is refused by the test' : undefined;
          },
        },
      );
    for (const host of ['localhost', '127.0.0.1']) {
      const client = connect(host);
      closers.push(async () => client.close());
      const error: unknown = await client.get('/version').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McoError);
      expect(error).toMatchObject({
        code: 'Invalid',
        retryable: false,
        message: `request to http://${host}:${port}/version refused: 127.0.0.1 port ${port} is refused by the test`,
      });
    }
    expect(seen).toContain(`127.0.0.1:${port}`);
  });
});
