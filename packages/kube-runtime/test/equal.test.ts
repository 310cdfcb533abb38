import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../src/index.js';

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
