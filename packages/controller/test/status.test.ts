import { describe, expect, it } from 'vitest';
import { jsonEqual } from '@mco/kube-runtime';
import { holdStatus, REASON_NO_SIGNAL_SOURCE } from '../src/index.js';

describe('holdStatus', () => {
  const listed = [
    { name: 'a', namespace: 'fleet', state: 'ACTIVE' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
  ];

  it('keeps the clusters and says why with Satisfied=Unknown', () => {
    expect(
      holdStatus(
        { clusters: listed, lastAdditionTime: '2026-01-01T00:00:00Z' },
        3,
        '2026-02-01T00:00:00Z',
        REASON_NO_SIGNAL_SOURCE,
        'no source',
      ),
    ).toEqual({
      clusters: listed,
      lastAdditionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 3,
      conditions: [
        {
          type: 'Valid',
          status: 'True',
          reason: 'Valid',
          message: 'the spec is valid',
          lastTransitionTime: '2026-02-01T00:00:00Z',
          observedGeneration: 3,
        },
        {
          type: 'Satisfied',
          status: 'Unknown',
          reason: 'NoSignalSource',
          message: 'no source',
          lastTransitionTime: '2026-02-01T00:00:00Z',
          observedGeneration: 3,
        },
      ],
    });
  });

  it('is a fixed point: holding again changes nothing, so nothing is written again', () => {
    const once = holdStatus({ clusters: listed }, 1, '2026-02-01T00:00:00Z', REASON_NO_SIGNAL_SOURCE, 'no source');
    const twice = holdStatus(once, 1, '2026-03-01T00:00:00Z', REASON_NO_SIGNAL_SOURCE, 'no source');
    expect(jsonEqual(once, twice)).toBe(true);
  });
});
