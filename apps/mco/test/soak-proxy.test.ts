// The `member-slow` fault's proxy (docs/reliability.md): bytes pass through,
// arrive no sooner than the added latency, or the connection is refused.
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultyProxy } from '../soak/proxy.js';

let echo: Server;
let proxy: FaultyProxy;

beforeAll(async () => {
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  proxy = await FaultyProxy.start(`https://127.0.0.1:${(echo.address() as AddressInfo).port}`);
});
afterAll(async () => {
  await proxy.stop();
  await new Promise((resolve) => echo.close(resolve));
});

/** Sends `text` through the proxy; resolves with the echo and how long it took, or the error. */
function roundTrip(text: string): Promise<{ reply: string; ms: number } | { error: string }> {
  const { port } = new URL(proxy.url);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let reply = '';
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.length >= text.length) {
        socket.destroy();
        resolve({ reply, ms: Date.now() - started });
      }
    });
    socket.on('close', () => resolve({ error: 'closed' }));
    socket.on('error', (e) => resolve({ error: e.message }));
  });
}

it('passes bytes through, delays them both ways, and refuses connections, as its mode says', async () => {
  expect(await roundTrip('hello')).toMatchObject({ reply: 'hello' });
  proxy.setMode({ kind: 'delay', ms: 300 });
  const slow = await roundTrip('slow');
  expect(slow).toMatchObject({ reply: 'slow' });
  expect((slow as { ms: number }).ms).toBeGreaterThanOrEqual(600); // 300 ms each way
  proxy.setMode({ kind: 'refuse' });
  expect(await roundTrip('no')).toEqual({ error: 'closed' });
  proxy.setMode({ kind: 'pass' });
  expect(await roundTrip('back')).toMatchObject({ reply: 'back' });
});
