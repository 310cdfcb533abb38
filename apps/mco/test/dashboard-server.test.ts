import http from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AccessCache,
  allowedHost,
  cookieValue,
  DEFAULT_GROUP_HEADERS,
  DEFAULT_USERNAME_HEADERS,
  proxyIdentity,
  SessionStore,
  type Identity,
} from '../src/dashboard/auth.js';
import * as flux from '@mco/flux';
import * as controller from '@mco/controller';
import {
  CLUSTER_PROFILE_ANNOTATION,
  CONDITION_SIGNALS_OBSERVED,
  FleetModel,
  keptDeliveryObject,
  keptGenerator,
  CONTROLLER_STALE_AFTER_MS,
  PLACEMENT_LABEL,
  PLACEMENT_NAMESPACE_LABEL,
  keptEvent,
  MAX_EVENT_MESSAGE,
  NO_SIGNAL_SOURCE_REASONS,
  PLACEMENT_ANNOTATION,
  SEE_ALL,
} from '../src/dashboard/model.js';
import { createDashboardServer, MAX_BODY_BYTES } from '../src/dashboard/server.js';
import { main } from '../src/main.js';
import type { View } from '../src/dashboard/view.js';
import { httpRead, testCA, tlsGet, tlsRead, viewEvents } from './dashboard-tls.js';

describe('dashboard sessions', () => {
  it('a session id finds its identity until it expires or is deleted; a wrong or oversized id finds nothing', () => {
    let now = 1_000;
    const store = new SessionStore(60_000, 10, () => now);
    const alice: Identity = { user: 'alice', groups: ['team-a'] };
    const id = store.create(alice);
    expect({ found: store.get(id), wrong: store.get(`${id.slice(0, -1)}x`), long: store.get('x'.repeat(200)) }).toEqual(
      { found: alice, wrong: undefined, long: undefined },
    );
    now += 60_000;
    expect(store.get(id)).toBeUndefined();
    const again = store.create(alice);
    store.delete(again);
    expect(store.get(again)).toBeUndefined();
  });

  it('keeps at most maxSessions, dropping the oldest', () => {
    const store = new SessionStore(60_000, 2);
    const ids = ['a', 'b', 'c'].map((user) => store.create({ user, groups: [] }));
    expect(ids.map((id) => store.get(id)?.user)).toEqual([undefined, 'b', 'c']);
  });

  it.each([
    [
      { 'x-remote-user': 'alice', 'x-remote-group': 'team-a, team-b' },
      { user: 'alice', groups: ['team-a', 'team-b'] },
    ],
    [{ 'x-remote-user': ' bob ' }, { user: 'bob', groups: [] }],
    [{ 'x-remote-user': '' }, undefined],
    [{ 'x-remote-group': 'system:masters' }, undefined],
  ])('proxy headers %j name %j', (headers, expected) => {
    expect(proxyIdentity(headers)).toEqual(expected);
  });

  it('reads one cookie among several', () => {
    expect(cookieValue('a=1; mco_dashboard_session=xyz; b=2', 'mco_dashboard_session')).toBe('xyz');
    expect(cookieValue(undefined, 'mco_dashboard_session')).toBeUndefined();
  });
});

describe('dashboard access checks', () => {
  it('asks once per identity, namespace and resource within the TTL, again after it; a failing review denies', async () => {
    let now = 0;
    const asked: string[] = [];
    const cache = new AccessCache(
      (identity, namespace) => {
        asked.push(`${identity.user}@${namespace}`);
        if (namespace === 'broken') return Promise.reject(new Error('500'));
        return Promise.resolve(namespace === `team-${identity.user}`);
      },
      10_000,
      100,
      () => now,
    );
    const ref = { group: '', resource: 'events' };
    const a = { user: 'a', groups: [] };
    const answers = [
      await cache.mayList(a, 'team-a', ref),
      await cache.mayList(a, 'team-a', ref),
      await cache.mayList(a, 'team-b', ref),
      await cache.mayList(a, 'broken', ref),
    ];
    now = 10_000;
    answers.push(await cache.mayList(a, 'team-a', ref));
    expect({ answers, asked }).toEqual({
      answers: [true, true, false, false, true],
      asked: ['a@team-a', 'a@team-b', 'a@broken', 'a@team-a'],
    });
  });
});

