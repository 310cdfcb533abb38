import { describe, expect, it } from 'vitest';
import { createLogger, redact, RepeatLimiter } from '../src/index.js';

describe('redact', () => {
  it.each([
    ['a token string', { token: 'abc' }, { token: '[REDACTED]' }],
    [
      'a bearer token nested in headers',
      { headers: { Authorization: 'Bearer abc' } },
      { headers: { Authorization: '[REDACTED]' } },
    ],
    ['a client secret', { clientSecret: 's3cr3t' }, { clientSecret: '[REDACTED]' }],
    ['a list of tokens', { tokens: ['a', 'b'] }, { tokens: '[REDACTED]' }],
    ['a boolean flag that mentions secrets', { syncClusterSecrets: true }, { syncClusterSecrets: true }],
    ['a path to a token file', { tokenFile: '/etc/token' }, { tokenFile: '/etc/token' }],
    ['the name of a Secret', { secretName: 'cluster-a' }, { secretName: 'cluster-a' }],
    ['the namespace Secrets are synced to', { syncClusterSecrets: 'argocd' }, { syncClusterSecrets: 'argocd' }],
    ['a secret string', { secret: 's3cr3t' }, { secret: '[REDACTED]' }],
    [
      'a token in a list of objects',
      { users: [{ name: 'a', token: 't' }] },
      { users: [{ name: 'a', token: '[REDACTED]' }] },
    ],
    ['a count of tokens', { token: 3 }, { token: 3 }],
    [
      'an object under a secret-looking key: its own secret values only',
      { credentials: { user: 'u', password: 'p' } },
      { credentials: { user: 'u', password: '[REDACTED]' } },
    ],
  ])('%s', (_name, input, expected) => {
    expect(redact(input)).toEqual(expected);
  });

  it('writes the argocd sync start-up line with its settings readable', () => {
    const lines: string[] = [];
    createLogger({ write: (line) => lines.push(line), now: () => new Date(0) })
      .child({ component: 'mco-argocd-sync' })
      .info('argocd sync running', { syncClusterSecrets: 'argocd', refreshApplicationSets: 'argocd' });
    expect(JSON.parse(lines[0]!)).toEqual({
      time: '1970-01-01T00:00:00.000Z',
      level: 'info',
      msg: 'argocd sync running',
      component: 'mco-argocd-sync',
      syncClusterSecrets: 'argocd',
      refreshApplicationSets: 'argocd',
    });
  });
});

describe('RepeatLimiter', () => {
  it('lets the first occurrence per key through, then one per interval with the count held back', () => {
    let now = 0;
    const limiter = new RepeatLimiter(1000, () => now);
    const seen: (number | undefined)[] = [];
    for (const [t, key] of [
      [0, 'a'],
      [100, 'a'],
      [200, 'b'],
      [500, 'a'],
      [1000, 'a'],
      [1500, 'a'],
      [2100, 'a'],
    ] as const) {
      now = t;
      seen.push(limiter.admit(key));
    }
    expect(seen).toEqual([0, undefined, 0, undefined, 2, undefined, 1]);
  });

  it('logs at once again after forget (the condition ended and came back)', () => {
    const limiter = new RepeatLimiter(1000, () => 0);
    expect([limiter.admit('a'), limiter.admit('a'), (limiter.forget('a'), limiter.admit('a'))]).toEqual([
      0,
      undefined,
      0,
    ]);
  });
});
