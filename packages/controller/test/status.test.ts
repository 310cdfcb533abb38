import { describe, expect, it } from 'vitest';
import { jsonEqual } from '@mco/kube-runtime';
import { REASON_NO_SIGNAL_SOURCE, REASON_UNKNOWN_SIGNAL_SOURCE } from '../src/index.js';
import { sortSignalErrors, withoutSignalSource } from '../src/reconciler.js';

describe('withoutSignalSource', () => {
  const listed = [
    { name: 'a', namespace: 'fleet', state: 'ACTIVE' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
  ];
  const missing = { reason: REASON_NO_SIGNAL_SOURCE, message: 'no capacity-signal source is configured' };
  const engineSatisfied = (status: 'True' | 'False', reason: string) => ({
    type: 'Satisfied',
    status,
    reason,
    message: '1 of 1 required cluster(s) are ACTIVE and below their capacity ceiling',
    lastTransitionTime: '2026-02-01T00:00:00Z',
  });

  it("turns the engine's Satisfied=True into Unknown naming the missing source, and keeps the clusters", () => {
    expect(
      withoutSignalSource(
        { clusters: listed, conditions: [engineSatisfied('True', 'HeadroomAvailable')] },
        {},
        missing,
        new Date('2026-02-01T00:00:00Z'),
      ),
    ).toEqual({
      clusters: listed,
      conditions: [
        {
          type: 'Satisfied',
          status: 'Unknown',
          reason: 'NoSignalSource',
          message:
            'placed on 1 ACTIVE cluster(s), up to minClustersBelowCapacityCeiling; it cannot scale out or in: no capacity-signal source is configured',
          lastTransitionTime: '2026-02-01T00:00:00Z',
        },
      ],
    });
  });

  it('keeps an engine verdict of False and adds the missing source to its message', () => {
    const status = withoutSignalSource(
      { clusters: [], conditions: [engineSatisfied('False', 'NoEligibleClusters')] },
      {},
      { reason: REASON_UNKNOWN_SIGNAL_SOURCE, message: 'capacity-signal source "prom" is not configured' },
      new Date('2026-02-01T00:00:00Z'),
    );
    expect(status.conditions?.[0]).toEqual({
      ...engineSatisfied('False', 'NoEligibleClusters'),
      message:
        '1 of 1 required cluster(s) are ACTIVE and below their capacity ceiling; capacity-signal source "prom" is not configured',
    });
  });

  it('is a fixed point: the transition time comes from the previous status, so nothing is written again', () => {
    const first = withoutSignalSource(
      { clusters: listed, conditions: [engineSatisfied('True', 'HeadroomAvailable')] },
      {},
      missing,
      new Date('2026-02-01T00:00:00Z'),
    );
    // The engine sees the previous Unknown and reports a fresh transition to True.
    const engineAgain = {
      clusters: listed,
      conditions: [{ ...engineSatisfied('True', 'HeadroomAvailable'), lastTransitionTime: '2026-03-01T00:00:00Z' }],
    };
    const second = withoutSignalSource(engineAgain, first, missing, new Date('2026-03-01T00:00:00Z'));
    expect(jsonEqual(first, second)).toBe(true);
  });
});

describe('sortSignalErrors', () => {
  it('orders by cluster, code and message whatever the order the observations finished in', () => {
    const errors = [
      { cluster: 'fleet/c', code: 'Timeout' as const, message: 'x' },
      { cluster: 'fleet/a', code: 'Unavailable' as const, message: 'b' },
      { cluster: 'fleet/a', code: 'NotFound' as const, message: 'z' },
      { cluster: 'fleet/a', code: 'Unavailable' as const, message: 'a' },
    ];
    const expected = [errors[2], errors[3], errors[1], errors[0]];
    expect(sortSignalErrors(errors)).toEqual(expected);
    expect(sortSignalErrors([...errors].reverse())).toEqual(expected);
  });
});
