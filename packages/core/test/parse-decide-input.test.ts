import { describe, expect, it } from 'vitest';
import { decide, DecisionInputSchema, parseDecideInput } from '@mco/core';

// A document as `mco decide -f` reads it: `now` is an RFC 3339 string.
const document = {
  now: '2026-01-01T00:00:00Z',
  placement: {
    metadata: { name: 'web', namespace: 'default' },
    spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/eu-' } }] },
  },
  clusterProfiles: [
    { metadata: { name: 'eu-1', namespace: 'fleet' } },
    { metadata: { name: 'us-1', namespace: 'fleet' } },
  ],
};

describe('parseDecideInput', () => {
  it('returns what decide takes: now as a Date, the rest as the schema parsed it', () => {
    const input = parseDecideInput(document);
    expect(input.now).toEqual(new Date('2026-01-01T00:00:00Z'));
    expect(input.signals).toEqual([]);
    const { status } = decide(input);
    expect(status.clusters?.map((c) => [`${c.namespace}/${c.name}`, c.state])).toEqual([['fleet/eu-1', 'ACTIVE']]);
    expect(decide(input)).toEqual(decide({ ...input, now: new Date(document.now) }));
  });

  it('keeps the schema a plain document schema (now stays a string there)', () => {
    expect(typeof DecisionInputSchema.parse(document).now).toBe('string');
  });

  it('names the field of an invalid document', () => {
    let thrown: unknown;
    try {
      parseDecideInput({ ...document, now: 'yesterday' });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { issues: { path: unknown[] }[] }).issues.map((i) => i.path)).toContainEqual(['now']);
  });
});
