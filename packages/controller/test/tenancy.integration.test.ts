// Tenant isolation on a shared hub: a team's ServiceAccount may write
// placements in its own namespace only, and through mco it reaches nothing
// beyond it: a workload in another namespace, another team's signal source
// and names that are not Kubernetes names are refused with a clear condition,
// and the clusters stay as they were.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { PLACEMENTS } from '@mco/kube-runtime';
import { beforeAll, expect, it } from 'vitest';
import { FakeSignalSource, describeWithHub, tenantKubeConfig, waitFor } from './support.js';
import { settled, testController, useControllerHub } from './support-controller.js';

const SECRET_TEXT = 'token: sk-live-DO-NOT-LEAK-0123456789';

describeWithHub('tenant isolation through mco (a tenant ServiceAccount on a real kube-apiserver)', () => {
  const env = useControllerHub();
  let tenant: KubeConfig;
  const teamA = new FakeSignalSource();
  const teamB = new FakeSignalSource();

  /** The tenant writes placements with its own token; mco's identity is never lent. */
  const tenantApply = async (name: string, spec: object) => {
    const api = tenant.makeApiClient(CustomObjectsApi);
    const body = {
      apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name, namespace: 'team-a' },
      spec,
    };
    // The controller writes the status meanwhile: a 409 means read again and retry.
    for (let attempt = 1; ; attempt++) {
      try {
        const current = (await api.getNamespacedCustomObject({ ...PLACEMENTS, namespace: 'team-a', name })) as {
          metadata: { resourceVersion: string };
        };
        await api.replaceNamespacedCustomObject({
          ...PLACEMENTS,
          namespace: 'team-a',
          name,
          body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } },
        });
        return;
      } catch (error) {
        const code = (error as { code?: number }).code;
        if (code === 409 && attempt < 10) continue;
        if (code !== 404) throw error;
        await api.createNamespacedCustomObject({ ...PLACEMENTS, namespace: 'team-a', body });
        return;
      }
    }
  };
  const autoscale = (extra: object) => ({
    scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2, ...extra } },
  });
  const workload = (namespace: string) => ({ namespace, deploymentName: 'web', hpaName: 'web' });
  const conditions = async (name: string) => {
    const placement = await env.fleet.placement('team-a', name);
    const list =
      (placement.status as { conditions?: { type: string; status: string; reason: string; message: string }[] })
        ?.conditions ?? [];
    return Object.fromEntries(list.map((c) => [c.type, `${c.status}/${c.reason}: ${c.message}`]));
  };

  beforeAll(async () => {
    for (const ns of ['team-a', 'team-b', 'fleet-t']) await env.fleet.namespace(ns);
    for (const name of ['c1', 'c2', 'c3']) await env.fleet.createProfile('fleet-t', name, { tenancy: 'yes' });
    for (const name of ['c1', 'c2', 'c3']) {
      teamA.set(`fleet-t/${name}`, { hpa: { currentReplicas: 2 } });
      teamB.set(`fleet-t/${name}`, { hpa: { currentReplicas: 2 } });
    }
    // A team's Role: placements in its own namespace, nothing else.
    tenant = await tenantKubeConfig(env.hub, 'team-a');
  });

  it('every cross-namespace attempt is refused with a clear condition, and the clusters stay where they are', async () => {
    const controller = env.start(
      testController(env.hub.controllerKubeConfig(), {
        sources: { 'team-a': teamA, 'team-b': teamB },
        defaultSignalSource: 'team-a',
        signalSourceNamespaces: new Map([
          ['team-a', ['team-a']],
          ['team-b', ['team-b']],
        ]),
      }),
    );
    const rules = { rules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet-t/' } }] };

    // 1. The API server itself: the tenant cannot write placements in another team's namespace.
    const elsewhere = await tenant
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({
        ...PLACEMENTS,
        namespace: 'team-b',
        body: {
          apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
          kind: 'MultiKubernetesClusterPlacement',
          metadata: { name: 'x', namespace: 'team-b' },
          spec: {},
        },
      })
      .then(
        () => 'created',
        (error: { code?: number }) => error.code,
      );

    // 2. A placed workload, then re-pointed at another namespace: invalid, clusters kept.
    await tenantApply('web', { ...rules, ...autoscale({ workloadDetails: workload('team-a') }) });
    const placed = await waitFor('web placed', async () => {
      const states = await env.fleet.states('team-a', 'web');
      return states.length === 2 && states;
    });
    await tenantApply('web', { ...rules, ...autoscale({ workloadDetails: workload('team-b') }) });
    await waitFor('web invalid', async () => (await conditions('web')).Valid?.startsWith('False/'));
    await settled(controller);

    // 3. Names that are not Kubernetes names ("..": a URL parser would fold it into a cluster-wide list).
    await tenantApply('dots', { ...rules, ...autoscale({ workloadDetails: workload('..') }) });
    // 4. Another team's signal source.
    await tenantApply('borrow', {
      ...rules,
      ...autoscale({ signalSource: 'team-b', workloadDetails: workload('team-a') }),
    });
    await waitFor('dots and borrow evaluated', async () => {
      const [dots, borrow] = [await conditions('dots'), await conditions('borrow')];
      return dots.Valid !== undefined && borrow.Satisfied?.includes('SignalSourceNotAllowed');
    });
    await settled(controller);
    const teamBCalls = teamB.calls;

    expect({
      elsewhere,
      web: {
        states: await env.fleet.states('team-a', 'web'),
        valid: (await conditions('web')).Valid,
      },
      dots: (await conditions('dots')).Valid,
      borrow: (await conditions('borrow')).Satisfied,
      teamBSourceCalled: teamBCalls,
    }).toEqual({
      elsewhere: 403,
      web: {
        states: placed,
        valid:
          'False/CrossNamespaceWorkload: spec.scaling.autoscaleForCapacity.workloadDetails.namespace: "team-b" is not the placement\'s namespace "team-a"; a placement may only name a workload in its own namespace',
      },
      dots: 'False/InvalidWorkloadName: spec.scaling.autoscaleForCapacity.workloadDetails.namespace: ".." must be a DNS-1123 label (lowercase letters, digits and "-"), at most 63 characters',
      borrow: expect.stringMatching(
        /^Unknown\/SignalSourceNotAllowed: .*capacity-signal source "team-b" does not serve namespace "team-a" \(its placementNamespaces; usable here: team-a\)$/,
      ),
      teamBSourceCalled: 0,
    });
  });

  it("the status shows a signal error's code, never the source's text", async () => {
    env.start(
      testController(env.hub.controllerKubeConfig(), { sources: { 'team-a': teamA }, defaultSignalSource: 'team-a' }),
    );
    await tenantApply('leaky', {
      rules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet-t/c1$' } }],
      ...autoscale({ minClustersBelowCapacityCeiling: 1, workloadDetails: workload('team-a') }),
    });
    teamA.fail('fleet-t/c1', { code: 'Invalid', message: `kubeconfig line 7: ${SECRET_TEXT}` });
    const observed = await waitFor('SignalsObserved=False', async () => {
      const c = (await conditions('leaky')).SignalsObserved;
      return c?.startsWith('False/') && c;
    });
    teamA.fail('fleet-t/c1', undefined);
    const placement = await env.fleet.placement('team-a', 'leaky');
    expect({ observed, leaked: JSON.stringify(placement).includes('sk-live') }).toEqual({
      observed: 'False/ObserveFailed: fleet-t/c1: Invalid',
      leaked: false,
    });
  });
});
