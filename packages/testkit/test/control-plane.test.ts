import { CoreV1Api, CustomObjectsApi, VersionApi, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  apiErrorOf,
  describeWithControlPlane,
  THIRD_PARTY_CRDS,
  thirdPartyCrd,
  type ThirdPartyCrd,
  startControlPlane,
  type ControlPlane,
} from '../src/index.js';

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.testkit.mco.dev' },
  spec: {
    group: 'testkit.mco.dev',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } } },
          },
        },
      },
    ],
  },
};

/** Processes whose command line mentions `text` (the control plane's temp dir is in every server's flags). */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // exited while we looked
      }
    })
    .map(Number);
}

async function eventually(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describeWithControlPlane('a control plane with a hub and one member cluster', () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['east'], minRequestTimeoutSeconds: 1 });
    console.log(`control plane (hub + 1 member) ready in ${cp.startupMs} ms`);
  });
  afterAll(() => cp?.stop());

  it('serves the real Kubernetes API, version 1.36, on loopback over verified TLS', async () => {
    const version = await cp.hub.adminKubeConfig().makeApiClient(VersionApi).getCode();
    expect({ major: version.major, minor: version.minor, server: cp.hub.server.replace(/\d+$/, 'PORT') }).toEqual({
      major: '1',
      minor: '36',
      server: 'https://127.0.0.1:PORT',
    });
  });

  it('keeps each cluster in its own key space of the shared etcd', async () => {
    const hub = cp.hub.adminKubeConfig().makeApiClient(CoreV1Api);
    const east = cp.members.east!.adminKubeConfig().makeApiClient(CoreV1Api);
    await hub.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'only-on-hub' }, data: { a: '1' } },
    });
    const onHub = await hub.readNamespacedConfigMap({ name: 'only-on-hub', namespace: 'default' });
    const onEast = await east.readNamespacedConfigMap({ name: 'only-on-hub', namespace: 'default' }).catch(apiErrorOf);
    expect({ hub: onHub.data, east: 'code' in onEast ? onEast.code : 'found' }).toEqual({ hub: { a: '1' }, east: 404 });
  });

  it('gives the non-admin users nothing until a test binds them to a ClusterRole', async () => {
    const controller = cp.hub.kubeConfigFor('controller').makeApiClient(CoreV1Api);
    const before = await controller.listNamespacedConfigMap({ namespace: 'default' }).catch(apiErrorOf);
    // Aggregated roles (view, edit, admin) stay empty here: their rules are filled in by
    // kube-controller-manager, which does not run. Bind an explicit role.
    await cp.hub.apply([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      } as KubernetesObject,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'controller-reads-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'configmap-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
      } as KubernetesObject,
    ]);
    // RBAC changes reach the authorizer through an informer: allow a moment.
    let after: unknown;
    for (let i = 0; i < 50; i++) {
      after = await controller
        .listNamespacedConfigMap({ namespace: 'default' })
        .then((list) => list.items.some((c) => c.metadata?.name === 'only-on-hub'), apiErrorOf);
      if (after === true) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const plugin = await cp.hub
      .kubeConfigFor('plugin')
      .makeApiClient(CoreV1Api)
      .listNamespacedConfigMap({ namespace: 'default' })
      .catch(apiErrorOf);
    expect({ before, after, plugin }).toEqual({
      before: {
        code: 403,
        reason: 'Forbidden',
        message:
          'configmaps is forbidden: User "controller" cannot list resource "configmaps" in API group "" in the namespace "default"',
      },
      after: true,
      plugin: {
        code: 403,
        reason: 'Forbidden',
        message:
          'configmaps is forbidden: User "plugin" cannot list resource "configmaps" in API group "" in the namespace "default"',
      },
    });
  });

  it('names kubeconfig users per cluster so client credential caches never mix clusters', () => {
    const names = [cp.hub, cp.members.east!].map((c) => c.kubeConfigFor('controller').getCurrentUser()?.name);
    expect(names).toEqual(['hub-controller', 'east-controller']);
  });

  it('installs a CRD and returns only once custom objects can be created', async () => {
    const [crd] = await cp.members.east!.installCrds([WIDGET_CRD]);
    const created = await cp.members
      .east!.adminKubeConfig()
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({
        group: 'testkit.mco.dev',
        version: 'v1',
        namespace: 'default',
        plural: 'widgets',
        body: { apiVersion: 'testkit.mco.dev/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 2 } },
      });
    expect({
      established: crd?.status?.conditions?.find((c) => c.type === 'Established')?.status,
      spec: (created as { spec: unknown }).spec,
    }).toEqual({ established: 'True', spec: { size: 2 } });
  });

  it('ends watches after about minRequestTimeoutSeconds, so clients must reconnect', async () => {
    const started = Date.now();
    const ended = await new Promise<unknown>((resolve) => {
      void new Watch(cp.hub.adminKubeConfig()).watch(
        '/api/v1/namespaces/default/configmaps',
        {},
        () => undefined,
        (error: unknown) => resolve(error ?? null),
      );
    });
    const seconds = (Date.now() - started) / 1000;
    expect({ ended, withinBound: seconds < 10 }).toEqual({ ended: null, withinBound: true });
  });

  it('restarts an apiserver on the same address and CA, keeping its data', async () => {
    const east = cp.members.east!;
    const kc = east.adminKubeConfig(); // built before the restart, used after it
    const before = { server: east.server, caData: east.caData };
    const started = Date.now();
    await east.restart();
    console.log(`apiserver restart took ${Date.now() - started} ms`);
    const widgets = (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: 'testkit.mco.dev',
      version: 'v1',
      namespace: 'default',
      plural: 'widgets',
    })) as {
      items: { metadata: { name: string } }[];
    };
    expect({
      server: east.server,
      caData: east.caData,
      running: east.isRunning(),
      widgets: widgets.items.map((w) => w.metadata.name),
    }).toEqual({ ...before, running: true, widgets: ['w'] });
  });

  it('refuses requests while a crashed apiserver is down and serves again after start', async () => {
    const east = cp.members.east!;
    const api = east.adminKubeConfig().makeApiClient(CoreV1Api);
    await east.stop({ kill: true });
    const whileDown = await api.listNamespace().then(
      () => 'served',
      () => 'refused',
    );
    await east.start();
    const afterStart = await api.listNamespace().then(
      (list) => list.items.map((n) => n.metadata?.name).includes('default'),
      () => false,
    );
    expect({ whileDown, afterStart }).toEqual({ whileDown: 'refused', afterStart: true });
  });
});

