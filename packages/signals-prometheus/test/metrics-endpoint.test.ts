import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PrometheusSignalsConfigSchema, createAuth, createPrometheusSignalSource } from '../src/index.js';

// Google Cloud Monitoring cannot be reached from here: this server speaks the
// Prometheus HTTP API wire format at the path GKE's metricsEndpoint names, and
// plays the GCE metadata server that hands out OAuth tokens.

interface Seen {
  path: string;
  authorization?: string;
  query: string;
  time: string;
}

const T = '2026-01-01T00:00:00.000Z';

describe('the prometheus source pointed at a GKE metricsEndpoint (Prometheus wire format)', () => {
  let server: Server;
  let base: string;
  let seen: Seen[];
  let tokensIssued: number;
  /** How the query endpoint answers; default: a value per metric name. */
  let answer: (q: string, res: ServerResponse) => void;

  const values: Record<string, number> = {
    kube_horizontalpodautoscaler_status_current_replicas: 4,
    kube_horizontalpodautoscaler_status_desired_replicas: 4,
    kube_horizontalpodautoscaler_spec_min_replicas: 1,
    kube_horizontalpodautoscaler_spec_max_replicas: 4,
    kube_horizontalpodautoscaler_status_condition: 1,
    logging_googleapis_com: 1,
  };
  const vector = (v: number) => ({
    status: 'success',
    data: { resultType: 'vector', result: [{ metric: {}, value: [Date.parse(T) / 1000, String(v)] }] },
  });
  const defaultAnswer = (q: string, res: ServerResponse) => {
    const name = Object.keys(values).find((n) => q.includes(n));
    res.setHeader('Content-Type', 'application/json');
    res.end(
      JSON.stringify(name ? vector(values[name]!) : { status: 'success', data: { resultType: 'vector', result: [] } }),
    );
  };

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url?.startsWith('/computeMetadata/')) {
          if (req.headers['metadata-flavor'] !== 'Google') {
            res.statusCode = 403;
            return res.end();
          }
          tokensIssued++;
          res.setHeader('Content-Type', 'application/json');
          return res.end(
            JSON.stringify({ access_token: `ya29.token-${tokensIssued}`, expires_in: 3599, token_type: 'Bearer' }),
          );
        }
        const form = new URLSearchParams(body);
        const q = form.get('query') ?? '';
        seen.push({
          path: req.url ?? '',
          authorization: req.headers.authorization,
          query: q,
          time: form.get('time') ?? '',
        });
        if (req.headers.authorization !== `Bearer ya29.token-${tokensIssued}`) {
          res.statusCode = 401;
          res.setHeader('Content-Type', 'application/json');
          return res.end(JSON.stringify({ status: 'error', errorType: 'unauthorized', error: 'token expired' }));
        }
        answer(q, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    seen = [];
    tokensIssued = 0;
    answer = defaultAnswer;
  });

  const gkeProfile = (name: string, annotations: Record<string, string>) => {
    const p = aClusterProfile(`fleet/${name}`);
    return { ...p, metadata: { ...p.metadata, annotations } } as ClusterProfile;
  };
  const endpoint = () => `${base}/v1/projects/my-project/location/global/prometheus/api/v1/query`;
  const profile = () =>
    gkeProfile('east-us-east1', {
      'fleet.gke.io/metricsEndpoint': endpoint(),
      'fleet.gke.io/clusterName': 'east',
    });
  const request = (...profiles: ClusterProfile[]): SignalRequest => ({
    placement: {
      namespace: 'apps',
      name: 'web',
      spec: {
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            workloadDetails: { namespace: 'shop', deploymentName: 'web', hpaName: 'web' },
          },
        },
      },
    },
    clusters: profiles.map((p) => ({ key: `fleet/${p.metadata.name}`, profile: p })),
  });
  const source = (config: Record<string, unknown> = {}) => {
    const parsed = PrometheusSignalsConfigSchema.parse({
      metricsEndpointAnnotation: 'fleet.gke.io/metricsEndpoint',
      // The test's endpoint is plain http on loopback: allowed here explicitly.
      allowedEndpointPrefixes: [`${base}/v1/projects/`],
      allowHttpEndpoints: true,
      auth: { metadataServer: { url: `${base}/computeMetadata/v1/instance/service-accounts/default/token` } },
      clusterLabels: { cluster: '${annotation:fleet.gke.io/clusterName}' },
      queries: {
        failedScaleUp:
          'sum(increase(logging_googleapis_com:user_ClusterAutoscalerFailedScaleUp{${cluster}}[${window}]))',
        pendingPods: null,
        workloadHealthy: null,
      },
      ...config,
    });
    return createPrometheusSignalSource({
      config: parsed,
      auth: createAuth(parsed.auth, { now: () => new Date(T) }),
      metrics: new Registry(),
      now: () => new Date(T),
    });
  };

  it('queries the annotation URL with a metadata-server OAuth token and the cluster name from the profile', async () => {
    const result = await source().observe(request(profile()));
    expect(result).toEqual({
      signals: [
        {
          cluster: 'fleet/east-us-east1',
          observedAt: T,
          hpa: {
            currentReplicas: 4,
            desiredReplicas: 4,
            minReplicas: 1,
            maxReplicas: 4,
            scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
          },
          failedScaleUp: true,
          // The endpoint has no kube-state-metrics ready-replica series at all: drains go on the clock.
          reportsReadyReplicas: false,
        },
      ],
      errors: [],
    });
    expect({
      paths: [...new Set(seen.map((s) => s.path))],
      auth: [...new Set(seen.map((s) => s.authorization))],
      times: [...new Set(seen.map((s) => s.time))],
      tokensIssued,
      failedScaleUpQuery: seen.find((s) => s.query.includes('logging'))?.query,
    }).toEqual({
      paths: ['/v1/projects/my-project/location/global/prometheus/api/v1/query'],
      auth: ['Bearer ya29.token-1'],
      times: ['1767225600.000'],
      tokensIssued: 1,
      failedScaleUpQuery:
        'sum(increase(logging_googleapis_com:user_ClusterAutoscalerFailedScaleUp{cluster="east",}[600s]))',
    });
  });

  it.each([
    ['another host', () => 'https://metrics.evil.example/api/v1/query'],
    ['a look-alike host', () => `${base}.evil.example/v1/projects/p/api/v1/query`],
    [
      'user info before the allowed host',
      () => `http://user@${base.slice('http://'.length)}/v1/projects/p/api/v1/query`,
    ],
    ['a path outside the prefix', () => `${base}/other/api/v1/query`],
    ['dot segments leaving the prefix', () => `${base}/v1/projects/../../steal/api/v1/query`],
    ['not a URL', () => 'monitoring'],
  ])('a hostile profile pointing at %s gets no request and no token', async (_name, url) => {
    const result = await source().observe(request(gkeProfile('hostile', { 'fleet.gke.io/metricsEndpoint': url() })));
    expect({
      signals: result.signals,
      codes: result.errors.map((e) => e.code),
      requests: seen.length,
      tokensIssued,
    }).toEqual({
      signals: [],
      codes: ['Invalid'],
      requests: 0,
      tokensIssued: 0,
    });
  });

  it('allows only https prefixes, ending in "/", by default the Google monitoring endpoint', () => {
    const parse = (extra: object) => {
      const r = PrometheusSignalsConfigSchema.safeParse({ metricsEndpointAnnotation: 'a', ...extra });
      return r.success
        ? r.data.allowedEndpointPrefixes
        : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    expect({
      default: parse({}),
      http: parse({ allowedEndpointPrefixes: ['http://prom.internal/'] }),
      noSlash: parse({ allowedEndpointPrefixes: ['https://monitoring.googleapis.com'] }),
    }).toEqual({
      default: ['https://monitoring.googleapis.com/'],
      http: ['allowedEndpointPrefixes: an http:// prefix needs allowHttpEndpoints: true'],
      noSlash: ['allowedEndpointPrefixes.0: must end with "/" (else https://host matches https://host.evil.example)'],
    });
  });

  it('drops a token the API rejects and fetches a new one for the next observation', async () => {
    const s = source();
    await s.observe(request(profile()));
    tokensIssued = 5; // the server now wants token-5: the cached token-1 is rejected
    const rejected = await s.observe(request(profile()));
    const accepted = await s.observe(request(profile()));
    expect({
      rejected: { signals: rejected.signals.length, codes: [...new Set(rejected.errors.map((e) => e.code))] },
      accepted: { signals: accepted.signals.length, errors: accepted.errors.length },
    }).toEqual({ rejected: { signals: 0, codes: ['Unauthorized'] }, accepted: { signals: 1, errors: 0 } });
  });

  it.each([
    {
      name: 'a partial answer (warnings) leaves the field unknown',
      respond: (res: ServerResponse) =>
        res.end(JSON.stringify({ ...vector(3), warnings: ['some stores were unreachable'] })),
      message: 'partial answer: some stores were unreachable',
      code: 'Unavailable',
    },
    {
      name: 'an answer over maxResponseBytes is cut off',
      respond: (res: ServerResponse) => res.end(JSON.stringify({ ...vector(3), padding: 'x'.repeat(4096) })),
      message: 'the answer is larger than maxResponseBytes (2048)',
      code: 'Invalid',
    },
    {
      name: 'a server error is unavailable',
      respond: (res: ServerResponse) => {
        res.statusCode = 503;
        res.end(JSON.stringify({ status: 'error', errorType: 'unavailable', error: 'overloaded' }));
      },
      message: 'HTTP 503: unavailable: overloaded',
      code: 'Unavailable',
    },
    {
      name: 'NaN is not a number of replicas',
      respond: (res: ServerResponse) =>
        res.end(
          JSON.stringify({
            status: 'success',
            data: { resultType: 'vector', result: [{ metric: {}, value: [0, 'NaN'] }] },
          }),
        ),
      message: 'the value "NaN" is not a finite number',
      code: 'Invalid',
    },
  ])('$name', async ({ respond, message, code }) => {
    answer = (q, res) => (q.includes('current_replicas') ? respond(res) : defaultAnswer(q, res));
    const result = await source({ maxResponseBytes: 2048 }).observe(request(profile()));
    expect({
      current: result.signals[0]?.hpa?.currentReplicas,
      desired: result.signals[0]?.hpa?.desiredReplicas,
      errors: result.errors,
    }).toEqual({
      current: undefined,
      desired: 4,
      errors: [
        {
          cluster: 'fleet/east-us-east1',
          code,
          message: `query hpaCurrentReplicas at ${endpoint()}: ${message}`,
        },
      ],
    });
  });

  it('gives up on a cluster whose endpoint does not answer in time, without delaying the others', async () => {
    answer = (q, res) => {
      if (q.includes('cluster="slow"')) return; // never answers
      defaultAnswer(q, res);
    };
    const slow = gkeProfile('slow', { 'fleet.gke.io/metricsEndpoint': endpoint(), 'fleet.gke.io/clusterName': 'slow' });
    const started = Date.now();
    const result = await source({ timeoutSeconds: 0.5 }).observe(request(profile(), slow));
    expect({
      clusters: result.signals.map((s) => s.cluster),
      errors: result.errors,
      fast: Date.now() - started < 3000,
    }).toEqual({
      clusters: ['fleet/east-us-east1'],
      errors: [
        { cluster: 'fleet/slow', code: 'Timeout', message: 'no complete answer within 0.5 s; signal left missing' },
      ],
      fast: true,
    });
  });

  it('reports a profile without the annotation or the cluster-name annotation', async () => {
    const noEndpoint = gkeProfile('bare', { 'fleet.gke.io/clusterName': 'bare' });
    const noName = gkeProfile('noname', { 'fleet.gke.io/metricsEndpoint': endpoint() });
    expect(await source().observe(request(noEndpoint, noName))).toEqual({
      signals: [],
      errors: [
        {
          cluster: 'fleet/bare',
          code: 'Invalid',
          message: 'ClusterProfile fleet/bare has no annotation fleet.gke.io/metricsEndpoint',
        },
        {
          cluster: 'fleet/noname',
          code: 'Invalid',
          message: 'ClusterProfile fleet/noname has no annotation "fleet.gke.io/clusterName" (clusterLabels.cluster)',
        },
      ],
    });
  });

  it('sends a bearer token read from a file for every request, so a rotated token is used at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mco-prom-auth-'));
    const file = join(dir, 'token');
    writeFileSync(file, 'ya29.token-0\n');
    chmodSync(file, 0o600);
    const s = source({ auth: { bearerTokenFile: file } });
    await s.observe(request(profile()));
    tokensIssued = 7;
    writeFileSync(file, 'ya29.token-7');
    const after = await s.observe(request(profile()));
    expect({ auth: [...new Set(seen.map((x) => x.authorization))], errors: after.errors }).toEqual({
      auth: ['Bearer ya29.token-0', 'Bearer ya29.token-7'],
      errors: [],
    });
  });
});
