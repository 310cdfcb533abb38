import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AccessCache, cookieValue, proxyIdentity, SessionStore, type Identity } from '../src/dashboard/auth.js';
import * as flux from '@mco/flux';
import * as controller from '@mco/controller';
import {
  CLUSTER_PROFILE_ANNOTATION,
  CONDITION_SIGNALS_OBSERVED,
  FleetModel,
  NO_SIGNAL_SOURCE_REASONS,
  PLACEMENT_ANNOTATION,
  SEE_ALL,
} from '../src/dashboard/model.js';
import { createDashboardServer, MAX_BODY_BYTES } from '../src/dashboard/server.js';
import { main } from '../src/main.js';
import type { View } from '../src/dashboard/view.js';

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
    const abort = new AbortController();
    const res = await fetch(`${base}/api/stream${query}`, { headers, signal: abort.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    for (;;) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
      const match = /event: view\ndata: (.*)\n\n/.exec(text);
      if (match) {
        abort.abort();
        return JSON.parse(match[1]!) as View;
      }
    }
  }

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

  it('in proxy mode, refuses a request without X-Remote-User and shows each viewer only the namespaces a SubjectAccessReview allows', async () => {
    const reviews: string[] = [];
    const access = new AccessCache((identity, namespace, resource) => {
      reviews.push(`${identity.user}:${namespace}:${resource.resource}`);
      return Promise.resolve(namespace === 'fleet' || namespace === identity.groups[0]);
    });
    const { base } = await start({ auth: 'proxy', access });
    expect((await fetch(`${base}/api/stream`)).status).toBe(401);
    const view = await firstView(
      base,
      { 'x-remote-user': 'alice', 'x-remote-group': 'team-a' },
      '?placement=team-b/web',
    );
    expect({
      user: view.user,
      placements: view.placements.map((p) => p.key),
      clusters: view.clusters.map((c) => [c.key, c.placements.map((p) => p.key)]),
      detail: view.placement,
    }).toEqual({
      user: 'alice',
      placements: ['team-a/web'],
      clusters: [['fleet/c1', ['team-a/web']]],
      detail: undefined,
    });
    expect(reviews).toContain('alice:team-b:multikubernetesclusterplacements');
  });

  it('re-checks access while a page is open: a namespace whose access is revoked disappears from the stream', async () => {
    let allowed = true;
    const access = new AccessCache(() => Promise.resolve(allowed), 0);
    const { base } = await start({ auth: 'proxy', access, heartbeatMs: 50 });
    const abort = new AbortController();
    const res = await fetch(`${base}/api/stream`, { headers: { 'x-remote-user': 'bob' }, signal: abort.signal });
    const reader = res.body!.getReader();
    const views: string[][] = [];
    let text = '';
    while (views.length < 2) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
      for (const match of text.matchAll(/event: view\ndata: (.*)\n\n/g)) {
        views.push((JSON.parse(match[1]!) as View).placements.map((p) => p.key));
      }
      text = text.slice(text.lastIndexOf('\n\n') + 2);
      // Revoked once the first view arrived; the heartbeat asks again.
      if (views.length > 0) allowed = false;
    }
    abort.abort();
    expect(views).toEqual([['team-a/web', 'team-b/web'], []]);
  });

  it('in token mode, exchanges a posted token for an HttpOnly SameSite=Strict session cookie, refusing bad, oversized and non-JSON bodies and other origins', async () => {
    const tokens: string[] = [];
    const { base } = await start({
      auth: 'token',
      sessions: new SessionStore(60_000),
      access: new AccessCache(() => Promise.resolve(true)),
      secureCookies: true,
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
  it("reads delivery objects by @mco/flux's annotations", () => {
    expect([PLACEMENT_ANNOTATION, CLUSTER_PROFILE_ANNOTATION]).toEqual([
      flux.PLACEMENT_ANNOTATION,
      flux.CLUSTER_PROFILE_ANNOTATION,
    ]);
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
    model.event('add', placementEvent('e1', 'p', 'P1Added', 1));
    model.event('add', placementEvent('e2', 'p', 'E1Tainted', 2));
    model.event('update', { ...placementEvent('e2', 'p', 'E1Tainted', 3), count: 3 });
    model.event('add', placementEvent('e3', 'other', 'P1Added', 1));
    model.event('add', event('fleet', 'e4', 'ClusterProfile', 'a', 'Cordoned', 1));
    model.event('delete', placementEvent('e1', 'p', 'P1Added', 1));
    expect(model.view(SEE_ALL, 'u', true, 'apps/p').placement!.events).toEqual([
      { type: 'Normal', reason: 'E1Tainted', message: 'E1Tainted happened', at: '2026-01-01T00:00:03Z', count: 3 },
    ]);
    // The ClusterProfile's Event was not kept: its namespace is not one the page asks about.
    expect([...model.namespaces()]).toEqual(['apps']);
  });

  it('shows the delivery objects that name a placement and a cluster, with their sync status', () => {
    const model = new FleetModel();
    model.clusterProfile('add', { metadata: { namespace: 'fleet', name: 'a' } });
    model.placement('add', { metadata: { namespace: 'apps', name: 'p' }, status: {} });
    const annotations = { [PLACEMENT_ANNOTATION]: 'apps/p', [CLUSTER_PROFILE_ANNOTATION]: 'fleet/a' };
    model.deliveryObject('add', {
      kind: 'Kustomization',
      metadata: { namespace: 'flux-system', name: 'p-a', annotations },
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded' }] },
    });
    model.deliveryObject('add', {
      kind: 'Application',
      metadata: { namespace: 'argocd', name: 'p-a', annotations },
      status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } },
    });
    model.deliveryObject('add', { kind: 'Application', metadata: { namespace: 'argocd', name: 'other' } });
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
  ])('refuses %j with exit code 2, naming the flag', async (flags, message) => {
    const result = await mco('dashboard', ...flags);
    expect({ code: result.code, named: result.stderr.includes(message) }).toEqual({ code: 2, named: true });
  });
});
