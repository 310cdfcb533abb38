import { describe, expect, it } from 'vitest';
import { WriteOverlay, type KubeObject } from '../src/index.js';

const copy = (resourceVersion: string, data: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'n', resourceVersion },
  data: { v: data },
});

/** What `resolve` serves for each state of the cache, in order (undefined: no object). */
const served = (overlay: WriteOverlay<KubeObject>, states: (KubeObject | undefined)[]) =>
  states.map((cached) => overlay.resolve('n/c', cached)?.data);

describe('WriteOverlay', () => {
  it('serves our write while the cache holds the version it replaced, and the cache once it moved', () => {
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', copy('5', 'ours'));
    expect(served(overlay, [copy('3', 'old'), copy('5', 'ours'), copy('3', 'old')])).toEqual([
      { v: 'ours' },
      { v: 'ours' },
      // Gone once the cache showed the write: a copy it shows later is the cache's.
      { v: 'old' },
    ]);
    expect(overlay.size).toBe(0);
  });

  it('serves the newest of two writes while the cache shows the base or the first of them', () => {
    // The second write was made on the overlay's copy (version 5), the cache still at 3.
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', copy('5', 'first'));
    overlay.set('n/c', '5', copy('7', 'second'));
    expect(served(overlay, [copy('3', 'base'), copy('5', 'first'), copy('7', 'second')])).toEqual([
      { v: 'second' },
      { v: 'second' },
      { v: 'second' },
    ]);
    expect(overlay.size).toBe(0);
  });

  it('chains a write whose base was read from the cache while the overlay served our copy', () => {
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', copy('5', 'first'));
    overlay.set('n/c', '3', copy('7', 'second'));
    expect(served(overlay, [copy('5', 'first'), copy('3', 'base')])).toEqual([
      { v: 'second' },
      // The cache showed 5: it cannot go back to 3; a 3 now is not one of ours to hide.
      { v: 'base' },
    ]);
  });

  it('gives way to a version that is not one of ours, and to a deletion by someone else', () => {
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', copy('5', 'first'));
    overlay.set('n/c', '5', copy('7', 'second'));
    expect(served(overlay, [copy('9', 'theirs')])).toEqual([{ v: 'theirs' }]);

    overlay.set('n/c', undefined, copy('5', 'created'));
    overlay.set('n/c', '5', copy('7', 'updated'));
    // The cache showed our create, then the object deleted: not our write, whatever came between.
    expect(served(overlay, [undefined, copy('5', 'created'), undefined])).toEqual([
      { v: 'updated' },
      { v: 'updated' },
      undefined,
    ]);
  });

  it('serves a deletion, and a create after it, until the cache shows them', () => {
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', null);
    expect(served(overlay, [copy('3', 'old')])).toEqual([undefined]);
    overlay.set('n/c', '3', copy('8', 'again'));
    expect(served(overlay, [copy('3', 'old'), undefined, copy('8', 'again')])).toEqual([
      { v: 'again' },
      { v: 'again' },
      { v: 'again' },
    ]);
    expect(overlay.size).toBe(0);
  });

  it('is cleared by observe as the cache moves, as resolve would', () => {
    const overlay = new WriteOverlay<KubeObject>();
    overlay.set('n/c', '3', copy('5', 'ours'));
    overlay.observe('n/c', copy('3', 'old'));
    expect(overlay.keys()).toEqual(['n/c']);
    overlay.observe('n/c', copy('6', 'theirs'));
    expect(overlay.keys()).toEqual([]);
  });
});
