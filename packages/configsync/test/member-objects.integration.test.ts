import type { ClusterAccess, MemberClusterClient } from '@mco/cluster-access';
import { KubeClient } from '@mco/kube-runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { memberObjects, MANAGED_BY, type MemberObject } from '../src/index.js';

// The member calls over @mco/kube-runtime's client, on a real kube-apiserver.
// RoleBindings are built in, so this runs without Config Sync's CRDs (the
// delivery suite, which needs them, covers RepoSyncs and RootSyncs).
describeWithControlPlane('memberObjects on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let member: MemberClusterClient;

  beforeAll(async () => {
    cp = await startControlPlane();
    const connection = cp.hub.connectionFor('admin');
    const access: ClusterAccess = {
      ...connection,
      cluster: 'fleet/a',
      provider: 'test',
      getToken: async () => (await connection.getCredential()).token,
    };
    member = { cluster: 'fleet/a', access, client: new KubeClient(access) };
    await member.client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
  });
  afterAll(async () => {
    member?.client.close();
    await cp?.stop();
  });

  it('applies a RoleBinding as mco, reads it back, deletes it with a uid precondition, and is quiet when it is gone', async () => {
    const objects = memberObjects(member, 10_000);
    const ref = { kind: 'RoleBinding' as const, namespace: 'ns', name: 'mco-sync' };
    const binding: MemberObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: {
        name: 'mco-sync',
        namespace: 'ns',
        labels: { 'app.kubernetes.io/managed-by': MANAGED_BY },
        annotations: {},
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'reconciler', namespace: 'ns' }],
    };
    const applied = await objects.apply(binding);
    const read = await objects.get(ref);
    const staleDelete = await objects.delete(ref, 'not-its-uid').catch((e: { code?: number }) => e.code);
    await objects.delete(ref, applied.metadata?.uid);
    const afterDelete = await objects.get(ref);
    await objects.delete(ref, applied.metadata?.uid);
    const managers = (read?.metadata as { managedFields?: { manager: string }[] } | undefined)?.managedFields?.map(
      (f) => f.manager,
    );
    expect({ uid: read?.metadata?.uid === applied.metadata?.uid, managers, staleDelete, afterDelete }).toEqual({
      uid: true,
      managers: [MANAGED_BY],
      staleDelete: 409,
      afterDelete: undefined,
    });
  });
});
