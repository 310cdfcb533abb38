import { describe, expect, it } from 'vitest';
import { holdStatus, jsonEqual, REASON_NO_SIGNAL_SOURCE } from '../src/index.js';

describe('jsonEqual', () => {
  it.each([
    {
      name: 'objects are equal whatever the key order',
      a: { x: 1, y: [1, { z: 2 }] },
      b: { y: [1, { z: 2 }], x: 1 },
      equal: true,
    },
    { name: 'an undefined value counts as absent', a: { x: 1, y: undefined }, b: { x: 1 }, equal: true },
    { name: 'array order matters', a: [1, 2], b: [2, 1], equal: false },
    {
      name: 'a nested difference is found',
      a: { c: [{ state: 'ACTIVE' }] },
      b: { c: [{ state: 'EVICTING' }] },
      equal: false,
    },
    { name: 'null differs from an object', a: { x: null }, b: { x: {} }, equal: false },
    { name: 'an array differs from an object with index keys', a: ['a'], b: { 0: 'a' }, equal: false },
    { name: 'numbers and strings differ', a: { n: 1 }, b: { n: '1' }, equal: false },
  ])('$name', ({ a, b, equal }) => {
    expect({ ab: jsonEqual(a, b), ba: jsonEqual(b, a) }).toEqual({ ab: equal, ba: equal });
  });
});

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
