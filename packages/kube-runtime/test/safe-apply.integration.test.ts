import type { McoError } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  KubeClient,
  objectPath,
  resourcePath,
  syncOwnedObjects,
  type DesiredObject,
  type KubeObject,
  type SyncOwnedObjectsOptions,
} from '../src/index.js';

const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps' };
const OWNED = { 'app.kubernetes.io/managed-by': 'safe-apply-test' };

describeWithControlPlane('syncOwnedObjects against a real kube-apiserver', () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let n = 0;

  beforeAll(async () => {
    // Lists go to etcd, not to the watch cache's snapshots, so an etcd compaction expires a
    // continue token at once (410 Gone), as it does whenever the cache cannot serve a page.
    cp = await startControlPlane({ extraApiserverFlags: ['--feature-gates=ListFromCacheSnapshot=false'] });
    admin = new KubeClient(cp.hub.connectionFor('admin'), { timeoutMs: 10_000 });
  });
  afterAll(async () => {
    admin?.close();
    await cp?.stop();
  });

  /** A fresh namespace per test, so tests never see each other's objects. */
  async function namespace(): Promise<string> {
    const name = `safe-apply-${++n}`;
    await admin.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    return name;
  }
  const configMap = (ns: string, name: string, data: Record<string, string>): DesiredObject & { data: object } => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: ns },
    data,
  });
  async function stored(ns: string): Promise<Record<string, unknown>> {
    const list = await admin.get<{ items: (KubeObject & { data?: unknown })[] }>(resourcePath(CONFIGMAPS, ns), {
      query: { labelSelector: 'app.kubernetes.io/managed-by' },
    });
    return Object.fromEntries(list.items.map((o) => [o.metadata?.name, o.data]));
  }
  function capture() {
    const lines: string[] = [];
    const logger = {
      debug: () => {},
      info: (message: string, fields?: Record<string, unknown>) =>
        lines.push(`${message} ${String(fields?.object)}${fields?.dryRun ? ' (dry run)' : ''}`),
      warn: (message: string) => lines.push(`warn ${message}`),
      error: (message: string) => lines.push(`error ${message}`),
      child: () => logger,
    };
    return { lines, logger };
  }
  const options = (
    ns: string,
    desired: DesiredObject[],
    rest: Partial<SyncOwnedObjectsOptions<DesiredObject>> = {},
  ): SyncOwnedObjectsOptions<DesiredObject> => ({
    resource: CONFIGMAPS,
    namespace: ns,
    ownedLabels: OWNED,
    desired,
    mayPrune: () => true,
    fieldManager: 'mco-safe-apply-test',
    ...rest,
  });

  it('applies, prunes only what it owns and may prune, logs each write, and nothing when nothing changed; a dry run stores nothing', async () => {
    const ns = await namespace();
    // Someone else's object with a desired name: never written.
    await admin.create(resourcePath(CONFIGMAPS, ns), { ...configMap(ns, 'theirs', { owner: 'them' }) });
    const first = capture();
    const created = await syncOwnedObjects(
      admin,
      options(
        ns,
        [configMap(ns, 'a', { v: '1' }), configMap(ns, 'b', { v: '1' }), configMap(ns, 'theirs', { v: '1' })],
        { logger: first.logger },
      ),
    );
    const again = capture();
    const unchanged = await syncOwnedObjects(
      admin,
      options(ns, [configMap(ns, 'a', { v: '1' }), configMap(ns, 'b', { v: '1' })], { logger: again.logger }),
    );
    const dry = capture();
    const dryRun = await syncOwnedObjects(
      admin,
      options(ns, [configMap(ns, 'a', { v: '2' })], { dryRun: true, logger: dry.logger }),
    );
    const afterDryRun = await stored(ns);
    // `b` may not go (its removal is in doubt): kept.
    const doubt = await syncOwnedObjects(
      admin,
      options(ns, [configMap(ns, 'a', { v: '2' })], { mayPrune: (o) => o.metadata?.name !== 'b' }),
    );
    const real = capture();
    const pruned = await syncOwnedObjects(
      admin,
      options(ns, [configMap(ns, 'a', { v: '2' })], { logger: real.logger }),
    );
    expect({
      created,
      firstLog: first.lines,
      unchanged,
      againLog: again.lines,
      dryRun,
      dryLog: dry.lines,
      afterDryRun,
      doubt: { kept: doubt.kept, deleted: doubt.deleted },
      pruned,
      realLog: real.lines,
      end: await stored(ns),
      theirs: (await admin.get<{ data?: unknown }>(objectPath(CONFIGMAPS, ns, 'theirs'))).data,
    }).toEqual({
      created: {
        applied: [`${ns}/a`, `${ns}/b`],
        deleted: [],
        kept: [],
        conflicted: [],
        notOwned: [`${ns}/theirs`],
        failed: [],
      },
      firstLog: [`applied ConfigMap ${ns}/a`, `applied ConfigMap ${ns}/b`],
      unchanged: { applied: [], deleted: [], kept: [], conflicted: [], notOwned: [], failed: [] },
      againLog: [],
      dryRun: { applied: [`${ns}/a`], deleted: [`${ns}/b`], kept: [], conflicted: [], notOwned: [], failed: [] },
      dryLog: [`applied ConfigMap ${ns}/a (dry run)`, `deleted ConfigMap ${ns}/b (dry run)`],
      afterDryRun: { a: { v: '1' }, b: { v: '1' } },
      doubt: { kept: [`${ns}/b`], deleted: [] },
      pruned: { applied: [], deleted: [`${ns}/b`], kept: [], conflicted: [], notOwned: [], failed: [] },
      realLog: [`deleted ConfigMap ${ns}/b`],
      end: { a: { v: '2' } },
      theirs: { owner: 'them' },
    });
  });

  it('observing through a cache (existing): a same-named object without the owned labels is left alone, an apply the server finds nothing to change in is not reported, each write reaches onWritten', async () => {
    const ns = await namespace();
    await admin.create(resourcePath(CONFIGMAPS, ns), { ...configMap(ns, 'theirs', { owner: 'them' }) });
    await syncOwnedObjects(admin, options(ns, [configMap(ns, 'a', { v: '1' }), configMap(ns, 'old', {})]));
    const listed = await admin.get<{ items: KubeObject[] }>(resourcePath(CONFIGMAPS, ns));
    // As an informer holds them: kind and apiVersion on each; `a` as a stale copy without the digest.
    const cache = listed.items.map((o) => ({ apiVersion: 'v1', kind: 'ConfigMap', ...o }) as KubeObject);
    const stale = cache.map((o) =>
      o.metadata?.name === 'a' ? { ...o, metadata: { ...o.metadata, annotations: {} } } : o,
    );
    const written: string[] = [];
    const log = capture();
    const report = await syncOwnedObjects(
      admin,
      options(
        ns,
        [configMap(ns, 'a', { v: '1' }), configMap(ns, 'theirs', { v: 'mine' }), configMap(ns, 'b', { v: '1' })],
        {
          existing: stale,
          concurrency: 3,
          logger: log.logger,
          onWritten: (key, object) => written.push(`${key} ${object ? 'applied' : 'deleted'}`),
        },
      ),
    );
    expect({
      report,
      written: written.sort(),
      log: log.lines.sort(),
      end: await stored(ns),
      theirs: (await admin.get<{ data?: unknown }>(objectPath(CONFIGMAPS, ns, 'theirs'))).data,
    }).toEqual({
      report: {
        applied: [`${ns}/b`],
        deleted: [`${ns}/old`],
        kept: [],
        conflicted: [],
        notOwned: [`${ns}/theirs`],
        failed: [],
      },
      written: [`${ns}/b applied`, `${ns}/old deleted`],
      log: [`applied ConfigMap ${ns}/b`, `deleted ConfigMap ${ns}/old`],
      end: { a: { v: '1' }, b: { v: '1' } },
      theirs: { owner: 'them' },
    });
  });

  it('a delete whose uid or resourceVersion precondition fails (409) keeps the object; one already gone (404) is no failure', async () => {
    const ns = await namespace();
    await syncOwnedObjects(
      admin,
      options(ns, [configMap(ns, 'changed', {}), configMap(ns, 'recreated', {}), configMap(ns, 'gone', {})]),
    );
    // Between the listing and each delete, someone else changes, re-creates or deletes the object.
    const path = (name: string) => objectPath(CONFIGMAPS, ns, name);
    const meddle: Record<string, () => Promise<unknown>> = {
      changed: () => admin.patch(path('changed'), 'merge', { data: { new: 'value' } }),
      recreated: async () => {
        await admin.delete(path('recreated'));
        await admin.create(resourcePath(CONFIGMAPS, ns), {
          ...configMap(ns, 'recreated', { new: 'object' }),
          metadata: { name: 'recreated', labels: OWNED },
        });
      },
      gone: () => admin.delete(path('gone')),
    };
    class Racing extends KubeClient {
      override async delete<T>(p: string, body?: unknown, o?: Parameters<KubeClient['delete']>[2]): Promise<T> {
        await meddle[p.split('/').pop()!]!();
        return super.delete<T>(p, body, o);
      }
    }
    const racing = new Racing(cp.hub.connectionFor('admin'), { timeoutMs: 10_000 });
    const report = await syncOwnedObjects(racing, options(ns, []));
    racing.close();
    expect({ report, end: await stored(ns) }).toEqual({
      report: {
        applied: [],
        deleted: [`${ns}/gone`],
        kept: [`${ns}/changed`, `${ns}/recreated`],
        conflicted: [`${ns}/changed`, `${ns}/recreated`],
        notOwned: [],
        failed: [],
      },
      end: { changed: { new: 'value' }, recreated: { new: 'object' } },
    });
  });

  it('a refused delete (403) is reported and the other writes still happen', async () => {
    const ns = await namespace();
    await syncOwnedObjects(admin, options(ns, [configMap(ns, 'old', { v: '0' })]));
    const rbac = (kind: string) =>
      resourcePath({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: kind }, ns);
    await admin.create(rbac('roles'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'no-delete' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'patch', 'create'] }],
    });
    await admin.create(rbac('rolebindings'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'no-delete' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-delete' },
      subjects: [{ kind: 'User', name: 'provider' }],
    });
    const limited = new KubeClient(cp.hub.connectionFor('provider'), { timeoutMs: 10_000 });
    const report = await syncOwnedObjects(limited, options(ns, [configMap(ns, 'new', { v: '1' })]));
    limited.close();
    expect({
      applied: report.applied,
      deleted: report.deleted,
      failed: report.failed.map((f) => ({ key: f.key, code: f.error.code, retryable: f.error.retryable })),
      end: await stored(ns),
    }).toEqual({
      applied: [`${ns}/new`],
      deleted: [],
      failed: [{ key: `${ns}/old`, code: 'Unauthorized', retryable: false }],
      end: { new: { v: '1' }, old: { v: '0' } },
    });
  });

  it('a listing past its deadline or larger than the client reads writes and deletes nothing', async () => {
    const ns = await namespace();
    await syncOwnedObjects(admin, options(ns, [configMap(ns, 'big', { v: 'x'.repeat(4096) })]));
    // The deadline: a request that gets no answer in time (the wait is for the request's own signal).
    const stalled = new KubeClient(cp.hub.connectionFor('admin'), {
      timeoutMs: 300,
      beforeRequest: (signal) =>
        new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error))),
    });
    const small = new KubeClient(cp.hub.connectionFor('admin'), { timeoutMs: 10_000, maxResponseBytes: 1024 });
    const errorOf = (client: KubeClient) =>
      syncOwnedObjects(client, options(ns, [configMap(ns, 'other', {})])).then(
        () => undefined,
        (e: unknown) => ({ code: (e as McoError).code, name: (e as Error).constructor.name }),
      );
    const late = await errorOf(stalled);
    const oversized = await errorOf(small);
    stalled.close();
    small.close();
    expect({ late, oversized, end: Object.keys(await stored(ns)) }).toEqual({
      late: { code: 'Timeout', name: 'McoError' },
      oversized: { code: 'Invalid', name: 'ResponseTooLargeError' },
      end: ['big'],
    });
  });

  it('a listing whose continue token expired (410 Gone) starts again; expired twice, it is a retryable error and nothing is deleted', async () => {
    const ns = await namespace();
    // 501 owned objects: the listing takes two pages of 500.
    const names = Array.from({ length: 501 }, (_, i) => `o-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 25) {
      await Promise.all(
        names.slice(i, i + 25).map((name) =>
          admin.create(resourcePath(CONFIGMAPS, ns), {
            ...configMap(ns, name, {}),
            metadata: { name, namespace: ns, labels: OWNED },
          }),
        ),
      );
    }
    /** Compacts etcd at its current revision (after one more write, so the listing's revision is behind it). */
    async function compact(): Promise<void> {
      await admin.create(resourcePath(CONFIGMAPS, ns), { ...configMap(ns, `tick-${++ticks}`, {}) });
      const etcd = (method: string, body: object) =>
        fetch(`${cp.etcdEndpoint}/v3/kv/${method}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => {
          if (!r.ok) throw new Error(`etcd ${method}: HTTP ${r.status} ${await r.text()}`);
          return (await r.json()) as { header: { revision: string } };
        });
      const { revision } = (await etcd('range', { key: Buffer.from('/').toString('base64') })).header;
      await etcd('compaction', { revision, physical: true });
    }
    let ticks = 0;
    /** Compacts etcd before the first `expiries` continued pages; records each page asked for. */
    class Compacting extends KubeClient {
      readonly pages: string[] = [];
      constructor(private expiries: number) {
        super(cp.hub.connectionFor('admin'), { timeoutMs: 10_000 });
      }
      override async get<T>(p: string, o?: Parameters<KubeClient['get']>[1]): Promise<T> {
        if (p === resourcePath(CONFIGMAPS, ns)) {
          const continued = o?.query?.continue !== undefined;
          if (continued && this.expiries-- > 0) await compact();
          this.pages.push(continued ? 'continue' : 'first');
        }
        return super.get<T>(p, o);
      }
    }
    const pruneLast = { mayPrune: (o: KubeObject) => o.metadata?.name === 'o-500' };

    const twice = new Compacting(2);
    const error = await syncOwnedObjects(twice, options(ns, [], pruneLast)).then(
      () => undefined,
      (e: unknown) => e as McoError,
    );
    const afterError = Object.keys(await stored(ns)).length;
    const once = new Compacting(1);
    const log = capture();
    const report = await syncOwnedObjects(once, options(ns, [], { ...pruneLast, logger: log.logger }));
    twice.close();
    once.close();
    expect({
      error: { code: error?.code, retryable: error?.retryable, gone: /410 Gone/.test(error?.message ?? '') },
      pagesTwice: twice.pages,
      afterError,
      pagesOnce: once.pages,
      report: { ...report, kept: report.kept.length },
      log: log.lines,
      end: Object.keys(await stored(ns)).length,
    }).toEqual({
      error: { code: 'Conflict', retryable: true, gone: true },
      pagesTwice: ['first', 'continue', 'first', 'continue'],
      afterError: 501,
      pagesOnce: ['first', 'continue', 'first', 'continue'],
      report: { applied: [], deleted: [`${ns}/o-500`], kept: 500, conflicted: [], notOwned: [], failed: [] },
      log: [`deleted ConfigMap ${ns}/o-500`],
      end: 500,
    });
  });
});
