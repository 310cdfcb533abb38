/// <reference lib="dom" />
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import * as fluxNames from '@mco/flux';
import { preparedTool, thirdPartyCrd, type ThirdPartyCrd } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_GROUP_HEADERS, DEFAULT_USERNAME_HEADERS } from '../src/dashboard/auth.js';
import { startDashboard, type Dashboard } from '../src/dashboard/index.js';
import { main } from '../src/main.js';
import { builtMco } from './built.js';
import { testCA } from './dashboard-tls.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { describeWithHub, FakeSignalSource, renderChart } from '../../../packages/controller/test/support.js';
import { testController, useControllerHub } from '../../../packages/controller/test/support-controller.js';

// The dashboard in real headless Chromium (Debian's package) against a real
// kube-apiserver and a running controller. Under CI it must run; elsewhere it
// is skipped when Chromium is not installed. MCO_DASHBOARD_SCREENSHOTS=1
// rewrites the screenshots in docs/.
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
if (!available && !inCi) console.warn(`skipping the dashboard browser tests: ${CHROMIUM} is absent`);
const DOCS = new URL('../../../docs/', import.meta.url);
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const autoscaling = {
  scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, maxClusters: 0, useDraining: true } },
};

const describeInBrowser = !available && !inCi ? () => undefined : describeWithHub;

