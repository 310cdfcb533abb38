import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import type { Placement } from '@mco/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFileTokenVerifier,
  createPluginServer,
  createStaticPlacementView,
  type PluginServer,
} from '../src/index.js';
import { GoClient, argoBody, type GoRequest } from './go-client.js';

const T = '2026-01-01T00:00:00Z';
const TOKEN = 'correct-horse-battery-staple';

const placements: Placement[] = [
  aPlacement(
    'hello-world/hello-web',
    {},
    {
      observedGeneration: 1,
      clusters: [
        // A replacement with a replica floor (rule O3).
        {
          name: 'us-east1',
          namespace: 'fleet',
          state: 'ACTIVE',
          lastTransitionTime: T,
          desiredMinReplicas: 6,
          replacesCluster: 'fleet/eu-west4',
        },
        {
          name: 'eu-west4',
          namespace: 'fleet',
          state: 'SCALING_IN',
          lastTransitionTime: T,
          draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T },
        },
        // The profile is gone; the cluster is still being evicted, so it stays listed.
        { name: 'gone', namespace: 'fleet', state: 'EVICTING', lastTransitionTime: T },
      ],
    },
  ),
  aPlacement('hello-world/empty', {}, { observedGeneration: 1, clusters: [] }),
  aPlacement('hello-world/new'),
  aPlacement(
    'hello-world/lagging',
    {},
    {
      observedGeneration: 1,
      clusters: [{ name: 'not-cached', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: T }],
    },
  ),
  aPlacement(
    'hello-world/broken',
    {},
    { observedGeneration: 1, clusters: [{ name: 'us-east1', state: 'ACTIVE', lastTransitionTime: T }] },
  ),
  // Restored from a backup or migrated: a status the controller never stamped is no information.
  aPlacement(
    'hello-world/unstamped',
    {},
    { clusters: [{ name: 'us-east1', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: T }] },
  ),
  // A spec edit the controller has not evaluated yet: the last clusters are still answered.
  {
    ...aPlacement(
      'hello-world/edited',
      {},
      {
        observedGeneration: 1,
        clusters: [{ name: 'us-east1', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: T }],
      },
    ),
    metadata: { namespace: 'hello-world', name: 'edited', generation: 2 },
  },
];
const profiles = [
  aClusterProfile('fleet/us-east1', { labels: { environment: 'production' }, server: 'https://us-east1.example' }),
  aClusterProfile('fleet/eu-west4', { labels: { environment: 'production', region: 'eu' } }),
];

const params = (name: unknown, namespace: unknown = 'hello-world') => ({
  multiClusterOrchestraPlacementName: name,
  multiClusterOrchestraPlacementNamespace: namespace,
});

