import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTokenSource, listMemberships, type ListResult } from '../src/index.js';
import { aMembership, startGkeHubServer, type GkeHubServer } from './gke-hub-server.js';

describe('listMemberships against a local GKE Hub', () => {
  let server: GkeHubServer;
  const fleet = ['a', 'b', 'c', 'd', 'e'].map((id) => aMembership(id, 'us-east1'));

  beforeAll(async () => {
    server = await startGkeHubServer();
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.memberships = fleet;
    server.pageSize = 2;
    server.unreachable = undefined;
    server.failNext = undefined;
    server.delayMs = 0;
    server.loopToken = undefined;
    server.requests.length = 0;
  });

  const list = (extra: { timeoutMs?: number; pageSize?: number } = {}) =>
    listMemberships({
      endpoint: server.url,
      project: 'my-project',
      tokens: createTokenSource({ type: 'metadata', baseUrl: server.url }, { now: () => new Date(), timeoutMs: 2000 }),
      timeoutMs: extra.timeoutMs ?? 2000,
      pageSize: extra.pageSize,
    });
  const failure = (result: ListResult) =>
    result.ok ? 'ok' : { reason: result.reason, code: result.error.code, message: result.error.message };

  it('follows nextPageToken across all locations and returns every membership in order', async () => {
    const result = await list();
    expect({
      names: result.ok && result.memberships.map((m) => m.name.split('/').pop()),
      pages: result.ok && result.pages,
      requests: server.requests.filter((r) => r.includes('memberships')).map((r) => r.replace(/token-\d+/, 'T')),
    }).toEqual({
      names: ['a', 'b', 'c', 'd', 'e'],
      pages: 3,
      requests: [
        'GET /v1/projects/my-project/locations/-/memberships Bearer T',
        'GET /v1/projects/my-project/locations/-/memberships?pageToken=page-2 Bearer T',
        'GET /v1/projects/my-project/locations/-/memberships?pageToken=page-4 Bearer T',
      ],
    });
  });

  it('passes pageSize through', async () => {
    const result = await list({ pageSize: 5 });
    expect(result.ok && result.pages).toBe(1);
  });

  it.each([
    [
      'unreachable locations on a later page fail the whole listing',
      (s: GkeHubServer) => (s.unreachable = { page: 1, locations: ['asia-east1'] }),
      {
        reason: 'UnreachableLocations',
        code: 'Unavailable',
        message: 'GKE Hub could not reach locations asia-east1: the listing is incomplete',
      },
    ],
    [
      'a 503 is Unavailable with Google’s message',
      (s: GkeHubServer) => (s.failNext = { count: 1, status: 503, message: 'The service is currently unavailable.' }),
      {
        reason: 'Unavailable',
        code: 'Unavailable',
        message: 'list GKE Hub memberships: GKE Hub answered 503: The service is currently unavailable.',
      },
    ],
    [
      'a 403 is Unauthorized',
      (s: GkeHubServer) =>
        (s.failNext = { count: 1, status: 403, message: "Permission 'gkehub.memberships.list' denied" }),
      {
        reason: 'Unauthorized',
        code: 'Unauthorized',
        message: "list GKE Hub memberships: GKE Hub answered 403: Permission 'gkehub.memberships.list' denied",
      },
    ],
    [
      'a 404 (unknown project) is NotFound',
      (s: GkeHubServer) => (s.failNext = { count: 1, status: 404, message: 'Project not found' }),
      {
        reason: 'NotFound',
        code: 'NotFound',
        message: 'list GKE Hub memberships: GKE Hub answered 404: Project not found',
      },
    ],
    [
      'a page token that never ends is Invalid',
      (s: GkeHubServer) => (s.loopToken = 'again'),
      {
        reason: 'Invalid',
        code: 'Invalid',
        message: 'GKE Hub repeated a page token: the listing would never end',
      },
    ],
    [
      'a page that is not the documented shape is Invalid',
      (s: GkeHubServer) => (s.memberships = [{ labels: {} } as never]),
      {
        reason: 'Invalid',
        code: 'Invalid',
        message:
          'page 1 of memberships does not have the documented shape: resources.0.name: Invalid input: expected string, received undefined',
      },
    ],
  ])('%s', async (_name, setup, expected) => {
    setup(server);
    expect(failure(await list())).toEqual(expected);
  });

  it('a slow answer times out', async () => {
    server.delayMs = 500;
    const result = await list({ timeoutMs: 100 });
    expect(result.ok ? 'ok' : [result.reason, result.error.code]).toEqual(['Timeout', 'Timeout']);
  });

  it('a 401 gets one retry with a fresh token', async () => {
    const tokens = createTokenSource(
      { type: 'metadata', baseUrl: server.url },
      { now: () => new Date(), timeoutMs: 2000 },
    );
    await tokens.token();
    server.validTokens.clear(); // the cached token was revoked
    const result = await listMemberships({ endpoint: server.url, project: 'my-project', tokens, timeoutMs: 2000 });
    expect(result.ok && result.memberships.length).toBe(5);
  });
});
