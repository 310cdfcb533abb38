import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/processes.js';

describe('freePort', () => {
  // A flux test once gave source-controller the same port for its health probe and its artifact
  // server: the OS offered the port again as soon as the first call released it.
  it('never hands one process the same port twice, and each is free to bind', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports.at(-1), '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
