import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { KubeClient } from '../src/index.js';

it("keeps the server's path prefix and sends the connection's bearer token", async () => {
  const seen: { path: string | undefined; authorization: IncomingHttpHeaders['authorization'] }[] = [];
  const server = createServer((request, response) => {
    seen.push({ path: request.url, authorization: request.headers.authorization });
    response.setHeader('Content-Type', 'application/json');
    response.end('{"gitVersion":"v1.35.0"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = (prefix: string, token: string) =>
    new KubeClient({
      server: `http://127.0.0.1:${port}${prefix}`,
      insecureSkipTlsVerify: false,
      getCredential: async () => ({ token }),
      invalidate: () => {},
    });
  const [a, b] = [client('/a', 'token-a'), client('/b/', 'token-b')];
  try {
    const versions = [await a.get('/version'), await b.get('/version')];
    expect({ versions, seen }).toEqual({
      versions: [{ gitVersion: 'v1.35.0' }, { gitVersion: 'v1.35.0' }],
      seen: [
        { path: '/a/version', authorization: 'Bearer token-a' },
        { path: '/b/version', authorization: 'Bearer token-b' },
      ],
    });
  } finally {
    a.close();
    b.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