describeInBrowser('mco dashboard in headless Chromium, on a real kube-apiserver with a running controller', () => {
  const env = useControllerHub({ users: { 'tenant-a': [] } });
  let browser: Browser;
  let kubeconfig: string;
  const dashboards: Dashboard[] = [];
  const contexts: BrowserContext[] = [];
  const source = new FakeSignalSource();
  /** A dashboard on the test hub without authentication (`--auth none`), stopped after the test. */
  const startOpenDashboard = async (options: Partial<Parameters<typeof startDashboard>[0]> = {}) => {
    const dashboard = await startDashboard({
      hub: connectionFromKubeConfig(env.hub.admin),
      host: '127.0.0.1',
      port: 0,
      auth: 'none',
      ...options,
    });
    dashboards.push(dashboard);
    return dashboard;
  };
  /** A controller for the current test, reading capacity signals from `source`. */
  const startController = () =>
    env.start(
      testController(env.hub.controllerKubeConfig(), { sources: { fake: source }, defaultSignalSource: 'fake' }),
    );

  beforeAll(async () => {
    if (!available) throw new Error(`${CHROMIUM} is absent: CI must apt-get install -y chromium`);
    const { fleet, hub } = env;
    for (const ns of ['fleet', 'team-a', 'team-b']) await fleet.namespace(ns);
    kubeconfig = join(mkdtempSync(join(tmpdir(), 'mco-dashboard-')), 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    for (const name of ['a', 'b', 'c']) await fleet.createProfile('fleet', name, { gpu: 'l4', region: `r-${name}` });
    for (const name of ['a', 'b', 'c']) await fleet.setProfileHealthy('fleet', name, true);
    // The tenant may list placements and Events in team-a, and ClusterProfiles in fleet; nothing in team-b.
    const rbac: object[] = [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'placement-viewer' },
        rules: [
          {
            apiGroups: ['orchestra.multicluster.x-k8s.io'],
            resources: ['multikubernetesclusterplacements'],
            verbs: ['get', 'list', 'watch'],
          },
          { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: ['get', 'list', 'watch'] },
        ],
      },
      ...['team-a', 'fleet'].map((namespace) => ({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'tenant-a-viewer', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'placement-viewer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'tenant-a' }],
      })),
    ];
    await hub.plane.hub.apply(rbac as Parameters<typeof hub.plane.hub.apply>[0]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--no-first-run',
        // An attacker's name that resolves to this machine, as DNS rebinding makes it.
        '--host-resolver-rules=MAP attacker.test 127.0.0.1',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(contexts.map((c) => c.close()));
    await browser?.close();
    await Promise.all(dashboards.map((d) => d.close()));
  });

  /** A page on a fresh browser context that may reach only the dashboard; console errors and other requests are collected. */
  async function open(
    url: string,
    headers: Record<string, string> = {},
    options: Parameters<Browser['newContext']>[0] = {},
  ) {
    const context = await browser.newContext({
      viewport: { width: 1440, height: 900 },
      extraHTTPHeaders: headers,
      ...options,
    });
    contexts.push(context);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.route('**/*', (route) => {
      if (route.request().url().startsWith(url)) return route.continue();
      problems.push(`request outside the dashboard: ${route.request().url()}`);
      return route.abort();
    });
    return { page, problems };
  }

  const rowText = (page: Page, selector: string) => page.locator(selector).innerText();

  /** axe-core's WCAG 2.1 A and AA violations on the page as it is. */
  const violations = async (page: Page) => {
    await page.evaluate(AXE);
    return page.evaluate(async () => {
      const result = await (
        window as unknown as {
          axe: {
            run(c: unknown, o: unknown): Promise<{ violations: { id: string; nodes: unknown[] }[]; passes: unknown[] }>;
          };
        }
      ).axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
      // Rules that passed, so that an empty list of violations means axe looked.
      return {
        violations: result.violations.map((v) => `${v.id} (${v.nodes.length})`),
        ran: result.passes.length > 5,
      };
    });
  };

  it('shows the fleet live: a ClusterProfile label change appears within the latency target, cordon and drain show as the cluster cordoned and draining, the placement lanes EVICTING with its desiredMaxReplicas', async () => {
    const { fleet } = env;
    for (const c of ['a', 'b', 'c']) source.set(`fleet/${c}`, { hpa: { currentReplicas: 4, maxReplicas: 10 } });
    startController();
    await fleet.createPlacement('team-a', 'web', autoscaling);
    await fleet.createPlacement('team-b', 'api', {});

    const dashboard = await startOpenDashboard();
    const { page, problems } = await open(dashboard.url);
    const loadStarted = Date.now();
    await page.goto(dashboard.url);
    await page.locator('tr[data-cluster="fleet/a"]').waitFor();
    console.log(`bench: first fleet view in ${Date.now() - loadStarted} ms (3 clusters, 2 placements)`);
    await page.waitForFunction(() =>
      document.querySelector('tr[data-placement="team-a/web"]')?.textContent?.includes('ACTIVE'),
    );

    // A label change, from the API server's write to the page's DOM.
    const latencies: number[] = [];
    for (const tier of ['gold', 'silver', 'bronze']) {
      const started = Date.now();
      await fleet.labelProfile('fleet', 'b', { tier });
      await page.waitForFunction(
        (t) => document.querySelector('tr[data-cluster="fleet/b"] td.labels')?.textContent?.includes(`tier=${t}`),
        tier,
      );
      latencies.push(Date.now() - started);
    }
    console.log(`bench: ClusterProfile label change to page: ${latencies.join(', ')} ms (target <= 2000 ms)`);

    expect(await mco('clusters', 'cordon', 'fleet/c', '--kubeconfig', kubeconfig)).toMatchObject({ code: 0 });
    await page.waitForFunction(() =>
      document.querySelector('tr[data-cluster="fleet/c"] td.taints')?.textContent?.includes('cordoned'),
    );
    expect(await rowText(page, 'tr[data-cluster="fleet/c"] td.taints')).toBe('cordoned');

    expect(await mco('clusters', 'drain', 'fleet/a', '--kubeconfig', kubeconfig)).toMatchObject({ code: 0 });
    await page.waitForFunction(() =>
      document.querySelector('tr[data-cluster="fleet/a"] td.taints')?.textContent?.includes('draining'),
    );
    // Follow the link to the placement: its lane for fleet/a turns EVICTING, draining to the observed 4 replicas.
    await page.locator('tr[data-placement="team-a/web"] th a').click();
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Placement team-a/web');
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll('.lane')).some(
        (l) => l.textContent?.includes('fleet/a') && l.textContent.includes('EVICTING → 4'),
      ),
    );
    const placed = await page.locator('table.placed tbody').innerText();
    expect(placed).toMatch(/fleet\/a\s+EVICTING\s+signal fresh\s+maxReplicas 4/);
    expect(await page.locator('table.explain').innerText()).toContain(
      'the taint mco.x-k8s.io/drained:NoSelect is not tolerated',
    );
    await page.waitForFunction(() => document.querySelector('table.events')?.textContent?.includes('E1Tainted'));

    expect(problems).toEqual([]);
  }, 180_000);

  it("shows each cluster's capacity signal per placement: stale while the signal source cannot observe it, fresh again once it can, at ceiling when it says so", async () => {
    startController();
    const dashboard = dashboards[0]!;
    const { page, problems } = await open(dashboard.url);
    await page.goto(`${dashboard.url}#/placement/team-a/web`);
    const fresh = page.locator('table.placed tbody tr', { hasText: 'signal fresh' }).first();
    await fresh.waitFor();
    const cluster = (await fresh.getAttribute('data-cluster'))!;
    const signalCell = (text: string[]) =>
      page.waitForFunction(
        ([key, words]) => {
          const cell = document.querySelector(`table.placed tr[data-cluster="${key}"] td.signal`)?.textContent ?? '';
          return words!.every((w) => cell.includes(w));
        },
        [cluster, text] as const,
      );

    source.fail(cluster, { code: 'Unavailable', message: 'connection refused' });
    await signalCell(['signal stale', 'the signal source could not observe it (Unavailable)']);
    const screenshot = (name: string) =>
      process.env.MCO_DASHBOARD_SCREENSHOTS === '1'
        ? page.screenshot({ path: new URL(name, DOCS).pathname, fullPage: true })
        : undefined;
    await screenshot('dashboard-placement.png');
    // The cluster's page and the fleet say so for this placement.
    await page.goto(`${dashboard.url}#/cluster/${cluster}`);
    const onCluster = page.locator('main li', { hasText: 'team-a/web' });
    await onCluster.filter({ hasText: 'signal stale' }).waitFor();
    expect(await violations(page)).toEqual({ violations: [], ran: true });
    await page.goto(`${dashboard.url}#/`);
    const fleetRow = page.locator(`tr[data-cluster="${cluster}"] td`).last();
    await fleetRow.filter({ hasText: 'signal stale' }).waitFor();
    await screenshot('dashboard-fleet.png');
    await page.getByLabel('Filter').fill('stale');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-cluster]').length === 1);
    await page.getByLabel('Filter').fill('');

    source.fail(cluster, undefined);
    await fleetRow.filter({ hasText: 'signal fresh' }).waitFor();
    source.set(cluster, { hpa: { currentReplicas: 4, maxReplicas: 10 }, atCapacityCeiling: true });
    await fleetRow.filter({ hasText: 'at ceiling' }).waitFor();
    source.set(cluster, { hpa: { currentReplicas: 4, maxReplicas: 10 } });
    await fleetRow.filter({ hasText: 'signal fresh' }).waitFor();
    expect(problems).toEqual([]);
  }, 120_000);

  it('works from the keyboard alone, and axe-core finds no WCAG 2.1 A or AA violation on the fleet and placement pages', async () => {
    const dashboard = dashboards[0]!;
    const { page } = await open(dashboard.url);
    await page.goto(dashboard.url);
    await page.locator('tr[data-cluster="fleet/a"]').waitFor();
    const focused = () => page.evaluate(() => document.activeElement?.textContent ?? '');
    // The first Tab reaches the skip link; Enter moves the focus to the content.
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // Tab to the first link to a placement, open it with Enter.
    for (let i = 0; i < 40 && (await focused()) !== 'team-a/web'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('team-a/web');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Placement team-a/web');
    expect(page.url()).toBe(`${dashboard.url}#/placement/team-a/web`);
    // Back to the fleet; the filter keeps the rows that contain every word typed.
    await page.goBack();
    await page.getByLabel('Filter').fill('cordoned');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-cluster]').length === 1);
    expect(await page.locator('#clusters-h').innerText()).toBe('Clusters (1 of 3 match)');
    await page.getByLabel('Filter').fill('');
    await page.goForward();
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Placement team-a/web');

    expect(await violations(page)).toEqual({ violations: [], ran: true });
    await page.goto(`${dashboard.url}#/`);
    await page.locator('tr[data-cluster="fleet/a"]').waitFor();
    expect(await violations(page)).toEqual({ violations: [], ran: true });
  }, 120_000);

  it("shows a tenant only its own namespaces, behind an authenticating proxy or with its token, on the chart's dashboard RBAC", async () => {
    const { hub } = env;
    // The chart's dashboard ServiceAccount, ClusterRole and Lease Role, and a token for it.
    const rbac = renderChart(['--set', 'dashboard.enabled=true']).filter(
      (o) =>
        ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? '') &&
        o.metadata?.name?.endsWith('-dashboard'),
    );
    expect(rbac.map((o) => o.kind)).toEqual([
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
    ]);
    await hub.plane.hub.apply(rbac);
    const account = rbac[0]!.metadata!;
    const token = (
      await hub.core.createNamespacedServiceAccountToken({
        name: account.name!,
        namespace: account.namespace!,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status!.token;
    const connection = {
      server: hub.plane.hub.server,
      caData: hub.plane.hub.caData,
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ token }),
      invalidate: () => undefined,
    };

    // Proxy mode: https, and the identity headers count only with the proxy CA's client certificate.
    const serving = testCA('serving').server();
    const proxyCA = testCA('front-proxy');
    const proxyClient = proxyCA.client('front-proxy-client');
    const proxied = await startDashboard({
      hub: connection,
      host: '127.0.0.1',
      port: 0,
      auth: 'proxy',
      tls: { cert: serving.cert, key: serving.key },
      proxy: {
        clientCA: proxyCA.cert,
        allowedNames: ['front-proxy-client'],
        usernameHeaders: DEFAULT_USERNAME_HEADERS,
        groupHeaders: DEFAULT_GROUP_HEADERS,
      },
    });
    dashboards.push(proxied);
    const origin = proxied.url.slice(0, -1);
    const tenant = await open(
      proxied.url,
      { 'X-Remote-User': 'tenant-a' },
      {
        ignoreHTTPSErrors: true,
        clientCertificates: [{ origin, certPath: proxyClient.certFile, keyPath: proxyClient.keyFile }],
      },
    );
    await tenant.page.goto(proxied.url);
    await tenant.page.locator('tr[data-placement="team-a/web"]').waitFor();
    const visible = async (page: Page) => ({
      placements: await page.locator('tr[data-placement]').evaluateAll((rows) => rows.map((r) => r.dataset.placement)),
      clusters: await page.locator('tr[data-cluster]').count(),
      text: await page.locator('main').innerText(),
    });
    const seen = await visible(tenant.page);
    expect({ ...seen, text: seen.text.includes('team-b') }).toEqual({
      placements: ['team-a/web'],
      clusters: 3,
      text: false,
    });
    await tenant.page.goto(`${proxied.url}#/placement/team-b/api`);
    await tenant.page.getByText('There is no placement team-b/api, or your identity may not list it').waitFor();
    // Anyone else claiming system:masters, with or without a certificate of another CA, gets nothing.
    const otherClient = testCA('other').client('front-proxy-client');
    for (const certificates of [[], [{ origin, certPath: otherClient.certFile, keyPath: otherClient.keyFile }]]) {
      const mallory = await open(
        proxied.url,
        { 'X-Remote-User': 'mallory', 'X-Remote-Group': 'system:masters' },
        { ignoreHTTPSErrors: true, clientCertificates: certificates },
      );
      await mallory.page.goto(proxied.url);
      const answer = await mallory.page.evaluate(async () => {
        const res = await fetch('/api/stream');
        return { status: res.status, body: await res.text() };
      });
      expect(answer).toEqual({ status: 401, body: '{"auth":"proxy"}' });
      expect(await mallory.page.locator('tr[data-placement]').count()).toBe(0);
    }

    // Token mode: the tenant's token is posted once; the page never holds it, the cookie is HttpOnly.
    const tokened = await startDashboard({ hub: connection, host: '127.0.0.1', port: 0, auth: 'token' });
    dashboards.push(tokened);
    const login = await open(tokened.url);
    await login.page.goto(tokened.url);
    await login.page.getByLabel('Bearer token').fill(hub.plane.hub.token('tenant-a'));
    await login.page.getByRole('button', { name: 'Sign in' }).click();
    await login.page.locator('tr[data-placement="team-a/web"]').waitFor();
    const afterLogin = await visible(login.page);
    expect(afterLogin.placements).toEqual(['team-a/web']);
    expect(await login.page.locator('.status').innerText()).toContain('signed in as tenant-a');
    expect(await login.page.evaluate(() => document.cookie)).toBe('');
    expect(await login.page.content()).not.toContain(hub.plane.hub.token('tenant-a'));
    const [cookie] = await login.page.context().cookies();
    expect(cookie).toMatchObject({ name: 'mco_dashboard_session', httpOnly: true, sameSite: 'Strict', secure: true });
    // Signing out ends the session on the server: the cookie no longer opens the stream.
    await login.page.getByRole('button', { name: 'Sign out' }).click();
    await login.page.getByLabel('Bearer token').waitFor();
    const stale = await fetch(`${tokened.url}api/stream`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` } });
    expect(stale.status).toBe(401);
    expect([...tenant.problems, ...login.problems]).toEqual([]);
  }, 120_000);

  it('with --auth none, a page on an attacker name that resolves to 127.0.0.1 (DNS rebinding) cannot read /api/stream or /api/*', async () => {
    const dashboard = await startOpenDashboard();
    const port = new URL(dashboard.url).port;
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    /** What a script on the page's origin reads from the dashboard's API (the start of the stream). */
    const read = () =>
      page.evaluate(async () => {
        const out: Record<string, { status: number; body: string }> = {};
        for (const path of ['/api/session', '/api/stream']) {
          const res = await fetch(path);
          const reader = res.body!.getReader();
          const { value } = await reader.read();
          await reader.cancel();
          out[path] = { status: res.status, body: new TextDecoder().decode(value) };
        }
        return out;
      });
    // The same page and script on 127.0.0.1 reads the fleet: the dashboard works there.
    await page.goto(dashboard.url);
    await page.locator('tr[data-placement="team-b/api"]').waitFor();
    const local = await read();
    expect({ session: local['/api/session']!.status, stream: local['/api/stream']!.status }).toEqual({
      session: 200,
      stream: 200,
    });
    // attacker.test resolves to 127.0.0.1: the browser sends Host attacker.test, which the dashboard refuses.
    const attacker = await page.goto(`http://attacker.test:${port}/`);
    expect(attacker!.status()).toBe(403);
    const rebound = await read();
    expect(rebound).toEqual({
      '/api/session': { status: 403, body: expect.stringContaining('this Host is not served') as unknown },
      '/api/stream': { status: 403, body: expect.stringContaining('this Host is not served') as unknown },
    });
    expect(JSON.stringify(rebound)).not.toContain('team-b');
  }, 60_000);

  it('the built `mco dashboard` serves the page from the hub kubeconfig on 127.0.0.1, and stops on SIGTERM', async () => {
    // Port 0: the kernel picks a free port as the dashboard binds (a port picked beforehand can be taken meanwhile).
    const child = spawn(
      process.execPath,
      [builtMco(), 'dashboard', '--kubeconfig', kubeconfig, '--listen', '127.0.0.1:0'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve((exitCode = code))));
    const serving = /mco dashboard: serving (http:\/\/127\.0\.0\.1:\d+\/) \(auth none\)/;
    try {
      await expect
        .poll(() => (exitCode === undefined ? serving.test(stderr) : `exited ${exitCode}: ${stderr}`), {
          timeout: 60_000,
          interval: 100,
        })
        .toBe(true);
      const url = serving.exec(stderr)![1]!;
      const { page, problems } = await open(url);
      await page.goto(url);
      await page.locator('tr[data-placement="team-a/web"]').waitFor({ timeout: 60_000 });
      expect(problems).toEqual([]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
  }, 180_000);

  const PLACEMENTS_API = {
    group: 'orchestra.multicluster.x-k8s.io',
    version: 'v1alpha1',
    plural: 'multikubernetesclusterplacements',
  };
  /** A placement no controller evaluates here, listing `clusters` of fleet since `since`. */
  async function placementListing(namespace: string, name: string, clusters: string[], since: string) {
    const placement = await env.fleet.createPlacement(namespace, name, {});
    const listed = clusters.map((c) => ({ namespace: 'fleet', name: c, state: 'ACTIVE', lastTransitionTime: since }));
    await env.hub.custom.replaceNamespacedCustomObjectStatus({
      ...PLACEMENTS_API,
      namespace,
      name,
      body: { ...placement, status: { clusters: listed } },
    });
  }
  const installCrds = (...names: ThirdPartyCrd[]) => env.hub.plane.hub.installCrds(names.map((n) => thirdPartyCrd(n)));
  /** The Delivery section's rows, once `count` are shown. */
  async function deliveryRows(page: Page, url: string, placement: string, count: number) {
    await page.goto(`${url}#/placement/${placement}`);
    await page.waitForFunction(
      (n) => document.querySelectorAll('section[aria-labelledby="delivery-h"] li').length === n,
      count,
    );
    return (await page.locator('section[aria-labelledby="delivery-h"] li').allInnerTexts()).sort();
  }

  it('lists the Applications an ApplicationSet with the mco plugin generator made for the placement, by cluster, with sync and health', async () => {
    await installCrds('argoproj.io_applications.yaml', 'argoproj.io_applicationsets.yaml');
    await env.fleet.namespace('argocd');
    await placementListing('team-a', 'appset', ['a', 'b'], new Date().toISOString());
    const argo = { group: 'argoproj.io', version: 'v1alpha1', namespace: 'argocd' };
    const appSet = (await env.hub.custom.createNamespacedCustomObject({
      ...argo,
      plural: 'applicationsets',
      body: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'ApplicationSet',
        metadata: { name: 'web' },
        spec: {
          goTemplate: true,
          generators: [
            {
              plugin: {
                configMapRef: { name: 'argocd-mco-placement' },
                input: {
                  parameters: {
                    multiClusterOrchestraPlacementName: 'appset',
                    multiClusterOrchestraPlacementNamespace: 'team-a',
                  },
                },
              },
            },
          ],
          template: {
            metadata: { name: 'web-{{.name}}' },
            spec: { project: 'default', destination: { name: '{{.name}}', namespace: 'web' } },
          },
        },
      },
    })) as { metadata: { uid: string } };
    // As the ApplicationSet controller writes them: owned by the set, destination the cluster's Argo CD name.
    for (const [cluster, sync, health] of [
      ['a', 'Synced', 'Healthy'],
      ['b', 'OutOfSync', 'Progressing'],
    ] as const) {
      await env.hub.custom.createNamespacedCustomObject({
        ...argo,
        plural: 'applications',
        body: {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          metadata: {
            name: `web-fleet.${cluster}`,
            ownerReferences: [
              { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: 'web', uid: appSet.metadata.uid },
            ],
          },
          spec: { project: 'default', destination: { name: `fleet.${cluster}`, namespace: 'web' } },
          status: { sync: { status: sync }, health: { status: health } },
        },
      });
    }
    const dashboard = await startOpenDashboard();
    const { page, problems } = await open(dashboard.url);
    expect(await deliveryRows(page, dashboard.url, 'team-a/appset', 2)).toEqual([
      'fleet/a: Application argocd/web-fleet.a: Synced, Healthy',
      'fleet/b: Application argocd/web-fleet.b: OutOfSync, Progressing',
    ]);
    expect(problems).toEqual([]);
  }, 180_000);

  const withFluxOperator = preparedTool('flux-operator') !== undefined || inCi;
  it.skipIf(!withFluxOperator)(
    "lists the Kustomizations a Flux Operator ResourceSet made from mco's input providers for the placement, by cluster, with Ready, beside rendered mode's",
    async () => {
      await installCrds('kustomize.toolkit.fluxcd.io_kustomizations.yaml', 'fluxcd.controlplane.io_resourcesets.yaml');
      await env.fleet.namespace('flux-system');
      await placementListing('team-a', 'operator', ['a', 'b'], new Date().toISOString());
      const flux = { namespace: 'flux-system' };
      await env.hub.custom.createNamespacedCustomObject({
        ...flux,
        group: 'fluxcd.controlplane.io',
        version: 'v1',
        plural: 'resourcesets',
        body: {
          apiVersion: 'fluxcd.controlplane.io/v1',
          kind: 'ResourceSet',
          metadata: { name: 'web' },
          spec: {
            inputsFrom: [
              {
                apiVersion: 'fluxcd.controlplane.io/v1',
                kind: 'ResourceSetInputProvider',
                selector: {
                  matchLabels: {
                    'app.kubernetes.io/managed-by': 'mco-flux',
                    'orchestra.multicluster.x-k8s.io/placement': 'operator',
                    'orchestra.multicluster.x-k8s.io/placement-namespace': 'team-a',
                  },
                },
              },
            ],
            resources: [],
          },
        },
      });
      const kustomizations = { ...flux, group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations' };
      const kustomization = async (name: string, cluster: string, meta: object, ready?: string) => {
        const created = await env.hub.custom.createNamespacedCustomObject({
          ...kustomizations,
          body: {
            apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
            kind: 'Kustomization',
            metadata: { name, ...meta },
            spec: {
              interval: '10m',
              path: './deploy',
              prune: true,
              sourceRef: { kind: 'GitRepository', name: 'web' },
              kubeConfig: { secretRef: { name: fluxNames.kubeconfigSecretName('fleet', cluster), key: 'value' } },
            },
          },
        });
        if (!ready) return;
        const condition = { type: 'Ready', status: ready, reason: 'ReconciliationSucceeded', message: 'applied' };
        await env.hub.custom.replaceNamespacedCustomObjectStatus({
          ...kustomizations,
          name,
          body: {
            ...created,
            status: { conditions: [{ ...condition, lastTransitionTime: new Date().toISOString() }] },
          },
        });
      };
      // As flux-operator labels what a ResourceSet generates.
      const generated = {
        labels: {
          'resourceset.fluxcd.controlplane.io/name': 'web',
          'resourceset.fluxcd.controlplane.io/namespace': 'flux-system',
        },
      };
      await kustomization('web-a', 'a', generated, 'True');
      await kustomization('web-b', 'b', generated);
      // Rendered mode: `mco flux` annotates what it writes.
      await placementListing('team-a', 'rendered', ['c'], new Date().toISOString());
      await kustomization(
        'rendered-c',
        'c',
        {
          annotations: {
            'orchestra.multicluster.x-k8s.io/placement-key': 'team-a/rendered',
            'orchestra.multicluster.x-k8s.io/cluster-profile': 'fleet/c',
          },
        },
        'False',
      );
      const dashboard = await startOpenDashboard();
      const { page, problems } = await open(dashboard.url);
      expect(await deliveryRows(page, dashboard.url, 'team-a/operator', 2)).toEqual([
        'fleet/a: Kustomization flux-system/web-a: Ready True (ReconciliationSucceeded)',
        'fleet/b: Kustomization flux-system/web-b: not reconciled yet',
      ]);
      expect(await deliveryRows(page, dashboard.url, 'team-a/rendered', 1)).toEqual([
        'fleet/c: Kustomization flux-system/rendered-c: Ready False (ReconciliationSucceeded)',
      ]);
      expect(problems).toEqual([]);
    },
    180_000,
  );

  it('says when the controller was last seen, and stops saying Live and signal fresh once its Lease is stale', async () => {
    const leases = env.hub.admin.makeApiClient(CoordinationV1Api);
    const renewed = (ms: number) => new V1MicroTime(Date.now() - ms);
    /** Writes the Lease's renewTime as `ms` milliseconds ago. */
    const renew = async (ms: number) => {
      const lease = await leases.readNamespacedLease({ namespace: 'kube-system', name: 'liveness-controller' });
      await leases.replaceNamespacedLease({
        namespace: 'kube-system',
        name: 'liveness-controller',
        body: { ...lease, spec: { ...lease.spec, renewTime: renewed(ms) } },
      });
    };
    await leases.createNamespacedLease({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'liveness-controller' },
        spec: { holderIdentity: 'mco/controller-0', leaseDurationSeconds: 15, renewTime: renewed(5_000) },
      },
    });
    // The controller's last evaluation left a fresh signal for fleet/a.
    const placement = await env.fleet.createPlacement('team-a', 'liveness', autoscaling);
    await env.hub.custom.replaceNamespacedCustomObjectStatus({
      ...PLACEMENTS_API,
      namespace: 'team-a',
      name: 'liveness',
      body: {
        ...placement,
        status: {
          clusters: [
            {
              namespace: 'fleet',
              name: 'a',
              state: 'ACTIVE',
              lastTransitionTime: new Date().toISOString(),
              atCapacityCeiling: false,
            },
          ],
        },
      },
    });
    const dashboard = await startOpenDashboard({ controllerLease: 'kube-system/liveness-controller' });
    const { page, problems } = await open(dashboard.url);
    await page.goto(`${dashboard.url}#/placement/team-a/liveness`);
    const status = page.locator('header .status');
    await status.filter({ hasText: 'controller seen' }).waitFor();
    expect(await status.innerText()).toContain('Live');
    await page.locator('table.placed td.signal', { hasText: 'signal fresh' }).waitFor();

    // The controller stops renewing: its Lease was last renewed 10 minutes ago.
    await renew(600_000);
    await status.filter({ hasText: 'Controller not seen since' }).waitFor();
    const text = await status.innerText();
    expect(text).not.toMatch(/\bLive\b/);
    expect(text).toContain('kube-system/liveness-controller is older than 60 s');
    await page.locator('table.placed td.signal', { hasText: 'the controller was last seen at' }).waitFor();
    expect(await page.locator('table.placed td.signal').innerText()).not.toContain('signal fresh');

    // It renews again: Live.
    await renew(0);
    await status.filter({ hasText: 'controller seen' }).waitFor();
    await page.locator('table.placed td.signal', { hasText: 'signal fresh' }).waitFor();
    expect(problems).toEqual([]);
  }, 120_000);

  it('keeps state lanes readable over hours: a 15-minute window by default, and no stretch narrower than its label at any window', async () => {
    // Listed since 3 hours ago, then many quick changes now.
    await placementListing('team-a', 'history', ['a', 'b'], new Date(Date.now() - 3 * 3600_000).toISOString());
    const dashboard = await startOpenDashboard();
    const { page, problems } = await open(dashboard.url);
    await page.goto(`${dashboard.url}#/placement/team-a/history`);
    await page.locator('.lane').first().waitFor();
    const states = ['SCALING_IN', 'ACTIVE', 'UNHEALTHY', 'ACTIVE', 'EVICTING', 'ACTIVE'];
    for (const [i, state] of states.entries()) {
      const current = (await env.hub.custom.getNamespacedCustomObject({
        ...PLACEMENTS_API,
        namespace: 'team-a',
        name: 'history',
      })) as { status: { clusters: { state: string; lastTransitionTime: string }[] } };
      const clusters = current.status.clusters.map((c) => ({
        ...c,
        state,
        lastTransitionTime: new Date().toISOString(),
      }));
      await env.hub.custom.replaceNamespacedCustomObjectStatus({
        ...PLACEMENTS_API,
        namespace: 'team-a',
        name: 'history',
        body: { ...current, status: { clusters } },
      });
      await page.waitForFunction(
        (n) => document.querySelector('.lane .lane-bar')?.querySelectorAll('li.seg').length === n,
        i + 2,
      );
    }
    const widths = () =>
      page.$$eval('.lane-bar li.seg', (segments) => segments.map((s) => s.getBoundingClientRect().width));
    const MIN_PX = 60;
    for (const window of ['15', '60', '360', '1440']) {
      await page.getByLabel('Window').selectOption(window);
      const shown = await widths();
      expect(shown.length, `window ${window} min`).toBe(2 * (states.length + 1));
      expect(Math.min(...shown), `window ${window} min: ${shown.join(', ')}`).toBeGreaterThanOrEqual(MIN_PX);
    }
    // The default window starts 15 minutes back: the 3-hour stretch is cut there, not stretched across the lane.
    await page.getByLabel('Window').selectOption('15');
    expect(await page.locator('section[aria-labelledby="lanes-h"] .note').innerText()).toMatch(/last 15 minutes/);
    expect(problems).toEqual([]);
  }, 120_000);
});