describeWithControlPlane('control plane teardown', () => {
  it('stop() kills every process and removes the temp dir', async () => {
    const cp = await startControlPlane({ clusters: ['west'] });
    const running = processesMentioning(cp.dir).length;
    await cp.stop();
    await cp.stop(); // idempotent
    const gone = await eventually(() => processesMentioning(cp.dir).length === 0, 3_000);
    // etcd + 2 apiservers + the watchdog (its argv names the dir too)
    expect({ running, gone, dirExists: existsSync(cp.dir) }).toEqual({ running: 4, gone: true, dirExists: false });
  });

  it('fails with the end of the server log, and cleans up, when an apiserver cannot start', async () => {
    const before = new Set(readdirSync(tmpdir()).filter((f) => f.startsWith('mco-testkit-')));
    const error = await startControlPlane({ extraApiserverFlags: ['--no-such-flag'] }).then(
      () => 'started',
      (e: Error) => e.message,
    );
    // Other test processes may create control planes meanwhile: look for this one's log only.
    const leftover = readdirSync(tmpdir())
      .filter((f) => f.startsWith('mco-testkit-') && !before.has(f))
      .filter((f) => {
        try {
          return readFileSync(join(tmpdir(), f, 'hub', 'kube-apiserver.log'), 'utf8').includes('--no-such-flag');
        } catch {
          return false;
        }
      });
    expect({
      error: error.split('\n')[0],
      mentionsFlag: error.includes('unknown flag: --no-such-flag'),
      leftover,
    }).toEqual({
      error: 'kube-apiserver "hub" did not become ready; end of its log:',
      mentionsFlag: true,
      leftover: [],
    });
  });

  it('kills the servers and removes the temp dir when the test process is SIGKILLed without stop()', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/start-and-hang.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const dir = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const line = out.split('\n').find((l) => l.startsWith('DIR '));
        if (line) resolve(line.slice(4).trim());
      });
      child.on('exit', (code) => reject(new Error(`fixture exited early (${code})`)));
    });
    const running = processesMentioning(dir).length;
    child.kill('SIGKILL'); // no exit hook runs: only the watchdog can clean up
    const gone = await eventually(() => processesMentioning(dir).length === 0 && !existsSync(dir), 5_000);
    expect({ running, gone }).toEqual({ running: 3, gone: true });
  });
});

describeWithControlPlane(
  'the third-party CRDs the tests install',
  { tools: ['argocd', 'flux', 'flux-operator', 'helm-controller-crds'] },
  () => {
    it('installs every one of them, the 1.4 MB Argo CD ApplicationSet CRD included, with its schema intact', async () => {
      const cp = await startControlPlane();
      try {
        const names = Object.keys(THIRD_PARTY_CRDS) as ThirdPartyCrd[];
        const installed = await cp.hub.installCrds(names.map((name) => thirdPartyCrd(name)));
        // Keys client-node has no model for (x-kubernetes-*) must reach the server.
        const reposync = installed.find((c) => c.metadata?.name === 'reposyncs.configsync.gke.io');
        const values = JSON.stringify(reposync?.spec.versions[0]).includes(
          '"x-kubernetes-preserve-unknown-fields":true',
        );
        expect({ crds: installed.map((c) => c.metadata?.name).sort(), preservesUnknownFields: values }).toEqual({
          crds: [
            'applications.argoproj.io',
            'applicationsets.argoproj.io',
            'clusterprofiles.multicluster.x-k8s.io',
            'helmreleases.helm.toolkit.fluxcd.io',
            'kustomizations.kustomize.toolkit.fluxcd.io',
            'multikubernetesclusterplacements.orchestra.multicluster.x-k8s.io',
            'placementdecisions.multicluster.x-k8s.io',
            'reposyncs.configsync.gke.io',
            'resourcesetinputproviders.fluxcd.controlplane.io',
            'resourcesets.fluxcd.controlplane.io',
            'rootsyncs.configsync.gke.io',
          ],
          preservesUnknownFields: true,
        });
      } finally {
        await cp.stop();
      }
    });
  },
);
