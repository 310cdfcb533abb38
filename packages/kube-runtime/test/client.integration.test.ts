import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpStatusOf, type KubeConnection } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceAccountKubeConfig } from '@mco/testkit';
import {
  createInformer,
  createListWatch,
  createObjectWriter,
  isPartialObjectMetadata,
  KubeApiError,
  KubeClient,
  LeaderElector,
  loadKubeConfig,
  objectPath,
  resourcePath,
  type KubeObject,
} from '../src/index.js';

const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps' };

/** Waits until `check` holds, polling every 20 ms (a condition, not a fixed sleep). */
async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describeWithControlPlane('KubeClient against a real kube-apiserver', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  const ns = 'client-test';
  const path = (name: string) => objectPath(CONFIGMAPS, ns, name);

  beforeAll(async () => {
    cp = await startControlPlane();
    // Loaded from a kubeconfig file, as `mco controller` loads the hub.
    const dir = mkdtempSync(join(tmpdir(), 'mco-client-'));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, cp.hub.adminKubeConfig().exportConfig());
    client = new KubeClient(loadKubeConfig({ path: file }), { timeoutMs: 10_000 });
    await client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });
  afterAll(async () => {
    client?.close();
    await cp?.stop();
  });

  it('creates, reads, lists, replaces, patches (merge, JSON, apply) and deletes', async () => {
    const created = await client.create<KubeObject>(resourcePath(CONFIGMAPS, ns), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', labels: { app: 'x' } },
      data: { step: 'created' },
    });
    const replaced = await client.replace<KubeObject>(path('a'), { ...created, data: { step: 'replaced' } });
    const merged = await client.patch<KubeObject>(path('a'), 'merge', { data: { merge: 'yes' } });
    const json = await client.patch<KubeObject>(path('a'), 'json', [{ op: 'add', path: '/data/json', value: 'yes' }]);
    const applied = await client.patch<KubeObject>(
      path('a'),
      'apply',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: ns }, data: { applied: 'yes' } },
      { query: { fieldManager: 'mco-test', force: true } },
    );
    const listed = await client.get<{ items: KubeObject[] }>(resourcePath(CONFIGMAPS, ns), {
      query: { labelSelector: 'app=x', limit: 10 },
    });
    await client.delete(path('a'));
    const gone = await client.get(path('a')).catch((e: unknown) => e);
    expect({
      steps: [created, replaced, merged, json, applied].map((o) => o.data),
      managers: (applied.metadata?.managedFields as { manager: string }[]).map((f) => f.manager).sort(),
      listed: listed.items.map((o) => o.metadata?.name),
      gone: [gone instanceof KubeApiError, httpStatusOf(gone)],
    }).toEqual({
      steps: [
        { step: 'created' },
        { step: 'replaced' },
        { step: 'replaced', merge: 'yes' },
        { step: 'replaced', merge: 'yes', json: 'yes' },
        { step: 'replaced', merge: 'yes', json: 'yes', applied: 'yes' },
      ],
      managers: expect.arrayContaining(['mco-test']) as unknown as string[],
      listed: ['a'],
      gone: [true, 404],
    });
  });

  it('a stale write fails with 409, and the error carries the Status message', async () => {
    const created = await client.create<KubeObject>(resourcePath(CONFIGMAPS, ns), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'stale' },
    });
    await client.replace(path('stale'), { ...created, data: { first: 'write' } });
    const error = (await client
      .replace(path('stale'), { ...created, data: { second: 'write' } })
      .catch((e: unknown) => e)) as KubeApiError;
    expect({
      code: error.code,
      status: httpStatusOf(error),
      message: error.message.startsWith(`PUT ${path('stale')}: HTTP 409: Operation cannot be fulfilled`),
      body: (JSON.parse(error.body) as { reason: string }).reason,
    }).toEqual({ code: 409, status: 409, message: true, body: 'Conflict' });
  });

  it('dry run stores nothing: create and apply in the query, delete in DeleteOptions with its preconditions', async () => {
    const collection = resourcePath(CONFIGMAPS, ns);
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dry', namespace: ns }, data: { k: 'v' } };
    const dryCreated = await client.create<KubeObject>(collection, body, { dryRun: true });
    const afterDryCreate = await client.get(path('dry')).catch((e: unknown) => httpStatusOf(e));
    const stored = await client.create<KubeObject>(collection, body);
    await client.patch(
      path('dry'),
      'apply',
      { ...body, data: { k: 'dry' } },
      {
        query: { fieldManager: 'mco-test', force: true },
        dryRun: true,
      },
    );
    const preconditions = { uid: stored.metadata?.uid, resourceVersion: stored.metadata?.resourceVersion };
    await client.delete(path('dry'), { preconditions }, { dryRun: true });
    const afterDryRuns = await client.get<{ data?: unknown; metadata?: { uid?: string } }>(path('dry'));
    // A dry-run delete still checks its preconditions: a stale uid is refused, not "deleted".
    const stale = (await client
      .delete(path('dry'), { preconditions: { uid: 'not-the-uid' } }, { dryRun: true })
      .catch((e: unknown) => e)) as KubeApiError;
    await client.delete(path('dry'), { preconditions });
    const gone = (await client.get(path('dry')).catch((e: unknown) => e)) as KubeApiError;
    expect({
      dryCreated: dryCreated.metadata?.name,
      afterDryCreate,
      afterDryRuns: { data: afterDryRuns.data, uid: afterDryRuns.metadata?.uid === stored.metadata?.uid },
      stale: { code: stale.code, reason: stale.reason, retryable: stale.retryable },
      gone: { code: gone.code, reason: gone.reason, retryable: gone.retryable },
    }).toEqual({
      dryCreated: 'dry',
      afterDryCreate: 404,
      afterDryRuns: { data: { k: 'v' }, uid: true },
      stale: { code: 409, reason: 'Conflict', retryable: true },
      gone: { code: 404, reason: 'NotFound', retryable: false },
    });
  });

  it('reads and writes the status and scale subresources', async () => {
    const deployments = { group: 'apps', version: 'v1', plural: 'deployments' };
    const labels = { app: 'sub' };
    await client.create(resourcePath(deployments, ns), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'sub' },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'example.invalid/c' }] } },
      },
    });
    await client.patch(objectPath(deployments, ns, 'sub', 'scale'), 'merge', { spec: { replicas: 3 } });
    await client.patch(objectPath(deployments, ns, 'sub', 'status'), 'merge', { status: { observedGeneration: 7 } });
    const scale = await client.get<{ spec?: { replicas?: number } }>(objectPath(deployments, ns, 'sub', 'scale'));
    const status = await client.get<{ status?: { observedGeneration?: number } }>(
      objectPath(deployments, ns, 'sub', 'status'),
    );
    expect({ replicas: scale.spec?.replicas, observed: status.status?.observedGeneration }).toEqual({
      replicas: 3,
      observed: 7,
    });
  });

  it('watches: events as they happen, ended by the returned function', async () => {
    const list = await client.get<{ metadata: { resourceVersion: string } }>(resourcePath(CONFIGMAPS, ns));
    const events: string[] = [];
    let done: unknown = 'not called';
    const stop = await client.watch<KubeObject>(
      resourcePath(CONFIGMAPS, ns),
      { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true, labelSelector: 'w=1' },
      {
        onEvent: (type, object) => events.push(`${type} ${object.metadata?.name}`),
        onDone: (error) => (done = error),
      },
    );
    const writer = createObjectWriter(client, CONFIGMAPS, { fieldManager: 'mco-test' });
    const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w', namespace: ns, labels: { w: '1' } } };
    const stored = await writer.apply(object);
    await writer.apply({ ...object, data: { k: 'v' } });
    await writer.delete({ ...stored, metadata: { ...stored.metadata, resourceVersion: undefined } });
    await until(() => events.length >= 3);
    stop();
    expect({ events, done }).toEqual({ events: ['ADDED w', 'MODIFIED w', 'DELETED w'], done: 'not called' });
  });

  it('a metadata-only list (metadataOnlyList): each item its metadata, labels and owners, no data; its watch delivers whole objects', async () => {
    const owner = await client.create<KubeObject>(resourcePath(CONFIGMAPS, ns), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'meta-owner' },
    });
    await client.create(resourcePath(CONFIGMAPS, ns), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'meta-a',
        labels: { meta: '1' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'meta-owner', uid: owner.metadata!.uid! }],
      },
      data: { big: 'x'.repeat(10_000) },
    });
    const listWatch = createListWatch<KubeObject>(client, CONFIGMAPS, {
      namespace: ns,
      labelSelector: 'meta=1',
      metadataOnlyList: true,
    });
    const page = await listWatch.list({ limit: 10 });
    const item = page.items[0]!;
    const events: KubeObject[] = [];
    const stop = await listWatch.watch(
      page.resourceVersion,
      60,
      (_type, object) => events.push(object),
      () => {},
    );
    await client.patch(path('meta-a'), 'merge', { data: { big: 'y' } });
    await until(() => events.length >= 1);
    stop();
    expect({
      items: page.items.length,
      partial: isPartialObjectMetadata(item),
      name: item.metadata?.name,
      labels: item.metadata?.labels,
      owner: (item.metadata?.ownerReferences as { name?: string }[] | undefined)?.[0]?.name,
      resourceVersion: Boolean(item.metadata?.resourceVersion),
      data: (item as { data?: unknown }).data,
      watched: [events[0]!.kind, isPartialObjectMetadata(events[0]!), (events[0] as { data?: unknown }).data],
    }).toEqual({
      items: 1,
      partial: true,
      name: 'meta-a',
      labels: { meta: '1' },
      owner: 'meta-owner',
      resourceVersion: true,
      data: undefined,
      watched: ['ConfigMap', false, { big: 'y' }],
    });
  });

  // 410 Gone on a watch from an expired resourceVersion, and the relist after it, are tested through the
  // informer in packages/controller/test/leader.integration.test.ts (a custom resource's watch cache answers it).

  it('an informer over two namespaces (--cluster-profile-namespaces) needs only a Role in each, follows both across watch restarts, and never sees a third', async () => {
    const [a, b, c] = ['mn-a', 'mn-b', 'mn-c'];
    for (const name of [a, b, c]) {
      await client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
    await client.create(resourcePath({ group: '', version: 'v1', plural: 'serviceaccounts' }, a), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'reader' },
    });
    for (const namespace of [a, b]) {
      const rbac = (plural: string) =>
        resourcePath({ group: 'rbac.authorization.k8s.io', version: 'v1', plural }, namespace);
      await client.create(rbac('roles'), {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'read-configmaps' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }],
      });
      await client.create(rbac('rolebindings'), {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'read-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: a }],
      });
    }
    const writer = createObjectWriter(client, CONFIGMAPS, { fieldManager: 'mco-test' });
    const put = (namespace: string, name: string, step: number) =>
      writer.apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace, labels: { mn: '1' } },
        data: { step: String(step) },
      });
    for (const namespace of [a, b, c]) await put(namespace, 'first', 0);

    const dir = mkdtempSync(join(tmpdir(), 'mco-reader-'));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, (await serviceAccountKubeConfig(cp.hub, a, 'reader')).exportConfig());
    const reader = new KubeClient(loadKubeConfig({ path: file }), { timeoutMs: 10_000 });
    // Watches the server ends every 1-2 s, so the steps below cross watch restarts.
    const informer = createInformer<KubeObject>(reader, CONFIGMAPS, {
      scope: { namespaces: [b, a], labelSelector: 'mn=1' },
      tuning: { watchTimeoutSeconds: 1 },
    });
    const step = (key: string) => (informer.get(key) as { data?: { step?: string } } | undefined)?.data?.step;
    informer.start();
    try {
      await informer.waitForSync();
      expect(informer.keys().sort()).toEqual([`${a}/first`, `${b}/first`]);
      for (let i = 1; i <= 4; i++) {
        const watches = informer.health().watches;
        await put(a, 'first', i);
        await put(b, `added-${i}`, i);
        await put(c, 'first', i);
        await until(() => step(`${a}/first`) === String(i) && step(`${b}/added-${i}`) === String(i));
        await until(() => informer.health().watches > watches);
      }
      await writer.delete({ metadata: { name: 'first', namespace: b } });
      await until(() => informer.get(`${b}/first`) === undefined);
      expect({
        keys: informer.keys().sort(),
        lastError: informer.health().lastError,
        lists: informer.health().lists,
      }).toEqual({
        keys: [`${a}/first`, ...[1, 2, 3, 4].map((i) => `${b}/added-${i}`)],
        lastError: undefined,
        lists: 1,
      });
    } finally {
      await informer.stop();
      reader.close();
    }
  });

  it('elects a leader with MicroTime Lease times the API server accepts', async () => {
    let leading = false;
    const elector = new LeaderElector({
      client,
      namespace: ns,
      name: 'lock',
      identity: 'me',
      leaseDurationMs: 2_000,
      renewDeadlineMs: 1_500,
      retryPeriodMs: 300,
      onStartedLeading: () => (leading = true),
    });
    elector.start();
    await until(() => leading);
    await elector.stop();
    const lease = await client.get<{ spec: { holderIdentity?: string; renewTime: string } }>(
      '/apis/coordination.k8s.io/v1/namespaces/client-test/leases/lock',
    );
    expect({ holder: lease.spec.holderIdentity ?? '', micro: /\.\d{6}Z$/.test(lease.spec.renewTime) }).toEqual({
      holder: '',
      micro: true,
    });
  });

  it('tunnels through an HTTP proxy (proxy-url) with CONNECT, sending its credentials only to the proxy', async () => {
    const tunnels: { target: string | undefined; auth: string | undefined }[] = [];
    const proxy = createHttpServer();
    proxy.on('connect', (request: IncomingMessage, socket: Socket, head: Buffer) => {
      tunnels.push({ target: request.url, auth: request.headers['proxy-authorization'] });
      if (request.headers['proxy-authorization'] !== `Basic ${Buffer.from('me:pw').toString('base64')}`) {
        socket.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
        return;
      }
      const [host, port] = [request.url!.slice(0, request.url!.lastIndexOf(':')), request.url!.split(':').pop()];
      const upstream = connect(Number(port), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    const through = (credentials: string) =>
      new KubeClient({ ...cp.hub.connectionFor('admin'), proxyUrl: `http://${credentials}@127.0.0.1:${port}` });
    const good = through('me:pw');
    const bad = through('me:wrong');
    try {
      const listed = await good.get<{ items: unknown[] }>('/api/v1/namespaces');
      await good.get('/version'); // the same tunnel, kept alive
      const refused = (await bad.get('/version').catch((e: unknown) => e)) as Error;
      expect({
        listed: listed.items.length > 0,
        tunnels: tunnels.map((t) => t.target),
        refused: refused.message,
        leaks: refused.message.includes('wrong'),
      }).toEqual({
        listed: true,
        tunnels: [new URL(cp.hub.server).host, new URL(cp.hub.server).host],
        refused: `request to ${cp.hub.server}/version failed, reason: the proxy 127.0.0.1:${port} refused a tunnel to ${new URL(cp.hub.server).host}: HTTP 407`,
        leaks: false,
      });
    } finally {
      good.close();
      bad.close();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('a rejected token is a 401, and the connection is told to drop its credential', async () => {
    let invalidated = 0;
    const bad: KubeConnection = {
      server: cp.hub.server,
      caData: cp.hub.caData,
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ token: 'not-a-token' }),
      invalidate: () => void invalidated++,
    };
    const error = await new KubeClient(bad).get('/api/v1/namespaces').catch((e: unknown) => e);
    expect({ status: httpStatusOf(error), invalidated }).toEqual({ status: 401, invalidated: 1 });
  });
});

describe('KubeClient against a server that never answers', () => {
  it('gives up a request, and the start of a watch, after the request timeout with an error naming the server, not a credential', async () => {
    const sockets: Socket[] = [];
    const server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = new KubeClient(
      {
        server: `http://127.0.0.1:${port}`,
        insecureSkipTlsVerify: false,
        getCredential: () => Promise.resolve({ token: 'secret-token' }),
        invalidate: () => {},
      },
      { timeoutMs: 200 },
    );
    try {
      type Failure = Error & { code?: string };
      const error = (await client.get('/api/v1/namespaces').catch((e: unknown) => e)) as Failure;
      const watch = (await client
        .watch('/api/v1/namespaces', {}, { onEvent: () => {}, onDone: () => {} })
        .catch((e: unknown) => e)) as Failure;
      const url = `http://127.0.0.1:${port}/api/v1/namespaces`;
      expect([error, watch].map((e) => ({ name: e.name, code: e.code, message: e.message }))).toEqual([
        {
          name: 'TimeoutError',
          code: 'ETIMEDOUT',
          message: `request to ${url} failed, reason: no answer within 200 ms`,
        },
        {
          name: 'TimeoutError',
          code: 'ETIMEDOUT',
          message: `request to ${url} failed, reason: no answer within 200 ms`,
        },
      ]);
    } finally {
      client.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
