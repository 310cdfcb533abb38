// Issue 42: each component's account may write only what its job needs. The
// table of docs/operations.md ("Accounts: what each component may write") is
// the contract: the chart, rendered with every component on, is applied to a
// real kube-apiserver, which is asked for every row, every other verb and every
// other account whether that account may do it (SubjectAccessReview, as
// `kubectl auth can-i --as`); then the admission table's requests are made with
// each account's own token.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { objectPath, PLACEMENTS, resourcePath, type KubeClient } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  loadYamlObjects,
  renderChart,
  serviceAccountKubeConfig,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { ALL_ON } from './chart-values.js';

vi.setConfig({ testTimeout: 180_000 });

const DOC = fileURLToPath(new URL('../../../docs/operations.md', import.meta.url));
const MKCP_CRD = fileURLToPath(
  new URL('../chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);
const LOCK_NAMESPACE = 'kube-system';
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const KINDS = [
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

interface Row {
  readonly account: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string | undefined;
  readonly verbs: readonly string[];
  /** Undefined: every namespace. */
  readonly namespace: string | undefined;
  readonly names: readonly string[];
}

/** The rows of the table between `<!-- name -->` and `<!-- /name -->`, as cells without backticks. */
function tableRows(name: string): string[][] {
  const text = readFileSync(DOC, 'utf8');
  const body = text.slice(text.indexOf(`<!-- ${name} -->`), text.indexOf(`<!-- /${name} -->`));
  return body
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
}

const accountOf = (cell: string) => cell.replace(/\s*\(.*\)$/, '').replaceAll('`', '');
const list = (cell: string) =>
  cell
    .replaceAll('`', '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const ROWS: readonly Row[] = tableRows('accounts-table').map(([account, resource, verbs, namespace, names]) => {
  const [qualified = '', subresource] = resource!.replaceAll('`', '').split('/');
  const dot = qualified.indexOf('.');
  return {
    account: accountOf(account!),
    group: dot < 0 ? '' : qualified.slice(dot + 1),
    resource: dot < 0 ? qualified : qualified.slice(0, dot),
    subresource,
    verbs: list(verbs!),
    namespace: namespace === 'all' ? undefined : namespace === 'lock' ? LOCK_NAMESPACE : namespace,
    names: list(names ?? ''),
  };
});

interface Probe {
  readonly group: string;
  readonly resource: string;
  readonly subresource: string | undefined;
  readonly namespace: string;
  readonly name: string | undefined;
}

/** RBAC's rule: the verb, resource and namespace match, and a row with names matches only a named request for one. */
const allows = (row: Row, probe: Probe, verb: string) =>
  row.verbs.includes(verb) &&
  row.group === probe.group &&
  row.resource === probe.resource &&
  row.subresource === probe.subresource &&
  (row.namespace === undefined || row.namespace === probe.namespace) &&
  (row.names.length === 0 || (probe.name !== undefined && row.names.includes(probe.name)));

/** Kubernetes grants every authenticated user this (ClusterRole system:basic-user), whatever the chart says. */
const grantedToEveryone = (probe: Probe, verb: string) =>
  verb === 'create' && probe.group === 'authentication.k8s.io' && probe.resource === 'selfsubjectreviews';

describeWithControlPlane(
  'every account of the chart, row by row, on a real kube-apiserver',
  { tools: ['helm'] },
  () => {
    let cp: ControlPlane;
    const clients = new Map<string, KubeClient>();
    const as = (account: string) => clients.get(account)!;

    beforeAll(async () => {
      cp = await startControlPlane();
      await cp.hub.installCrds([MKCP_CRD]);
      await cp.hub.apply(
        [RELEASE_NAMESPACE, 'argocd', 'flux-system', 'team-a'].map((name) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
        })),
      );
      const chart = renderChart(ALL_ON).filter((o: KubernetesObject) => KINDS.includes(o.kind ?? ''));
      await cp.hub.apply(chart);
      for (const account of new Set(ROWS.map((r) => r.account))) {
        clients.set(
          account,
          kubeClientFromKubeConfig(await serviceAccountKubeConfig(cp.hub, RELEASE_NAMESPACE, account)),
        );
      }
    });
    afterAll(async () => {
      await cp?.stop();
    });

    it('the table names every account and every RBAC rule the chart renders', () => {
      const accounts = renderChart(ALL_ON)
        .filter((o) => o.kind === 'ServiceAccount')
        .map((o) => o.metadata!.name!)
        .sort();
      expect([...new Set(ROWS.map((r) => r.account))].sort()).toEqual(accounts);
    });

    it("the adapters' placement policies compare every status field of the CRD but conditions", () => {
      const crd = loadYamlObjects(MKCP_CRD)[0] as unknown as {
        spec: { versions: { schema: { openAPIV3Schema: { properties: { status: { properties: object } } } } }[] };
      };
      const fields = Object.keys(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.status.properties)
        .filter((f) => f !== 'conditions')
        .sort();
      const policies = renderChart(ALL_ON).filter(
        (o) => o.kind === 'ValidatingAdmissionPolicy' && /placement-(spec|writes)$/.test(o.metadata!.name!),
      );
      const compared = policies.map((p) =>
        [...JSON.stringify(p).matchAll(/object\.status\.(\w+) == oldObject\.status\.\w+/g)].map((m) => m[1]).sort(),
      );
      expect(compared).toEqual(policies.map(() => fields));
    });

    it('each account may do exactly what its rows list: every other verb, resource and account is denied', async () => {
      // Each row's object (with its first name, and with another name), and objects no row grants.
      const probes = new Map<string, Probe>();
      const add = (probe: Probe) => probes.set(JSON.stringify(probe), probe);
      for (const row of ROWS) {
        const base = { group: row.group, resource: row.resource, subresource: row.subresource };
        const namespace = row.namespace ?? 'team-a';
        add({ ...base, namespace, name: undefined });
        if (row.names[0]) add({ ...base, namespace, name: row.names[0] });
        if (row.names.length > 0) add({ ...base, namespace, name: 'other' });
      }
      for (const namespace of [RELEASE_NAMESPACE, 'team-a', LOCK_NAMESPACE]) {
        add({ group: '', resource: 'secrets', subresource: undefined, namespace, name: undefined });
        add({ group: '', resource: 'configmaps', subresource: undefined, namespace, name: undefined });
        add({
          group: 'rbac.authorization.k8s.io',
          resource: 'rolebindings',
          subresource: undefined,
          namespace,
          name: undefined,
        });
      }
      const authz = cp.hub.adminKubeConfig().makeApiClient(AuthorizationV1Api);
      const questions = [...new Set(ROWS.map((r) => r.account))].flatMap((account) =>
        [...probes.values()].flatMap((probe) =>
          // A create names no object: RBAC cannot limit it by name.
          VERBS.filter((verb) => !(verb === 'create' && probe.name)).map((verb) => ({ account, probe, verb })),
        ),
      );
      const mismatches: string[] = [];
      let denied = 0;
      for (let i = 0; i < questions.length; i += 32) {
        await Promise.all(
          questions.slice(i, i + 32).map(async ({ account, probe, verb }) => {
            const review = await authz.createSubjectAccessReview({
              body: {
                spec: {
                  user: `system:serviceaccount:${RELEASE_NAMESPACE}:${account}`,
                  groups: [
                    'system:serviceaccounts',
                    `system:serviceaccounts:${RELEASE_NAMESPACE}`,
                    'system:authenticated',
                  ],
                  resourceAttributes: {
                    verb,
                    group: probe.group,
                    resource: probe.resource,
                    namespace: probe.namespace,
                    ...(probe.subresource ? { subresource: probe.subresource } : {}),
                    ...(probe.name ? { name: probe.name } : {}),
                  },
                },
              },
            });
            const expected =
              ROWS.some((row) => row.account === account && allows(row, probe, verb)) || grantedToEveryone(probe, verb);
            if (!review.status!.allowed) denied++;
            if (review.status!.allowed !== expected) {
              mismatches.push(
                `${account} ${verb} ${probe.resource}${probe.group ? `.${probe.group}` : ''}${probe.subresource ? `/${probe.subresource}` : ''}${probe.name ? `/${probe.name}` : ''} in ${probe.namespace}: ${review.status!.allowed ? 'allowed' : 'denied'}, the table says ${expected ? 'allowed' : 'denied'}`,
              );
            }
          }),
        );
      }
      console.log(`${questions.length} questions to the API server, ${denied} denied`);
      expect(mismatches).toEqual([]);
    });

    it("each row of the admission table, as that account's own request", async () => {
      const placement = objectPath(PLACEMENTS, 'team-a', 'web');
      const status = objectPath(PLACEMENTS, 'team-a', 'web', 'status');
      const admin = kubeClientFromKubeConfig(cp.hub.adminKubeConfig());
      const condition = (type: string, value = 'True') => ({
        type,
        status: value,
        reason: 'Test',
        message: 'set by the test',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      });
      await admin.create(resourcePath(PLACEMENTS, 'team-a'), {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name: 'web', namespace: 'team-a', finalizers: ['other.example/keep'], annotations: { a: 'b' } },
        spec: {},
      });
      await admin.patch(status, 'merge', {
        status: {
          observedGeneration: 1,
          clusters: [{ name: 'east', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: '2026-01-01T00:00:00Z' }],
          conditions: [condition('Valid')],
        },
      });
      const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
      const lease = (name: string) => ({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: LOCK_NAMESPACE },
        spec: {},
      });
      const createLease = (account: string, name: string) =>
        as(account).create(resourcePath(LEASES, LOCK_NAMESPACE), lease(name));
      let specChanges = 0;
      const requests: Record<string, (account: string) => Promise<unknown>> = {
        // A new value each time: a patch that changes nothing is no change to refuse.
        "change a placement's spec": (a) =>
          as(a).patch(placement, 'merge', {
            spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 + (++specChanges % 50) } } },
          }),
        "change a placement's labels": (a) => as(a).patch(placement, 'merge', { metadata: { labels: { x: 'y' } } }),
        'set its annotation configsync.mco.x-k8s.io/delivered': (a) =>
          as(a).patch(placement, 'merge', { metadata: { annotations: { 'configsync.mco.x-k8s.io/delivered': '[]' } } }),
        'change another annotation of a placement': (a) =>
          as(a).patch(placement, 'merge', { metadata: { annotations: { a: 'changed' } } }),
        'add its finalizer configsync.mco.x-k8s.io/cleanup': (a) =>
          as(a).patch(placement, 'merge', {
            metadata: { finalizers: ['other.example/keep', 'configsync.mco.x-k8s.io/cleanup'] },
          }),
        "remove another component's finalizer": (a) =>
          as(a).patch(placement, 'merge', { metadata: { finalizers: ['configsync.mco.x-k8s.io/cleanup'] } }),
        'change status.clusters': (a) => as(a).patch(status, 'merge', { status: { clusters: [] } }),
        'set its condition ConfigSyncSynced': (a) =>
          as(a).patch(status, 'merge', { status: { conditions: [condition('Valid'), condition('ConfigSyncSynced')] } }),
        'change another condition': (a) =>
          as(a).patch(status, 'merge', { status: { conditions: [condition('Valid', 'False')] } }),
        'set its condition FluxOrphanedObjects': async (a) =>
          as(a).patch(status, 'merge', {
            status: {
              conditions: [
                ...((await admin.get<{ status: { conditions: object[] } }>(placement)).status.conditions ?? []).filter(
                  (c) => (c as { type: string }).type !== 'FluxOrphanedObjects',
                ),
                condition('FluxOrphanedObjects', 'False'),
              ],
            },
          }),
        'create the Lease mco-configsync': (a) => createLease(a, 'mco-configsync'),
        "create the controller's Lease mco-controller-inventory-loss": (a) =>
          createLease(a, 'mco-controller-inventory-loss'),
        "create the controller's shard Lease mco-controller": (a) => createLease(a, 'mco-controller'),
        'create its Lease mco-controller-inventory-loss': (a) => createLease(a, 'mco-controller-inventory-loss'),
      };
      const rows = tableRows('admission-table').map(([account, request, answer]) => ({
        account: accountOf(account!),
        request: request!.replaceAll('`', ''),
        answer,
      }));
      // The API server loads new policies within a few seconds: wait until each is in force, with
      // probes that change something new each time (a patch that changes nothing is not refused).
      let probe = 0;
      const probes: Record<string, () => Promise<unknown>> = {
        'Config Sync placements': () => requests["change a placement's spec"]!('mco-configsync'),
        'Config Sync Leases': () => createLease('mco-configsync', `probe-${++probe}`),
        'controller Leases': () => createLease('mco', `probe-${++probe}`),
        'Flux placements': () =>
          as('mco-flux').patch(status, 'merge', { status: { observedGeneration: 100 + ++probe } }),
      };
      for (const [policy, request] of Object.entries(probes)) {
        await eventually(
          `the policy of ${policy} in force`,
          () =>
            request().then(
              () => 'allowed',
              (error: { code?: number }) => (error.code === 403 ? 'refused' : 'other'),
            ),
          (answer) => answer === 'refused',
        );
      }
      const answers = [];
      for (const row of rows) {
        const request = requests[row.request];
        if (!request) throw new Error(`no request for the admission-table row "${row.request}"`);
        const answer = await request(row.account).then(
          () => 'allowed',
          (error: { code?: number; message?: string }) => (error.code === 403 ? 'refused' : String(error.message)),
        );
        answers.push({ ...row, answer });
      }
      expect(answers).toEqual(rows);
    });
  },
);
