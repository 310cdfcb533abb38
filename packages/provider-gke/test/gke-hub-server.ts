import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Membership } from '../src/index.js';

/**
 * A loopback HTTP server speaking the documented GKE Hub v1 wire format for
 * `projects.locations.memberships.list` (resources[], nextPageToken,
 * unreachable[], Google error bodies) and the GCE metadata server's token
 * endpoint, with knobs for the failures the provider must survive.
 */
export interface GkeHubServer {
  readonly url: string;
  /** The fleet, in listing order. */
  memberships: Membership[];
  /** Memberships per page when the request names no pageSize. */
  pageSize: number;
  /** `unreachable[]` to report on the page with this index (0-based). */
  unreachable?: { page: number; locations: string[] };
  /** Answer the next N listing requests with this status and a Google error body. */
  failNext?: { count: number; status: number; message: string };
  /** Delay every listing answer by this many ms (headers included). */
  delayMs: number;
  /** Send this page token forever (a broken server). */
  loopToken?: string;
  /** Tokens the hub accepts; the metadata endpoint issues `token-<n>`. */
  readonly validTokens: Set<string>;
  tokenLifetimeSeconds: number;
  /** Requests seen, e.g. `GET /v1/projects/p/locations/-/memberships?pageSize=2 Bearer token-1`. */
  readonly requests: string[];
  tokensIssued: number;
  close(): Promise<void>;
}

export async function startGkeHubServer(): Promise<GkeHubServer> {
  const state: Omit<GkeHubServer, 'url' | 'close'> = {
    memberships: [],
    pageSize: 100,
    delayMs: 0,
    validTokens: new Set(),
    tokenLifetimeSeconds: 3599,
    requests: [],
    tokensIssued: 0,
  };
  const server = createServer((req, res) => {
    handle(state, req, res).catch((error: Error) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: { code: 500, message: error.message, status: 'INTERNAL' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

const LIST = /^\/v1\/projects\/([^/]+)\/locations\/-\/memberships$/;

async function handle(state: Omit<GkeHubServer, 'url' | 'close'>, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const auth = req.headers.authorization ?? '';
  state.requests.push(`${req.method} ${url.pathname}${url.search} ${auth}`.trim());
  res.setHeader('content-type', 'application/json');

  if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token') {
    res.setHeader('metadata-flavor', 'Google');
    if (req.headers['metadata-flavor'] !== 'Google') return error(res, 403, 'Missing Metadata-Flavor:Google header.');
    const token = `token-${++state.tokensIssued}`;
    state.validTokens.add(token);
    res.end(JSON.stringify({ access_token: token, expires_in: state.tokenLifetimeSeconds, token_type: 'Bearer' }));
    return;
  }

  const match = LIST.exec(url.pathname);
  if (req.method !== 'GET' || !match) return error(res, 404, `no route for ${req.method} ${url.pathname}`);
  if (state.delayMs > 0) {
    // A request whose client gave up during the delay must not consume a later
    // test's failNext when its timer finally fires.
    let gone = false;
    res.once('close', () => (gone = true));
    await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    if (gone) return;
  }
  if (!state.validTokens.has(auth.replace(/^Bearer /, '')))
    return error(res, 401, 'Request had invalid authentication credentials.', 'UNAUTHENTICATED');
  if (state.failNext && state.failNext.count > 0) {
    state.failNext.count--;
    return error(res, state.failNext.status, state.failNext.message);
  }
  const size = Number(url.searchParams.get('pageSize') ?? state.pageSize);
  const start = Number(url.searchParams.get('pageToken')?.replace('page-', '') ?? 0);
  const page = Math.floor(start / size);
  const resources = state.memberships.slice(start, start + size);
  const next = start + size < state.memberships.length ? `page-${start + size}` : undefined;
  res.end(
    JSON.stringify({
      resources,
      ...(state.loopToken ? { nextPageToken: state.loopToken } : next ? { nextPageToken: next } : {}),
      ...(state.unreachable?.page === page ? { unreachable: state.unreachable.locations } : {}),
    }),
  );
}

function error(res: ServerResponse, code: number, message: string, status = 'UNAVAILABLE') {
  res.statusCode = code;
  res.end(JSON.stringify({ error: { code, message, status } }));
}

/** A membership as GKE Hub v1 returns it for a GKE cluster. */
export function aMembership(
  id: string,
  location: string,
  options: {
    state?: string;
    labels?: Record<string, string>;
    clusterMissing?: boolean;
    project?: string;
    version?: string;
  } = {},
): Membership {
  const project = options.project ?? '123456789012';
  return {
    name: `projects/${project}/locations/${location}/memberships/${id}`,
    labels: options.labels ?? {},
    endpoint: {
      gkeCluster: {
        resourceLink: `//container.googleapis.com/projects/my-project/locations/${location}/clusters/${id}`,
        ...(options.clusterMissing ? { clusterMissing: true } : {}),
      },
      kubernetesMetadata: { kubernetesApiServerVersion: options.version ?? 'v1.34.1-gke.3355000' },
    },
    state: { code: options.state ?? 'READY' },
    createTime: '2025-12-12T20:42:25.123456Z',
    updateTime: '2025-12-12T20:45:01.654321Z',
    uniqueId: `uid-${id}`,
    authority: {
      issuer: `https://container.googleapis.com/v1/projects/my-project/locations/${location}/clusters/${id}`,
    },
    monitoringConfig: { projectId: 'my-project', location, cluster: id, kubernetesMetricsPrefix: 'kubernetes.io' },
  };
}
