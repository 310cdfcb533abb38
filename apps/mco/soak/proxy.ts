// A loopback TCP proxy in front of a member's kube-apiserver, for the
// `member-slow` fault: it passes bytes through, delays every chunk in both
// directions, or refuses connections (and drops the open ones). TLS goes
// through untouched: the apiserver's certificate is for 127.0.0.1, any port.
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode =
  { readonly kind: 'pass' } | { readonly kind: 'delay'; readonly ms: number } | { readonly kind: 'refuse' };

export class FaultyProxy {
  private mode: ProxyMode = { kind: 'pass' };
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** `https://127.0.0.1:<port>`: the address clients use instead of the apiserver's. */
    readonly url: string,
  ) {}

  static async start(target: string): Promise<FaultyProxy> {
    const { hostname, port } = new URL(target);
    const accept: { to?: FaultyProxy } = {};
    const server = createServer((client) => accept.to!.accept(client, hostname, Number(port)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    accept.to = new FaultyProxy(server, `https://127.0.0.1:${(server.address() as { port: number }).port}`);
    return accept.to;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === 'refuse') for (const s of this.sockets) s.destroy();
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.mode.kind === 'refuse') return void client.destroy();
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    this.pipe(client, upstream);
    this.pipe(upstream, client);
  }

  /** Copies `from` to `to`, each chunk after the current delay, in order. */
  private pipe(from: Socket, to: Socket): void {
    let queue = Promise.resolve();
    from.on('data', (chunk) => {
      // Latency, not a throughput cap: each chunk is due its delay after it arrived.
      const due = Date.now() + (this.mode.kind === 'delay' ? this.mode.ms : 0);
      queue = queue.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!to.destroyed) to.write(chunk);
      });
    });
    from.on('close', () => void queue.then(() => to.destroy()));
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
