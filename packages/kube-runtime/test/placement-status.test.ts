import type { Placement } from '@mco/core';
import { describe, expect, it } from 'vitest';
import { readPlacementStatus } from '../src/index.js';

const cluster = { namespace: 'fleet', name: 'eu-1', state: 'ACTIVE', lastTransitionTime: '2026-01-01T00:00:00Z' };

function placement(status: unknown, generation: number | null = 2): Placement {
  return {
    metadata: { namespace: 'team-a', name: 'web', ...(generation === null ? {} : { generation }) },
    ...(status === undefined ? {} : { status }),
  } as Placement;
}

describe('readPlacementStatus: "no information" is the same for every adapter', () => {
  it.each([
    { name: 'no status', status: undefined, why: 'Absent', reason: 'placement team-a/web has no status yet' },
    { name: 'a null status', status: null, why: 'Absent', reason: 'placement team-a/web has no status yet' },
    {
      name: 'a status the controller never stamped (no observedGeneration)',
      status: { clusters: [cluster] },
      why: 'Absent',
      reason: 'placement team-a/web: status.observedGeneration is missing',
    },
    {
      name: 'an empty status (cleared)',
      status: {},
      why: 'Absent',
      reason: 'placement team-a/web: status.observedGeneration is missing',
    },
    {
      name: 'clusters that are not a list',
      status: { observedGeneration: 2, clusters: 'eu-1' },
      why: 'Invalid',
      reason: 'placement team-a/web: status.clusters: Invalid input: expected array, received string',
    },
    {
      name: 'a cluster with an unknown state',
      status: { observedGeneration: 2, clusters: [{ ...cluster, state: 'GONE' }] },
      why: 'Invalid',
    },
    {
      name: 'a negative observedGeneration',
      status: { observedGeneration: -1, clusters: [] },
      why: 'Invalid',
    },
    {
      name: 'a listed cluster without a namespace',
      status: { observedGeneration: 2, clusters: [{ ...cluster, namespace: undefined }] },
      why: 'Invalid',
      reason: 'placement team-a/web: status.clusters[0].namespace is missing',
    },
  ])('$name: no information', ({ status, why, reason }) => {
    const reading = readPlacementStatus(placement(status));
    expect(reading).toMatchObject({ ok: false, why });
    if (reason) expect(reading).toMatchObject({ reason });
  });

  it.each([
    { name: 'observed the current generation', status: { observedGeneration: 2, clusters: [cluster] }, lagging: false },
    {
      name: 'a lagging observedGeneration still serves the last clusters',
      status: { observedGeneration: 1, clusters: [cluster] },
      lagging: true,
    },
    {
      name: 'no metadata.generation (not from an API server)',
      status: { observedGeneration: 1, clusters: [cluster] },
      generation: null,
      lagging: false,
    },
  ])('$name', ({ status, lagging, generation }) => {
    const reading = readPlacementStatus(placement(status, generation === null ? null : 2));
    expect(reading).toEqual({ ok: true, clusters: [cluster], lagging });
  });

  it('an evaluated placement without clusters is information: no clusters', () => {
    expect(readPlacementStatus(placement({ observedGeneration: 2 }))).toEqual({
      ok: true,
      clusters: [],
      lagging: false,
    });
  });
});