describe('the dashboard server', () => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function start(options: Partial<Parameters<typeof createDashboardServer>[0]> = {}) {
    const model = new FleetModel();
    for (const ns of ['team-a', 'team-b']) {
      model.placement('add', {
        metadata: { namespace: ns, name: 'web' },
        status: {
          clusters: [{ namespace: 'fleet', name: 'c1', state: 'ACTIVE', lastTransitionTime: '2026-01-01T00:00:00Z' }],
        },
      });
    }
    model.clusterProfile('add', { metadata: { namespace: 'fleet', name: 'c1', labels: { gpu: 'l4' } } });
    const server = createDashboardServer({ model, synced: () => true, auth: 'none', heartbeatMs: 60_000, ...options });
    servers.push(server);
    const address: AddressInfo = await server.listen('127.0.0.1', 0);
    return { base: `http://127.0.0.1:${address.port}`, model };
  }

  /** The first `view` event of /api/stream. */
  async function firstView(base: string, headers: Record<string, string> = {}, query = ''): Promise<View> {
    const { status, view } = await httpRead(`${base}/api/stream${query}`, headers);
    expect(status).toBe(200);
    return view as View;
  }

  it('close() ends connections with a request still arriving, so SIGTERM stops `mco dashboard` at once', async () => {
    const server = createDashboardServer({ model: new FleetModel(), synced: () => true, auth: 'none' });
    const { port } = await server.listen('127.0.0.1', 0);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {}); // the reset is the point
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // Headers sent, body not: the server waits for it (up to its request timeout, without the fix).
    socket.write('POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{');
    await new Promise((resolve) => setImmediate(resolve));
    await server.close();
    await ended;
    expect(socket.destroyed).toBe(true);
  });

  it('serves the page, script and stylesheet with a strict Content-Security-Policy', async () => {
    const { base } = await start();
    const page = await fetch(`${base}/`);
    const script = await fetch(`${base}/app.js`);
    expect({
      status: [page.status, script.status],
      csp: page.headers.get('content-security-policy'),
      frame: page.headers.get('x-frame-options'),
      type: script.headers.get('content-type'),
    }).toEqual({
      status: [200, 200],
      csp: expect.stringContaining("script-src 'self'") as unknown,
      frame: 'DENY',
      type: 'text/javascript; charset=utf-8',
    });
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/`, { method: 'DELETE' })).status).toBe(405);
  });

  // The proxy's CA signs the proxy's client certificate; the serving certificate comes from another CA.
  const serving = testCA('serving');
  const servingPem = serving.server();
  const proxyCA = testCA('front-proxy');
  const proxyClient = proxyCA.client('front-proxy-client');
  const proxyTrust = {
    clientCA: proxyCA.cert,
    allowedNames: ['front-proxy-client'],
    usernameHeaders: DEFAULT_USERNAME_HEADERS,
    groupHeaders: DEFAULT_GROUP_HEADERS,
  };
  const startProxied = (options: Partial<Parameters<typeof createDashboardServer>[0]>) =>
    start({ auth: 'proxy', tls: { cert: servingPem.cert, key: servingPem.key }, proxy: proxyTrust, ...options });

  it('in proxy mode, refuses a request without X-Remote-User and shows each viewer only the namespaces a SubjectAccessReview allows', async () => {
    const reviews: string[] = [];
    const access = new AccessCache((identity, namespace, resource) => {
      reviews.push(`${identity.user}:${namespace}:${resource.resource}`);
      return Promise.resolve(namespace === 'fleet' || namespace === identity.groups[0]);
    });
    const { base } = await startProxied({ access });
    const url = `${base.replace('http:', 'https:')}/api/stream`;
    expect((await tlsRead(url, { ca: serving.cert, client: proxyClient })).status).toBe(401);
    const { view } = await tlsRead(`${url}?placement=team-b/web`, {
      ca: serving.cert,
      client: proxyClient,
      headers: { 'x-remote-user': 'alice', 'x-remote-group': 'team-a' },
    });
    const seen = view as View;
    expect({
      user: seen.user,
      placements: seen.placements.map((p) => p.key),
      clusters: seen.clusters.map((c) => [c.key, c.placements.map((p) => p.key)]),
      detail: seen.placement,
    }).toEqual({
      user: 'alice',
      placements: ['team-a/web'],
      clusters: [['fleet/c1', ['team-a/web']]],
      detail: undefined,
    });
    expect(reviews).toContain('alice:team-b:multikubernetesclusterplacements');
  });

  it("in proxy mode, believes the identity headers only on a connection with a client certificate from the proxy's CA, for client authentication, with an allowed name", async () => {
    const { base } = await startProxied({ access: new AccessCache(() => Promise.resolve(true)) });
    const url = `${base.replace('http:', 'https:')}/api/stream`;
    const masters = { 'x-remote-user': 'mallory', 'x-remote-group': 'system:masters' };
    const other = testCA('other');
    const attempts = {
      'no certificate': await tlsRead(url, { ca: serving.cert, headers: masters }),
      'a certificate from another CA, with the proxy name': await tlsRead(url, {
        ca: serving.cert,
        client: other.client('front-proxy-client'),
        headers: masters,
      }),
      "the proxy CA's certificate with another name": await tlsRead(url, {
        ca: serving.cert,
        client: proxyCA.client('someone-else'),
        headers: masters,
      }),
      "the proxy CA's server certificate": await tlsRead(url, {
        ca: serving.cert,
        client: proxyCA.client('front-proxy-client', 'serverAuth'),
        headers: masters,
      }),
      // The proxy's own certificate presented as a server certificate is no proof either.
      "the serving CA's certificate": await tlsRead(url, { ca: serving.cert, client: servingPem, headers: masters }),
    };
    expect(Object.fromEntries(Object.entries(attempts).map(([k, v]) => [k, v.status]))).toEqual({
      'no certificate': 401,
      'a certificate from another CA, with the proxy name': 401,
      "the proxy CA's certificate with another name": 401,
      "the proxy CA's server certificate": 401,
      "the serving CA's certificate": 401,
    });
    const session = await tlsGet(`${base.replace('http:', 'https:')}/api/session`, {
      ca: serving.cert,
      headers: masters,
    });
    let body = '';
    for await (const chunk of session) body += String(chunk);
    expect(JSON.parse(body)).toEqual({ auth: 'proxy' });
    const proxied = await tlsRead(url, { ca: serving.cert, client: proxyClient, headers: masters });
    expect({ status: proxied.status, user: (proxied.view as View).user }).toEqual({ status: 200, user: 'mallory' });
    // Plain http is not served at all.
    await expect(fetch(`${base}/api/stream`, { headers: masters })).rejects.toThrow();
  });

  it('in proxy mode, refuses to start without a serving certificate or the proxy CA', () => {
    expect(() => createDashboardServer({ model: new FleetModel(), synced: () => true, auth: 'proxy' })).toThrow(
      /proxy mode needs a serving certificate and the CA/,
    );
  });

  it('re-checks access while a page is open: a namespace whose access is revoked disappears from the stream', async () => {
    let allowed = true;
    const access = new AccessCache(() => Promise.resolve(allowed), 0);
    const { base } = await startProxied({ access, heartbeatMs: 50 });
    const res = await tlsGet(`${base.replace('http:', 'https:')}/api/stream`, {
      ca: serving.cert,
      client: proxyClient,
      headers: { 'x-remote-user': 'bob' },
    });
    const views: string[][] = [];
    let text = '';
    for await (const chunk of res) {
      text += String(chunk);
      for (const view of viewEvents(text)) views.push((view as View).placements.map((p) => p.key));
      text = text.slice(text.lastIndexOf('\n\n') + 2);
      // Revoked once the first view arrived; the heartbeat asks again.
      if (views.length > 0) allowed = false;
      if (views.length >= 2) break;
    }
    res.destroy();
    expect(views).toEqual([['team-a/web', 'team-b/web'], []]);
  });

  it.each([
    ['127.0.0.1:8090', true],
    ['127.1.2.3', true],
    ['localhost:8090', true],
    ['LOCALHOST', true],
    ['[::1]:8090', true],
    ['dashboard.test:8090', true],
    ['attacker.example:8090', false],
    ['attacker.example@127.0.0.1', false],
    ['127.0.0.1.attacker.example', false],
    ['localhost.attacker.example', false],
    ['10.0.0.1:8090', false],
    ['', false],
    [undefined, false],
  ])('with --auth none, Host %j is served: %j', (host, expected) => {
    expect(allowedHost(host, ['dashboard.test'])).toBe(expected);
  });

  it('with --auth none, refuses every request whose Host is not loopback or allowed (DNS rebinding)', async () => {
    const { base } = await start({ allowedHosts: ['dashboard.test'] });
    const status = async (host: string, path: string) => await statusWithHost(`${base}${path}`, host);
    expect({
      loopback: await status(new URL(base).host, '/api/session'),
      allowed: await status('dashboard.test', '/api/session'),
      rebound: await Promise.all(['/', '/app.js', '/api/session', '/api/stream'].map((p) => status('evil.test', p))),
    }).toEqual({ loopback: 200, allowed: 200, rebound: [403, 403, 403, 403] });
  });

  it('in token mode, marks the session cookie Secure unless told not to (plain http on a loopback address)', async () => {
    const cookieOf = async (secureCookies?: boolean) => {
      const { base } = await start({
        auth: 'token',
        sessions: new SessionStore(60_000),
        login: () => Promise.resolve({ user: 'alice', groups: [] }),
        ...(secureCookies === undefined ? {} : { secureCookies }),
      });
      const res = await fetch(`${base}/api/login`, {
        method: 'POST',
        body: '{"token": "t"}',
        headers: { 'content-type': 'application/json' },
      });
      return res.headers.get('set-cookie')!.split('; ').slice(1);
    };
    expect({ default: await cookieOf(), off: await cookieOf(false) }).toEqual({
      default: ['Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=28800', 'Secure'],
      off: ['Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=28800'],
    });
  });

  it('in token mode, exchanges a posted token for an HttpOnly SameSite=Strict session cookie, refusing bad, oversized and non-JSON bodies and other origins', async () => {
    const tokens: string[] = [];
    const { base } = await start({
      auth: 'token',
      sessions: new SessionStore(60_000),
      access: new AccessCache(() => Promise.resolve(true)),
      login: (token) => {
        tokens.push(token);
        return token === 'good' ? Promise.resolve({ user: 'alice', groups: [] }) : Promise.reject(new Error('401'));
      },
    });
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/api/login`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const refused = await Promise.all([
      post('{"token": "bad"}'),
      post('not json'),
      post('{"token": 3}'),
      post(JSON.stringify({ token: 'x'.repeat(MAX_BODY_BYTES) })),
      post('{"token": "good"}', { origin: 'https://evil.example' }),
      // What a cross-site form can post without a preflight.
      post('{"token": "good"}', { 'content-type': 'text/plain' }),
    ]);
    expect(refused.map((r) => r.status)).toEqual([401, 400, 400, 413, 403, 415]);
    expect(await (await fetch(`${base}/api/session`)).json()).toEqual({ auth: 'token' });

    const ok = await post('{"token": "good"}');
    const cookie = ok.headers.get('set-cookie')!;
    expect(ok.status).toBe(200);
    expect(cookie).toMatch(
      /^mco_dashboard_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=28800; Secure$/,
    );
    const session = cookie.split(';')[0]!;
    expect(await (await fetch(`${base}/api/session`, { headers: { cookie: session } })).json()).toEqual({
      auth: 'token',
      user: 'alice',
      groups: [],
    });
    expect((await firstView(base, { cookie: session })).user).toBe('alice');
    expect(tokens).toEqual(['bad', 'good']);
    await fetch(`${base}/api/logout`, { method: 'POST', headers: { cookie: session } });
    expect(await (await fetch(`${base}/api/session`, { headers: { cookie: session } })).json()).toEqual({
      auth: 'token',
    });
  });
});

