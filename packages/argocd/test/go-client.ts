import { connect, type Socket } from 'node:net';

/**
 * Sends requests byte for byte as Argo CD's ApplicationSet controller does
 * (applicationset/services/internal/http/client.go on Go's net/http): HTTP/1.1,
 * headers in Go's write order, the body from json.Encoder (with its trailing
 * newline), and keep-alive connections reused between calls.
 */
export interface GoRequest {
  readonly method?: string;
  readonly path?: string;
  /** Header lines after Host and User-Agent; defaults to what Argo CD sends. */
  readonly headers?: ReadonlyArray<readonly [string, string]>;
  readonly token?: string | null;
  readonly contentType?: string | null;
  readonly body?: string;
}

export interface GoResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  json(): unknown;
}

/** The body Argo CD sends: `{"applicationSetName": ..., "input": {"parameters": {...}}}` plus json.Encoder's newline. */
export function argoBody(applicationSetName: string, parameters: Record<string, unknown>): string {
  return `${JSON.stringify({ applicationSetName, input: { parameters } })}\n`;
}

export class GoClient {
  private socket: Socket | undefined;
  private buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly port: number,
    private readonly host = '127.0.0.1',
  ) {}

  async request(request: GoRequest): Promise<GoResponse> {
    const socket = await this.connection();
    const body = Buffer.from(request.body ?? '', 'utf8');
    const lines = [
      `${request.method ?? 'POST'} ${request.path ?? '/api/v1/getparams.execute'} HTTP/1.1`,
      `Host: ${this.host}:${this.port}`,
      'User-Agent: argocd-applicationset',
    ];
    if (request.headers) {
      for (const [k, v] of request.headers) lines.push(`${k}: ${v}`);
    } else {
      if (body.length > 0 || (request.method ?? 'POST') === 'POST') lines.push(`Content-Length: ${body.length}`);
      if (request.token !== null) lines.push(`Authorization: Bearer ${request.token ?? ''}`);
      if (request.contentType !== null) lines.push(`Content-Type: ${request.contentType ?? 'application/json'}`);
      lines.push('Accept-Encoding: gzip');
    }
    socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]));
    return this.readResponse();
  }

  /** True when the server closed the connection. */
  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    this.socket?.destroy();
  }

  private connection(): Promise<Socket> {
    if (this.socket && !this.closed) return Promise.resolve(this.socket);
    this.closed = false;
    this.buffer = Buffer.alloc(0);
    return new Promise((resolve, reject) => {
      const socket = connect(this.port, this.host, () => resolve(socket));
      socket.on('data', (chunk: Buffer) => {
        this.buffer = Buffer.concat([this.buffer, chunk]);
        this.waiter?.();
      });
      socket.on('close', () => {
        this.closed = true;
        this.waiter?.();
      });
      socket.on('error', reject);
      this.socket = socket;
    });
  }

  private async readResponse(): Promise<GoResponse> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(head[0]?.split(' ')[1]);
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status, headers, body, json: () => JSON.parse(body) };
        }
      }
      if (this.closed) throw new Error(`connection closed; received ${JSON.stringify(this.buffer.toString())}`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
  }
}