let dir: string;
let tokenFile: string;
let plugin: PluginServer;
let port: number;
const view = createStaticPlacementView({ placements, clusterProfiles: profiles });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mco-argocd-'));
  tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${TOKEN}\n`);
  const token = createFileTokenVerifier(tokenFile, { minReloadIntervalMs: 0, recheckIntervalMs: 50 });
  plugin = createPluginServer({ view, token, limits: { maxBodyBytes: 1024, maxHeaderBytes: 4096 } });
  port = (await plugin.listen(0, '127.0.0.1')).port;
});

afterAll(async () => {
  await plugin.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(request: GoRequest) {
  const client = new GoClient(port);
  try {
    return await client.request(request);
  } finally {
    client.close();
  }
}

describe('the plugin generator endpoint, called as Argo CD calls it', () => {
  it('answers one parameter set per listed cluster, with MCO keys and the superset, every key present', async () => {
    const response = await send({ token: TOKEN, body: argoBody('hello-world-applicationset', params('hello-web')) });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.json()).toEqual({
      output: {
        parameters: [
          {
            name: 'fleet.us-east1',
            desiredMaxReplicas: null,
            desiredMinReplicas: 6,
            server: 'https://us-east1.example',
            clusterProfileName: 'us-east1',
            clusterProfileNamespace: 'fleet',
            state: 'ACTIVE',
            draining: false,
            placementName: 'hello-web',
            placementNamespace: 'hello-world',
            labels: { environment: 'production' },
          },
          {
            name: 'fleet.eu-west4',
            desiredMaxReplicas: 3,
            desiredMinReplicas: null,
            server: null,
            clusterProfileName: 'eu-west4',
            clusterProfileNamespace: 'fleet',
            state: 'SCALING_IN',
            draining: true,
            placementName: 'hello-web',
            placementNamespace: 'hello-world',
            labels: { environment: 'production', region: 'eu' },
          },
          {
            name: 'fleet.gone',
            desiredMaxReplicas: null,
            desiredMinReplicas: null,
            server: null,
            clusterProfileName: 'gone',
            clusterProfileNamespace: 'fleet',
            state: 'EVICTING',
            draining: false,
            placementName: 'hello-web',
            placementNamespace: 'hello-world',
            labels: {},
          },
        ],
      },
    });
  });

  it('answers anew when a listed ClusterProfile changes (the cached answer is not reused)', async () => {
    const request = { token: TOKEN, body: argoBody('a', params('hello-web')) };
    const labelsOf = async () =>
      ((await send(request)).json() as { output: { parameters: { labels: object }[] } }).output.parameters[0]!.labels;
    const before = await labelsOf();
    view.setClusterProfile(
      aClusterProfile('fleet/us-east1', { labels: { environment: 'staging' }, server: 'https://us-east1.example' }),
    );
    try {
      expect({ before, after: await labelsOf() }).toEqual({
        before: { environment: 'production' },
        after: { environment: 'staging' },
      });
    } finally {
      view.setClusterProfile(profiles[0]!);
    }
  });

  it('answers an empty list only for a placement the controller has evaluated to no clusters', async () => {
    const response = await send({ token: TOKEN, body: argoBody('a', params('empty')) });
    expect({ status: response.status, body: response.json() }).toEqual({
      status: 200,
      body: { output: { parameters: [] } },
    });
  });

  it('keeps answering the last clusters while a spec edit is not evaluated yet (lagging observedGeneration)', async () => {
    const response = await send({ token: TOKEN, body: argoBody('a', params('edited')) });
    expect(response.status).toBe(200);
    expect((response.json() as { output: { parameters: { name: string }[] } }).output.parameters).toEqual([
      expect.objectContaining({ name: 'fleet.us-east1', placementName: 'edited' }),
    ]);
  });

  it.each<[string, GoRequest, number, string, Record<string, string>?]>([
    [
      'a request without Authorization is 401',
      { token: null, body: argoBody('a', params('hello-web')) },
      401,
      'Unauthorized',
      { 'www-authenticate': 'Bearer' },
    ],
    [
      'a request with another auth scheme is 401',
      {
        headers: [
          ['Content-Length', '2'],
          ['Authorization', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`],
          ['Content-Type', 'application/json'],
        ],
        body: '{}',
      },
      401,
      'Unauthorized',
    ],
    ['a wrong token is 403', { token: 'wrong', body: argoBody('a', params('hello-web')) }, 403, 'Forbidden'],
    [
      'a token that only starts like the right one is 403',
      { token: `${TOKEN}x`, body: argoBody('a', params('hello-web')) },
      403,
      'Forbidden',
    ],
    [
      'a GET on the plugin path is 405 with Allow: POST',
      { method: 'GET', token: TOKEN, contentType: null },
      405,
      'MethodNotAllowed',
      { allow: 'POST' },
    ],
    ['an unknown path is 404', { path: '/api/v1/other', token: TOKEN, body: '{}' }, 404, 'NotFound'],
    [
      'a body that is not JSON by Content-Type is 415',
      { token: TOKEN, contentType: 'text/plain', body: argoBody('a', params('hello-web')) },
      415,
      'UnsupportedMediaType',
    ],
    [
      'a body over the limit is 413',
      { token: TOKEN, body: argoBody('a', { ...params('hello-web'), pad: 'x'.repeat(2000) }) },
      413,
      'PayloadTooLarge',
    ],
    ['a body that is not JSON is 400', { token: TOKEN, body: '{"input":' }, 400, 'BadRequest'],
    ['an unknown placement is 404', { token: TOKEN, body: argoBody('a', params('missing')) }, 404, 'PlacementNotFound'],
    [
      'a placement the controller has not evaluated yet is 503',
      { token: TOKEN, body: argoBody('a', params('new')) },
      503,
      'PlacementNotEvaluated',
    ],
    [
      'an ACTIVE cluster whose ClusterProfile is not cached yet is 503',
      { token: TOKEN, body: argoBody('a', params('lagging')) },
      503,
      'ClusterProfileNotCached',
    ],
    [
      'a status the controller never stamped (no observedGeneration) is 503',
      { token: TOKEN, body: argoBody('a', params('unstamped')) },
      503,
      'PlacementNotEvaluated',
    ],
    [
      'a status listing a cluster without a namespace is 500',
      { token: TOKEN, body: argoBody('a', params('broken')) },
      500,
      'InvalidPlacementStatus',
    ],
  ])('%s', async (_name, request, status, reason, headers = {}) => {
    const response = await send(request);
    expect({ status: response.status, error: (response.json() as { error: string }).error }).toEqual({
      status,
      error: reason,
    });
    expect(response.headers).toMatchObject(headers);
  });

  it.each<[string, Record<string, unknown> | string, string]>([
    [
      'a missing placement name',
      { multiClusterOrchestraPlacementNamespace: 'hello-world' },
      'input.parameters.multiClusterOrchestraPlacementName is required',
    ],
    [
      'a missing placement namespace',
      { multiClusterOrchestraPlacementName: 'hello-web' },
      'input.parameters.multiClusterOrchestraPlacementNamespace is required',
    ],
    [
      'a placement name that is not a string',
      params(42),
      'input.parameters.multiClusterOrchestraPlacementName must be a Kubernetes object name',
    ],
    [
      'a namespace that is not a namespace name',
      params('hello-web', 'Hello_World'),
      'input.parameters.multiClusterOrchestraPlacementNamespace must be a Kubernetes namespace name',
    ],
  ])('a request with %s is 400 naming the parameter', async (_name, parameters, message) => {
    const response = await send({ token: TOKEN, body: argoBody('a', parameters as Record<string, unknown>) });
    expect({ status: response.status, body: response.json() }).toEqual({
      status: 400,
      body: { error: 'BadRequest', message },
    });
  });

  it('answers 503 while the cache is not synced, and never a list', async () => {
    view.setSynced(false);
    try {
      const response = await send({ token: TOKEN, body: argoBody('a', params('hello-web')) });
      expect({ status: response.status, body: response.json(), retry: response.headers['retry-after'] }).toEqual({
        status: 503,
        body: { error: 'NotSynced', message: 'the placement cache is not synced yet; Argo CD will retry' },
        retry: '5',
      });
      const ready = await send({ method: 'GET', path: '/readyz', contentType: null, token: null });
      expect(ready.status).toBe(503);
    } finally {
      view.setSynced(true);
    }
  });

  it('still checks the token before saying anything about the cache', async () => {
    view.setSynced(false);
    try {
      const response = await send({ token: 'wrong', body: argoBody('a', params('hello-web')) });
      expect(response.status).toBe(403);
    } finally {
      view.setSynced(true);
    }
  });

  it('serves several requests on one keep-alive connection, as Go reuses idle connections', async () => {
    const client = new GoClient(port);
    try {
      const statuses = [];
      for (const name of ['hello-web', 'empty', 'missing', 'hello-web']) {
        statuses.push((await client.request({ token: TOKEN, body: argoBody('a', params(name)) })).status);
      }
      expect({ statuses, closed: client.isClosed }).toEqual({ statuses: [200, 200, 404, 200], closed: false });
    } finally {
      client.close();
    }
  });

  it('keeps idle connections longer than Go’s 90 s IdleConnTimeout and bounds request heads and times', () => {
    const { server } = plugin;
    expect({
      keepAliveAboveGoIdle: server.keepAliveTimeout > 90_000,
      headersTimeout: server.headersTimeout,
      requestTimeout: server.requestTimeout,
    }).toEqual({ keepAliveAboveGoIdle: true, headersTimeout: 10_000, requestTimeout: 30_000 });
  });

  it('closes a connection whose request head does not arrive within the head timeout (slow clients)', async () => {
    const slow = createPluginServer({
      view,
      token: createFileTokenVerifier(tokenFile),
      limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 },
    });
    const { port: slowPort } = await slow.listen(0, '127.0.0.1');
    try {
      const socket = connect(slowPort, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.write('POST /api/v1/getparams.execute HTTP/1.1\r\nHost: x\r\n'); // and never the rest
      const started = Date.now();
      await new Promise((resolve) => socket.once('close', resolve));
      expect({ status: received.split('\r\n', 1)[0], withinSeconds: Date.now() - started < 3000 }).toEqual({
        status: 'HTTP/1.1 408 Request Timeout',
        withinSeconds: true,
      });
    } finally {
      await slow.close();
    }
  });

  it('answers a refused body, then discards the rest only within its bounds: a client that never finishes is closed', async () => {
    const bounded = createPluginServer({
      view,
      token: createFileTokenVerifier(tokenFile),
      limits: { maxBodyBytes: 1024, lingerBytes: 64 * 1024, lingerMs: 300 },
    });
    const { port: boundedPort } = await bounded.listen(0, '127.0.0.1');
    try {
      const socket = connect(boundedPort, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('error', () => {}); // the reset after the bound is expected
      const head = `POST /api/v1/getparams.execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n`;
      // Declares 10 MiB, sends 4 KiB and then nothing: the 413 arrives, and the connection closes after lingerMs.
      socket.write(`${head}Content-Length: ${10 * 1024 * 1024}\r\n\r\n${'x'.repeat(4096)}`);
      const started = Date.now();
      await new Promise((resolve) => socket.once('close', resolve));
      expect({
        status: received.split('\r\n', 1)[0],
        connection: /\r\nconnection: close\r\n/i.test(received),
        closedWithinSeconds: Date.now() - started < 3000,
      }).toEqual({ status: 'HTTP/1.1 413 Payload Too Large', connection: true, closedWithinSeconds: true });
    } finally {
      await bounded.close();
    }
  });

  it('refuses a request head larger than the header limit with 431', async () => {
    const response = await send({
      headers: [
        ['Content-Length', '2'],
        ['Authorization', `Bearer ${TOKEN}`],
        ['X-Padding', 'x'.repeat(8192)],
      ],
      body: '{}',
    });
    expect(response.status).toBe(431);
  });
});

describe('the token file', () => {
  it('accepts a rotated token at once and rejects the old one, as a mounted Secret is swapped', async () => {
    const next = join(dir, 'token.next');
    writeFileSync(next, 'rotated-token');
    renameSync(next, tokenFile);
    const rotated = await send({ token: 'rotated-token', body: argoBody('a', params('empty')) });
    await new Promise((resolve) => setTimeout(resolve, 120));
    const old = await send({ token: TOKEN, body: argoBody('a', params('empty')) });
    writeFileSync(next, TOKEN);
    renameSync(next, tokenFile);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect({ rotated: rotated.status, old: old.status }).toEqual({ rotated: 200, old: 403 });
  });

  it.each([
    ['a missing file', null, /cannot read the plugin token file/],
    ['an empty file', '\n', /is empty/],
  ])('refuses to start with %s: there is no default token', (_name, content, message) => {
    const path = join(dir, `t-${Math.random()}`);
    if (content !== null) writeFileSync(path, content);
    expect(() => createFileTokenVerifier(path)).toThrow(message);
  });
});