describe('the fleet model', () => {
  it("reads delivery objects by @mco/flux's annotations and input provider labels", () => {
    expect([PLACEMENT_ANNOTATION, CLUSTER_PROFILE_ANNOTATION, PLACEMENT_LABEL, PLACEMENT_NAMESPACE_LABEL]).toEqual([
      flux.PLACEMENT_ANNOTATION,
      flux.CLUSTER_PROFILE_ANNOTATION,
      flux.PLACEMENT_LABEL,
      flux.PLACEMENT_NAMESPACE_LABEL,
    ]);
  });

  it("tells when the controller was last seen, by its Leases' renewTime, and marks it and every signal stale past the threshold", () => {
    let now = Date.parse('2026-01-01T12:00:00Z');
    const model = new FleetModel({ now: () => now });
    model.placement('add', {
      metadata: { namespace: 'apps', name: 'p' },
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } } },
      status: {
        clusters: [
          { namespace: 'fleet', name: 'a', state: 'ACTIVE', lastTransitionTime: '', atCapacityCeiling: false },
        ],
      },
    });
    const lease = (name: string, renewTime: string) => ({
      metadata: { namespace: 'kube-system', name },
      spec: { renewTime },
    });
    const view = () => model.view(SEE_ALL, 'u', true, 'apps/p');
    expect(view().controller).toEqual({
      lease: 'kube-system/mco-controller',
      stale: false,
      staleAfter: CONTROLLER_STALE_AFTER_MS,
    });
    model.lease('add', lease('mco-controller', '2026-01-01T11:59:00.000000Z'));
    model.lease('add', lease('mco-controller-3', '2026-01-01T11:59:30.000000Z'));
    model.lease('add', lease('mco-controller-members', '2026-01-01T11:59:50.000000Z'));
    model.lease('add', lease('other-controller', '2026-01-01T12:00:00.000000Z'));
    model.lease('add', lease('mco-controller-inventory-loss', '2026-01-01T12:00:00.000000Z'));
    expect(view().controller).toMatchObject({ lastSeen: Date.parse('2026-01-01T11:59:50Z'), stale: false });
    expect(view().placement!.clusters[0]!.signal).toEqual({ status: 'fresh' });
    let changes = 0;
    model.onChange(() => changes++);
    now += CONTROLLER_STALE_AFTER_MS;
    model.tick();
    expect(changes).toBe(1);
    expect(view().controller.stale).toBe(true);
    expect(view().placement!.clusters[0]!.signal).toEqual({
      status: 'stale',
      why: 'the controller was last seen at 2026-01-01T11:59:50.000Z',
    });
    model.tick();
    expect(changes).toBe(1);
    model.lease('update', lease('mco-controller', new Date(now).toISOString()));
    expect(view().controller.stale).toBe(false);
  });

  it('shows the Applications an ApplicationSet of the placement generated and the Kustomizations of its ResourceSet, by cluster, with their state', () => {
    const model = new FleetModel();
    const listed = (name: string) => ({ namespace: 'fleet', name, state: 'ACTIVE', lastTransitionTime: '' });
    model.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: { clusters: [listed('a')] } });
    model.placement('add', { metadata: { namespace: 'apps', name: 'q' }, status: { clusters: [listed('a')] } });
    const plugin = (name: string) => ({
      plugin: {
        input: {
          parameters: { multiClusterOrchestraPlacementName: name, multiClusterOrchestraPlacementNamespace: 'apps' },
        },
      },
    });
    model.generator(
      'add',
      keptGenerator({
        kind: 'ApplicationSet',
        metadata: { namespace: 'argocd', name: 'web' },
        spec: { generators: [{ matrix: { generators: [plugin('p'), { list: {} }] } }] },
      }),
    );
    model.generator(
      'add',
      keptGenerator({
        kind: 'ApplicationSet',
        metadata: { namespace: 'argocd', name: 'other' },
        spec: { generators: [plugin('q')] },
      }),
    );
    model.generator(
      'add',
      keptGenerator({
        kind: 'ResourceSet',
        metadata: { namespace: 'flux-system', name: 'web' },
        spec: {
          inputsFrom: [{ selector: { matchLabels: { [PLACEMENT_LABEL]: 'p', [PLACEMENT_NAMESPACE_LABEL]: 'apps' } } }],
        },
      }),
    );
    const application = (name: string, set: string) =>
      keptDeliveryObject({
        kind: 'Application',
        metadata: { namespace: 'argocd', name, ownerReferences: [{ kind: 'ApplicationSet', name: set }] },
        spec: { destination: { name: 'fleet.a' } },
        status: { sync: { status: 'OutOfSync' }, health: { status: 'Progressing' } },
      });
    model.deliveryObject('add', application('web-a', 'web'));
    model.deliveryObject('add', application('other-a', 'other'));
    model.deliveryObject(
      'add',
      keptDeliveryObject({
        kind: 'Kustomization',
        metadata: {
          namespace: 'flux-system',
          name: 'web-a',
          labels: {
            'resourceset.fluxcd.controlplane.io/name': 'web',
            'resourceset.fluxcd.controlplane.io/namespace': 'flux-system',
          },
        },
        spec: { kubeConfig: { secretRef: { name: flux.kubeconfigSecretName('fleet', 'a'), key: 'value' } } },
        status: { conditions: [{ type: 'Ready', status: 'False', reason: 'BuildFailed' }] },
      }),
    );
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.delivery).toEqual([
      { cluster: 'fleet/a', kind: 'Application', name: 'argocd/web-a', status: 'OutOfSync, Progressing' },
      { cluster: 'fleet/a', kind: 'Kustomization', name: 'flux-system/web-a', status: 'Ready False (BuildFailed)' },
    ]);
    model.generator(
      'delete',
      keptGenerator({ kind: 'ResourceSet', metadata: { namespace: 'flux-system', name: 'web' } }),
    );
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.delivery.map((d) => d.name)).toEqual(['argocd/web-a']);
  });

  it("reads the controller's signal condition and reasons", () => {
    expect({ observed: CONDITION_SIGNALS_OBSERVED, reasons: [...NO_SIGNAL_SOURCE_REASONS].sort() }).toEqual({
      observed: controller.CONDITION_SIGNALS_OBSERVED,
      reasons: [
        controller.REASON_NO_SIGNAL_SOURCE,
        controller.REASON_SIGNAL_SOURCE_NOT_ALLOWED,
        controller.REASON_UNKNOWN_SIGNAL_SOURCE,
      ].sort(),
    });
  });

  it("shows each listed cluster's capacity signal as the controller's last evaluation saw it: fresh, at ceiling or stale, and why", () => {
    const model = new FleetModel();
    for (const name of ['a', 'b', 'c', 'd', 'e'])
      model.clusterProfile('add', { metadata: { namespace: 'fleet', name } });
    const listed = (name: string, atCapacityCeiling?: boolean) => ({
      namespace: 'fleet',
      name,
      state: 'ACTIVE',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      ...(atCapacityCeiling === undefined ? {} : { atCapacityCeiling }),
    });
    const condition = (type: string, status: string, reason: string, message = '') => ({
      type,
      status,
      reason,
      message,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
    const autoscaling = { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } } };
    model.placement('add', {
      metadata: { namespace: 'apps', name: 'web' },
      spec: autoscaling,
      status: {
        clusters: [listed('a', false), listed('b', true), listed('c'), listed('d'), listed('e', false)],
        conditions: [
          condition('Valid', 'True', 'Valid'),
          condition(CONDITION_SIGNALS_OBSERVED, 'False', 'ObserveFailed', 'fleet/c: Unavailable; fleet/e: Invalid'),
        ],
      },
    });
    model.placement('add', {
      metadata: { namespace: 'apps', name: 'sourceless' },
      spec: autoscaling,
      status: {
        clusters: [listed('a')],
        conditions: [condition('Satisfied', 'Unknown', 'NoSignalSource')],
      },
    });
    // No autoscaleForCapacity, or a spec the engine refused: no signals are read.
    model.placement('add', {
      metadata: { namespace: 'apps', name: 'plain' },
      spec: {},
      status: { clusters: [listed('a')] },
    });
    model.placement('add', {
      metadata: { namespace: 'apps', name: 'invalid' },
      spec: autoscaling,
      status: { clusters: [listed('a')], conditions: [condition('Valid', 'False', 'InvalidSpec')] },
    });
    const view = model.view(SEE_ALL, 'u', true, 'apps/web');
    expect(Object.fromEntries(view.placement!.clusters.map((c) => [c.key, c.signal]))).toEqual({
      'fleet/a': { status: 'fresh' },
      'fleet/b': { status: 'at ceiling' },
      'fleet/c': { status: 'stale', why: 'the signal source could not observe it (Unavailable)' },
      'fleet/d': { status: 'stale', why: 'no fresh signal at the last evaluation' },
      'fleet/e': { status: 'fresh', why: 'observed in part (Invalid)' },
    });
    // The fleet shows the same per placement that lists the cluster.
    expect(view.clusters.find((c) => c.key === 'fleet/a')!.placements).toEqual([
      { key: 'apps/invalid', state: 'ACTIVE' },
      { key: 'apps/plain', state: 'ACTIVE' },
      {
        key: 'apps/sourceless',
        state: 'ACTIVE',
        signal: { status: 'stale', why: 'no usable signal source (NoSignalSource)' },
      },
      { key: 'apps/web', state: 'ACTIVE', signal: { status: 'fresh' } },
    ]);
  });

  it("keeps only placements' Events, as the page shows them, and forgets a deleted one", () => {
    const model = new FleetModel();
    model.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    const event = (
      namespace: string,
      name: string,
      kind: string,
      involved: string,
      reason: string,
      second: number,
    ) => ({
      metadata: { namespace, name, managedFields: [{ manager: 'mco' }] },
      involvedObject: { kind, namespace, name: involved },
      type: 'Normal',
      reason,
      message: `${reason} happened`,
      lastTimestamp: `2026-01-01T00:00:0${second}Z`,
      count: 2,
    });
    const placementEvent = (name: string, involved: string, reason: string, second: number) =>
      event('apps', name, 'MultiKubernetesClusterPlacement', involved, reason, second);
    model.event('add', keptEvent(placementEvent('e1', 'p', 'P1Added', 1)));
    model.event('add', keptEvent(placementEvent('e2', 'p', 'E1Tainted', 2)));
    model.event('update', keptEvent({ ...placementEvent('e2', 'p', 'E1Tainted', 3), count: 3 }));
    model.event('add', keptEvent(placementEvent('e3', 'other', 'P1Added', 1)));
    model.event('add', keptEvent(event('fleet', 'e4', 'ClusterProfile', 'a', 'Cordoned', 1)));
    model.event('delete', keptEvent(placementEvent('e1', 'p', 'P1Added', 1)));
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.events).toEqual([
      { type: 'Normal', reason: 'E1Tainted', message: 'E1Tainted happened', at: '2026-01-01T00:00:03Z', count: 3 },
    ]);
    // The ClusterProfile's Event was not kept: its namespace is not one the page asks about.
    expect([...model.namespaces()]).toEqual(['apps']);
  });

  it('keeps placement Events bounded by count and bytes, evicting the oldest received, and cuts a large message', () => {
    const raw = (name: string, message: string, second: number) => ({
      metadata: { namespace: 'apps', name, resourceVersion: String(second) },
      involvedObject: { kind: 'MultiKubernetesClusterPlacement', namespace: 'apps', name: 'p' },
      reason: name,
      message,
      lastTimestamp: `2026-01-01T00:00:${String(second).padStart(2, '0')}Z`,
    });
    const reasons = (model: FleetModel) =>
      model.view(SEE_ALL, 'u', true, 'apps/p').placement!.events.map((e) => e.reason);
    const counted = new FleetModel({ maxEvents: 3 });
    counted.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    const kept = [1, 2, 3, 4, 5].map((i) => keptEvent(raw(`e${i}`, 'm', i)));
    for (const e of kept) counted.event('add', e);
    // An update makes e3 the newest received: e4 goes next.
    counted.event('update', keptEvent(raw('e3', 'again', 3)));
    counted.event('add', keptEvent(raw('e6', 'm', 6)));
    expect(reasons(counted)).toEqual(['e6', 'e5', 'e3']);
    // An evicted Event keeps only its metadata, which is what the informer holds on to.
    expect(kept[0]).toEqual({ metadata: { namespace: 'apps', name: 'e1', resourceVersion: '1' } });

    const large = keptEvent(raw('big', 'x'.repeat(1024 * 1024), 9));
    expect(large.shown!.event.message).toBe(`${'x'.repeat(MAX_EVENT_MESSAGE)}…`);
    const sized = new FleetModel({ maxEventBytes: 3 * large.shown!.bytes });
    sized.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    for (let i = 0; i < 10; i++) sized.event('add', keptEvent(raw(`e${i}`, 'x'.repeat(1024 * 1024), i)));
    expect(reasons(sized)).toEqual(['e9', 'e8', 'e7']);
  });

  it('keeps delivery objects bounded by count, and of any other object only its metadata', () => {
    const model = new FleetModel({ maxDeliveryObjects: 2 });
    model.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    const annotations = { [PLACEMENT_ANNOTATION]: 'apps/p', [CLUSTER_PROFILE_ANNOTATION]: 'fleet/a' };
    for (const name of ['a', 'b', 'c']) {
      model.deliveryObject(
        'add',
        keptDeliveryObject({ kind: 'Application', metadata: { namespace: 'argocd', name, annotations }, spec: {} }),
      );
    }
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.delivery.map((d) => d.name)).toEqual([
      'argocd/b',
      'argocd/c',
    ]);
    expect(
      keptDeliveryObject({ kind: 'Application', metadata: { namespace: 'argocd', name: 'x' }, spec: { big: 'y' } }),
    ).toEqual({ kind: 'Application', metadata: { namespace: 'argocd', name: 'x', resourceVersion: undefined } });
  });

  it('shows the delivery objects that name a placement and a cluster, with their sync status', () => {
    const model = new FleetModel();
    model.clusterProfile('add', { metadata: { namespace: 'fleet', name: 'a' } });
    model.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    const annotations = { [PLACEMENT_ANNOTATION]: 'apps/p', [CLUSTER_PROFILE_ANNOTATION]: 'fleet/a' };
    model.deliveryObject(
      'add',
      keptDeliveryObject({
        kind: 'Kustomization',
        metadata: { namespace: 'flux-system', name: 'p-a', annotations },
        status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded' }] },
      }),
    );
    model.deliveryObject(
      'add',
      keptDeliveryObject({
        kind: 'Application',
        metadata: { namespace: 'argocd', name: 'p-a', annotations },
        status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } },
      }),
    );
    model.deliveryObject(
      'add',
      keptDeliveryObject({ kind: 'Application', metadata: { namespace: 'argocd', name: 'other' } }),
    );
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.delivery).toEqual([
      {
        cluster: 'fleet/a',
        kind: 'Kustomization',
        name: 'flux-system/p-a',
        status: 'Ready True (ReconciliationSucceeded)',
      },
      { cluster: 'fleet/a', kind: 'Application', name: 'argocd/p-a', status: 'Synced, Healthy' },
    ]);
  });

  it('remembers each cluster state change of a placement as lanes, bounded, with the draining target', () => {
    let now = Date.parse('2026-01-01T00:10:00Z');
    const model = new FleetModel({ laneLength: 3, now: () => now });
    model.clusterProfile('add', { metadata: { namespace: 'fleet', name: 'a' } });
    const cluster = (state: string, desired?: number) => ({
      namespace: 'fleet',
      name: 'a',
      state,
      lastTransitionTime: '2026-01-01T00:00:00Z',
      ...(desired === undefined
        ? {}
        : { draining: { desiredMaxReplicas: desired, lastReplicaCountDecrease: '2026-01-01T00:00:00Z' } }),
    });
    const placement = (clusters: object[]) => ({ metadata: { namespace: 'apps', name: 'p' }, status: { clusters } });
    model.placement('add', placement([cluster('ACTIVE')]));
    for (const [state, desired] of [['ACTIVE'], ['EVICTING', 4], ['EVICTING', 2]] as const) {
      now += 1000;
      model.placement('update', placement([cluster(state, desired)]));
    }
    now += 1000;
    model.placement('update', placement([]));
    const detail = model.view(
      { clusterProfiles: () => true, placements: () => true, events: () => true },
      'u',
      true,
      'apps/p',
    ).placement!;
    const t = (s: number) => Date.parse('2026-01-01T00:10:00Z') + s * 1000;
    expect(detail.lanes).toEqual([
      {
        cluster: 'fleet/a',
        segments: [
          { state: 'EVICTING', from: t(2), to: t(3), desiredMaxReplicas: 4 },
          { state: 'EVICTING', from: t(3), to: t(4), desiredMaxReplicas: 2 },
          { state: '-', from: t(4) },
        ],
      },
    ]);
  });
});

