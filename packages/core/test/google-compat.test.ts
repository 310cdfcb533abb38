import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadYamlObjects, thirdPartyCrd } from '@mco/testkit';
import { decide, PlacementSpecSchema, PlacementStatusSchema } from '@mco/core';
import { arbitraryFromSchema, type CrdSchema } from './integration/schema-arbitrary.js';

// Whatever Google's v0.2.0 CRD admits, the engine must read: a spec that the
// apiserver stored but zod rejected would freeze a placement as InvalidSpec.
describe("the engine reads every object Google's v0.2.0 CRD admits", () => {
  const schema = () => {
    const [crd] = loadYamlObjects(
      thirdPartyCrd('reference-mco-v0.2.0_multikubernetesclusterplacements.yaml'),
    ) as unknown as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: CrdSchema; status: CrdSchema } } } }[] };
    }[];
    return crd!.spec.versions[0]!.schema.openAPIV3Schema.properties;
  };

  it('parses generated specs and statuses with the zod schemas', () => {
    const { spec, status } = schema();
    fc.assert(
      fc.property(arbitraryFromSchema(spec, 'spec'), arbitraryFromSchema(status, 'status'), (s, st) => {
        const specResult = PlacementSpecSchema.safeParse(s);
        expect(specResult.error?.issues ?? []).toEqual([]);
        const statusResult = PlacementStatusSchema.safeParse(st);
        expect(statusResult.error?.issues ?? []).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('never reports such a spec as InvalidSpec (only semantic reasons such as an unknown operator)', () => {
    const { spec } = schema();
    fc.assert(
      fc.property(arbitraryFromSchema(spec, 'spec'), (s) => {
        const d = decide({
          now: new Date('2026-01-01T00:00:00Z'),
          placement: { metadata: { name: 'p' }, spec: s },
          clusterProfiles: [],
        });
        expect(d.status.conditions?.find((c) => c.type === 'Valid')?.reason).not.toBe('InvalidSpec');
      }),
      { numRuns: 300 },
    );
  });
});
