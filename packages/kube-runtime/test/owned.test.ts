import { describe, expect, it } from 'vitest';
import {
  APPLIED_DIGEST_ANNOTATION,
  contains,
  digestOf,
  planOwnedObjects,
  type DesiredObject,
  type KubeObject,
} from '../src/index.js';

const object = (name: string, data: Record<string, string>): DesiredObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'flux-system', labels: { owner: 'test' } },
  data,
});

/** What the API server returns after applying `o`: the stamped object plus server fields. */
const stored = (o: DesiredObject, extra: Record<string, unknown> = {}): KubeObject => ({
  ...o,
  metadata: {
    ...o.metadata,
    uid: `uid-${o.metadata.name}`,
    resourceVersion: '7',
    annotations: { ...o.metadata.annotations, [APPLIED_DIGEST_ANNOTATION]: digestOf(o) },
  },
  ...extra,
});

describe('planOwnedObjects', () => {
  it('applies missing objects, stamped with the digest of what was asked', () => {
    const plan = planOwnedObjects({ desired: [object('a', { x: '1' })], existing: [], mayPrune: () => true });
    expect(plan.apply).toHaveLength(1);
    expect(plan.apply[0]!.metadata.annotations?.[APPLIED_DIGEST_ANNOTATION]).toBe(digestOf(object('a', { x: '1' })));
    expect(plan.prune).toEqual([]);
  });

  it('writes nothing when every object is stored as desired (server defaults and status ignored)', () => {
    const a = object('a', { x: '1' });
    const plan = planOwnedObjects({
      desired: [a],
      existing: [stored(a, { status: { ready: true } })],
      mayPrune: () => true,
    });
    expect(plan).toEqual({ apply: [], prune: [], kept: [] });
  });

  it('applies again when a desired field is dropped, which a containment check alone cannot see', () => {
    const before = object('a', { x: '1', y: '2' });
    const after = object('a', { x: '1' });
    const plan = planOwnedObjects({ desired: [after], existing: [stored(before)], mayPrune: () => true });
    expect(plan.apply.map((o) => o.metadata.name)).toEqual(['a']);
  });

  it('applies again when someone changed a field mco owns', () => {
    const a = object('a', { x: '1' });
    const drifted = { ...stored(a), data: { x: 'changed' } };
    expect(planOwnedObjects({ desired: [a], existing: [drifted], mayPrune: () => true }).apply).toHaveLength(1);
  });

  it('prunes only what mayPrune allows and keeps the rest', () => {
    const gone = stored(object('gone', {}));
    const doubtful = stored(object('doubtful', {}));
    const plan = planOwnedObjects({
      desired: [],
      existing: [doubtful, gone],
      mayPrune: (o) => o.metadata?.name === 'gone',
    });
    expect(plan.prune.map((o) => o.metadata?.name)).toEqual(['gone']);
    expect(plan.kept.map((o) => o.metadata?.name)).toEqual(['doubtful']);
  });

  it('leaves an object being deleted alone, and re-applies a desired one only after it is gone', () => {
    const a = object('a', { x: '1' });
    const terminating = {
      ...stored(a),
      metadata: { ...stored(a).metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    };
    expect(planOwnedObjects({ desired: [], existing: [terminating], mayPrune: () => true }).prune).toEqual([]);
    expect(planOwnedObjects({ desired: [a], existing: [terminating], mayPrune: () => true }).apply).toHaveLength(1);
  });
});

describe('contains and digestOf', () => {
  it('contains ignores extra keys but not array length or scalar differences', () => {
    expect(contains({ a: 1, b: { c: 2, d: 3 } }, { b: { c: 2 } })).toBe(true);
    expect(contains({ a: [1, 2] }, { a: [1] })).toBe(false);
    expect(contains({ a: '1' }, { a: 1 })).toBe(false);
    expect(contains([1], { 0: 1 })).toBe(false);
  });

  it('digestOf ignores key order and undefined values', () => {
    expect(digestOf({ a: 1, b: { c: 2, d: undefined } })).toBe(digestOf({ b: { c: 2 }, a: 1 }));
    expect(digestOf({ a: 1 })).not.toBe(digestOf({ a: 2 }));
  });
});
