import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedTokenSource, createTokenSource, parseExecOutput } from '../src/index.js';
import { startGkeHubServer, type GkeHubServer } from './gke-hub-server.js';

describe('parseExecOutput', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  it.each([
    ['a bare token (gcloud auth print-access-token)', 'ya29.abc\n'.trim(), { token: 'ya29.abc' }],
    ['access_token and expires_in', '{"access_token":"t","expires_in":120}', { token: 't', expiresInSeconds: 120 }],
    [
      'gcloud config config-helper JSON',
      '{"credential":{"access_token":"t","token_expiry":"2026-01-01T00:10:00Z"}}',
      { token: 't', expiresInSeconds: 600 },
    ],
  ])('%s', (_name, text, expected) => {
    expect(parseExecOutput(text, now)).toEqual(expected);
  });

  it.each([
    ['empty output', ''],
    ['several words', 'not a token'],
    ['JSON without a token', '{"error":"x"}'],
  ])('%s is not a token', (_name, text) => {
    expect(() => parseExecOutput(text, now)).toThrow();
  });
});

describe('cachedTokenSource', () => {
  it('reuses a token until a minute before expiry, shares one fetch between callers, and refetches after invalidate', async () => {
    let clock = 0;
    let fetches = 0;
    const source = cachedTokenSource(
      async () => ({ token: `t${++fetches}`, expiresInSeconds: 3600 }),
      () => new Date(clock),
      undefined,
    );
    const seen: string[] = [];
    seen.push(...(await Promise.all([source.token(), source.token(), source.token()])));
    clock = 3539_000;
    seen.push(await source.token());
    clock = 3540_000;
    seen.push(await source.token());
    source.invalidate();
    seen.push(await source.token());
    expect({ seen, fetches }).toEqual({ seen: ['t1', 't1', 't1', 't1', 't2', 't3'], fetches: 3 });
  });

  it('a failed fetch is not cached', async () => {
    let calls = 0;
    const source = cachedTokenSource(
      async () => {
        if (++calls === 1) throw new Error('no');
        return { token: 'ok' };
      },
      () => new Date(0),
      300,
    );
    await expect(source.token()).rejects.toThrow('no');
    expect(await source.token()).toBe('ok');
  });
});

describe('exec token source', () => {
  const node = process.execPath;
  const opts = { now: () => new Date(), timeoutMs: 2000 };

  it('runs the command once and caches its token for cacheSeconds', async () => {
    const source = createTokenSource(
      { type: 'exec', command: node, args: ['-e', 'process.stdout.write("tok-" + process.pid)'], cacheSeconds: 300 },
      opts,
    );
    const [a, b] = [await source.token(), await source.token()];
    expect({ same: a === b, shape: /^tok-\d+$/.test(a) }).toEqual({ same: true, shape: true });
  });

  it('a failing command is Unauthorized, names the command, and never shows a token it printed', async () => {
    const source = createTokenSource(
      {
        type: 'exec',
        command: node,
        args: ['-e', 'console.error("oops ya29.SECRET-token"); process.exit(3)'],
        cacheSeconds: 300,
      },
      opts,
    );
    const error = await source.token().catch((e: { code: string; message: string }) => e);
    expect(typeof error === 'object' && [error.code, error.message]).toEqual([
      'Unauthorized',
      `token command ${node} failed (3): oops [REDACTED]`,
    ]);
  });

  it('a hanging command is killed after the timeout', async () => {
    const source = createTokenSource(
      { type: 'exec', command: node, args: ['-e', 'setTimeout(() => {}, 10000)'], cacheSeconds: 300 },
      { ...opts, timeoutMs: 200 },
    );
    await expect(source.token()).rejects.toThrow(`token command ${node} timed out after 200 ms`);
  });
});

describe('metadata server token source', () => {
  let server: GkeHubServer;
  beforeAll(async () => {
    server = await startGkeHubServer();
  });
  afterAll(() => server.close());

  it('asks with Metadata-Flavor: Google and caches the token until shortly before expires_in', async () => {
    let clock = 0;
    const source = createTokenSource(
      { type: 'metadata', baseUrl: server.url },
      { now: () => new Date(clock), timeoutMs: 2000 },
    );
    const first = await source.token();
    const cached = await source.token();
    clock = 3600_000;
    const renewed = await source.token();
    expect({ first, cached, renewed, issued: server.tokensIssued }).toEqual({
      first: 'token-1',
      cached: 'token-1',
      renewed: 'token-2',
      issued: 2,
    });
  });

  it('an address that is not a metadata server is refused', async () => {
    const source = createTokenSource(
      { type: 'metadata', baseUrl: `${server.url}/elsewhere` },
      { now: () => new Date(), timeoutMs: 2000 },
    );
    await expect(source.token()).rejects.toThrow(`metadata server ${server.url}/elsewhere answered 404`);
  });
});
