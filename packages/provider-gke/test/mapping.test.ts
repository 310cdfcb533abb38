import { describe, expect, it } from 'vitest';
import { planFleet, planMembership, type MappingOptions } from '../src/index.js';
import { aMembership } from './gke-hub-server.js';

const options: MappingOptions = {
  namespace: 'fleet',
  project: 'my-project',
  monitoringEndpoint: 'https://monitoring.googleapis.com',
  copyLabels: true,
};

const gateway = (location: string, id: string, host = `https://${location}-connectgateway.googleapis.com`) =>
  `${host}/v1/projects/123456789012/locations/${location}/gkeMemberships/${id}`;

describe('planMembership', () => {
  it('a READY GKE membership becomes a profile shaped like Google managed sync', () => {
    expect(
      planMembership(aMembership('training-us-w4', 'us-west4', { labels: { kueue: 'worker-cluster' } }), options),
    ).toEqual({
      action: 'apply',
      key: 'fleet/training-us-w4-us-west4',
      profile: {
        namespace: 'fleet',
        name: 'training-us-w4-us-west4',
        displayName: 'training-us-w4(us-west4)',
        labels: { kueue: 'worker-cluster' },
        annotations: {
          'fleet.gke.io/clusterName': 'projects/my-project/locations/us-west4/clusters/training-us-w4',
          'fleet.gke.io/membershipName': 'projects/123456789012/locations/us-west4/memberships/training-us-w4',
          'fleet.gke.io/metricsEndpoint':
            'https://monitoring.googleapis.com/v1/projects/my-project/location/global/prometheus',
          'gateway.gke.io/endpoint': gateway('us-west4', 'training-us-w4'),
        },
        status: {
          accessProviders: [{ name: 'google', cluster: { server: gateway('us-west4', 'training-us-w4') } }],
          conditions: [{ type: 'Joined', status: 'True', reason: 'Joined', message: '' }],
          version: { kubernetes: 'v1.34.1-gke.3355000' },
        },
      },
    });
  });

  it.each([
    [
      'a global membership uses the global Connect Gateway host',
      aMembership('a', 'global'),
      {},
      gateway('global', 'a', 'https://connectgateway.googleapis.com'),
    ],
    [
      'a configured Connect Gateway endpoint replaces every host',
      aMembership('a', 'europe-west1'),
      { connectGatewayEndpoint: 'https://gateway.internal.example/' },
      gateway('europe-west1', 'a', 'https://gateway.internal.example'),
    ],
  ])('%s', (_name, membership, extra, expected) => {
    const plan = planMembership(membership, { ...options, ...extra });
    expect(plan.action === 'apply' && plan.profile.status?.accessProviders).toEqual([
      { name: 'google', cluster: { server: expected } },
    ]);
  });

  it.each([
    [
      'a missing cluster is kept but marked not Joined and unhealthy',
      aMembership('gone', 'us-east1', { clusterMissing: true }),
      'ClusterMissing',
      undefined,
    ],
    [
      'a DELETING membership updates an existing profile to not Joined and never creates one',
      aMembership('leaving', 'us-east1', { state: 'DELETING' }),
      'MembershipDeleting',
      true,
    ],
  ])('%s', (_name, membership, reason, updateOnly) => {
    const plan = planMembership(membership, options);
    expect(
      plan.action === 'apply' && {
        conditions: plan.profile.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
        updateOnly: plan.profile.updateOnly,
      },
    ).toEqual({
      conditions: [
        ['Joined', 'False', reason],
        ['ControlPlaneHealthy', 'False', reason],
      ],
      updateOnly,
    });
  });

  it.each([
    ['a CREATING membership retains, never creates', 'CREATING', 'MembershipCreating'],
    ['an unspecified state retains', 'CODE_UNSPECIFIED', 'UnknownState'],
    ['a state unknown to this version retains', 'SOMETHING_NEW', 'UnknownState'],
  ])('%s', (_name, state, reason) => {
    const plan = planMembership(aMembership('m', 'us-east1', { state }), options);
    expect(plan.action === 'retain' && [plan.key, plan.reason.split(':')[0]]).toEqual(['fleet/m-us-east1', reason]);
  });

  it('labels Kubernetes would reject are left out, the manager label is never copied, copyLabels=false copies none', () => {
    const labels = { env: 'prod', odd: '-leading-dash', trailing_: 'x', 'x-k8s.io/cluster-manager': 'evil' };
    const copy = planMembership(aMembership('m', 'us-east1', { labels }), options);
    const none = planMembership(aMembership('m', 'us-east1', { labels }), { ...options, copyLabels: false });
    expect([copy, none].map((p) => p.action === 'apply' && p.profile.labels)).toEqual([{ env: 'prod' }, {}]);
  });

  it('a name that is not projects/*/locations/*/memberships/* throws: its identity is unknown', () => {
    expect(() => planMembership({ name: 'memberships/x' }, options)).toThrow(
      'membership name "memberships/x" is not projects/*/locations/*/memberships/*',
    );
  });

  it('a membership whose profile name would be invalid is skipped', () => {
    const plan = planMembership({ name: 'projects/p/locations/us-east1/memberships/UPPER' }, options);
    expect(plan).toEqual({ action: 'skip', reason: 'InvalidName: UPPER-us-east1 is not a valid ClusterProfile name' });
  });
});

describe('planFleet', () => {
  it('counts states, retains transient and colliding memberships, and lists the profiles to apply', () => {
    const plan = planFleet(
      [
        aMembership('a', 'us-east1'),
        aMembership('b', 'us-east1', { state: 'CREATING' }),
        aMembership('x-y', 'z'),
        aMembership('x', 'y-z'),
        aMembership('c', 'europe-west1', { state: 'DELETING' }),
      ],
      options,
    );
    expect({
      desired: plan.desired.map((d) => `${d.namespace}/${d.name}`),
      retain: plan.retain,
      notes: plan.notes.map((n) => n.reason.split(':')[0]),
      states: plan.states,
    }).toEqual({
      desired: ['fleet/a-us-east1', 'fleet/c-europe-west1'],
      retain: ['fleet/b-us-east1', 'fleet/x-y-z'],
      notes: ['MembershipCreating', 'NameCollision', 'NameCollision'],
      states: { READY: 3, CREATING: 1, DELETING: 1 },
    });
  });
});