describe('mco dashboard', () => {
  async function mco(...argv: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
    return { code, stdout, stderr };
  }

  it('--help prints the usage', async () => {
    const help = await mco('dashboard', '--help');
    expect({ code: help.code, first: help.stdout.split('\n')[0], auth: help.stdout.includes('--auth <mode>') }).toEqual(
      {
        code: 0,
        first: 'Usage:',
        auth: true,
      },
    );
  });

  it.each([
    [['--listen', '0.0.0.0:8090'], '--listen 0.0.0.0:8090: --auth none serves the hub kubeconfig'],
    [['--auth', 'basic'], '--auth basic: expected none, proxy or token'],
    [['--log-level', 'loud'], '--log-level loud: expected debug, info, warn, error'],
    [
      ['--auth', 'proxy', '--listen', '0.0.0.0:8090'],
      '--auth proxy needs --tls-cert-file, --tls-private-key-file and --requestheader-client-ca-file',
    ],
    [['--requestheader-client-ca-file', 'ca.crt'], '--requestheader-client-ca-file works only with --auth proxy'],
    [['--auth', 'token', '--allowed-hosts', 'a.test'], '--allowed-hosts works only with --auth none'],
    [['--insecure-cookies'], '--insecure-cookies works only with --auth token'],
    [['--tls-cert-file', 'tls.crt'], '--tls-cert-file and --tls-private-key-file go together'],
    [['--allowed-hosts', 'a.test,evil/x'], '--allowed-hosts: "evil/x" is not a host name or IP address'],
    [
      [
        '--auth',
        'proxy',
        '--tls-cert-file',
        '/nonexistent/tls.crt',
        '--tls-private-key-file',
        'k',
        '--requestheader-client-ca-file',
        'c',
      ],
      '--tls-cert-file /nonexistent/tls.crt: ENOENT',
    ],
  ])('refuses %j with exit code 2, naming the flag', async (flags, message) => {
    const result = await mco('dashboard', ...flags);
    expect({ code: result.code, named: result.stderr.includes(message) }).toEqual({ code: 2, named: true });
  });
});

/** The status of a GET sent with this Host header (as a browser sends it for the name it resolved). */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { host }, agent: false }, (res) => {
      resolve(res.statusCode!);
      res.destroy();
    });
    req.on('error', reject);
  });
}
