import { describe, expect, it } from 'vitest';
import { decide } from '../src/index.js';
import { aClusterProfile, aPlacement, anAutoscalingSpec } from '../src/testing/index.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b')];
const placed = {
  clusters: [{ name: 'a', namespace: 'fleet', state: 'ACTIVE' as const, lastTransitionTime: '2025-12-31T00:00:00Z' }],
};

/** The Valid condition and the clusters after one evaluation of a placement in namespace "team-a". */
function evaluate(workloadDetails: object, requireWorkloadInPlacementNamespace = true) {
  const spec = anAutoscalingSpec(1, { workloadDetails } as never, { rules: [{ type: 'all-clusters' }] });
  const { status } = decide({
    now: NOW,
    placement: aPlacement('team-a/web', spec, placed),
    clusterProfiles: fleet,
    requireWorkloadInPlacementNamespace,
  });
  const valid = status.conditions?.find((c) => c.type === 'Valid');
  return { valid: `${valid?.status}/${valid?.reason}: ${valid?.message}`, clusters: status.clusters };
}

describe('workload names and namespaces (tenant isolation)', () => {
  it.each([
    [
      'a namespace with ".."',
      { namespace: '..', deploymentName: 'web', hpaName: 'web' },
      'namespace',
      '".." must be a DNS-1123 label',
    ],
    [
      'a namespace with a slash',
      { namespace: 'a/b', deploymentName: 'web', hpaName: 'web' },
      'namespace',
      '"a/b" must be a DNS-1123 label',
    ],
    [
      'an upper-case Deployment',
      { namespace: 'team-a', deploymentName: 'Web', hpaName: 'web' },
      'deploymentName',
      '"Web" must be a DNS-1123 subdomain',
    ],
    [
      'an HPA name over 253 characters',
      { namespace: 'team-a', deploymentName: 'web', hpaName: 'h'.repeat(254) },
      'hpaName',
      `"${'h'.repeat(80)}"… must be a DNS-1123 subdomain`,
    ],
  ])('%s makes the spec invalid, names the field, and keeps the clusters', (_name, details, field, message) => {
    const result = evaluate(details);
    expect(result.valid).toMatch(
      new RegExp(`^False/InvalidWorkloadName: spec\\.scaling\\.autoscaleForCapacity\\.workloadDetails\\.${field}: `),
    );
    expect(result.valid).toContain(message);
    expect(result.clusters).toEqual(placed.clusters);
  });

  it('refuses a workload in another namespace unless the hub allows it', () => {
    const details = { namespace: 'team-b', deploymentName: 'web', hpaName: 'web' };
    expect({ isolated: evaluate(details), trusted: evaluate(details, false).valid }).toEqual({
      isolated: {
        valid:
          'False/CrossNamespaceWorkload: spec.scaling.autoscaleForCapacity.workloadDetails.namespace: "team-b" is not the placement\'s namespace "team-a"; a placement may only name a workload in its own namespace',
        clusters: placed.clusters,
      },
      trusted: expect.stringMatching(/^True\//),
    });
  });

  it("accepts the placement's own namespace, dotted names, and no namespace at all", () => {
    expect([
      evaluate({ namespace: 'team-a', deploymentName: 'web.v2', hpaName: 'web-hpa' }).valid,
      evaluate({ deploymentName: 'web', hpaName: 'web' }).valid,
    ]).toEqual([expect.stringMatching(/^True\//), expect.stringMatching(/^True\//)]);
  });
});
