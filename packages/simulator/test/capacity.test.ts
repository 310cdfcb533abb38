import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  defaultPolicies,
  parseScenario,
  parseScenarioText,
  simulate,
  type PolicyRun,
  type Scenario,
} from '../src/index.js';

// Capacity sources and spread in the simulator (docs/simulator.md, "Capacity sources and spread").
const SCENARIOS = new URL('../../../examples/scenarios/', import.meta.url);

function load(name: string): Scenario {
  const parsed = parseScenarioText(readFileSync(new URL(`${name}.yaml`, SCENARIOS), 'utf8'));
  if (!parsed.ok) throw new Error(`${name}: ${JSON.stringify(parsed.error)}`);
  return parsed.value;
}
const moves = (r: PolicyRun) =>
  r.timeline.flatMap((e) => (e.kind === 'transition' ? [`${e.t} ${e.id} ${e.cluster}`] : []));
const output = ({ samples, summary, status, timeline, placements }: PolicyRun) => ({
  samples,
  summary,
  status,
  timeline,
  placements,
});
const unknownSource = (s: Scenario): Scenario => ({
  ...s,
  capacitySource: { delay: 0, refreshInterval: 60, dropout: 0, unknown: 1, wrong: 0 },
});

describe('mco + capacity source', () => {
  it.each([
    ['gpu-stockout', 7],
    ['region-outage-shared-region', 5],
    ['alternating-stockouts', 2],
  ])('%s (seed %i): a source that always answers unknown gives exactly mco’s run', (name, seed) => {
    const result = simulate(unknownSource(load(name)), { seed, policies: ['mco', 'mco-capacity'] });
    const [mco, capacity] = result.runs;
    expect(capacity!.label).toBe('mco + capacity source');
    expect(output(capacity!)).toEqual(output(mco!));
  });

  it('multi-region-stockout: passes us-east4 over (NoCapacity) and adds us-west1, where mco adds us-east4 first', () => {
    const result = simulate(load('multi-region-stockout'), { seed: 1, policies: ['mco', 'mco-capacity'] });
    const [mco, capacity] = result.runs;
    const added = (r: PolicyRun) =>
      moves(r)
        .filter((m) => m.includes(' P1 '))
        .map((m) => m.split(' ')[2]);
    expect(added(mco!).slice(0, 3)).toEqual(['fleet/us-central1', 'fleet/us-east4', 'fleet/us-west1']);
    expect(added(capacity!).slice(0, 2)).toEqual(['fleet/us-central1', 'fleet/us-west1']);
    const p1 = capacity!.timeline.find((e) => e.kind === 'transition' && e.cluster === 'fleet/us-west1');
    expect(p1).toMatchObject({ kind: 'transition', id: 'P1' });
    expect(p1 && 'reason' in p1 ? p1.reason : '').toContain('(passed over for NoCapacity: fleet/us-east4)');
    const restored = (r: PolicyRun) => r.summary.stockouts[0]!.restoredAfter!;
    expect(restored(capacity!)).toBeLessThan(restored(mco!));
  });

  it('the default policies include it only when the scenario has a capacitySource', () => {
    expect(defaultPolicies(load('multi-region-stockout'))).toContain('mco-capacity');
    const { capacitySource: _c, ...without } = load('multi-region-stockout');
    expect(defaultPolicies(without)).not.toContain('mco-capacity');
  });

  it('a capacitySource out of range is refused, naming the field', () => {
    const parsed = parseScenario({
      name: 'x',
      duration: '1h',
      workload: { capacityPerReplica: 1, hpa: { maxReplicas: 2 } },
      fleet: { clusters: [{ name: 'a', region: 'r' }] },
      placement: { metadata: { name: 'p' }, spec: {} },
      demand: { piecewise: [{ at: 0, value: 1 }] },
      capacitySource: { wrong: 2 },
    });
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.error[0]!.field).toBe('capacitySource.wrong');
  });
});

describe('spread on the shared-region outage', () => {
  it('spread minGroups 2 starts in two regions (us-central1, us-east4) and loses less than the defaults (us-central1, us-central1-b)', () => {
    const defaults = simulate(load('region-outage-min-two'), { seed: 5, policies: ['mco'] }).runs[0]!;
    const spread = simulate(load('region-outage-min-two-spread'), { seed: 5, policies: ['mco'] }).runs[0]!;
    expect(moves(defaults).slice(0, 2)).toEqual(['0 P1 fleet/us-central1', '0 P1 fleet/us-central1-b']);
    expect(moves(spread).slice(0, 2)).toEqual(['0 P1 fleet/us-central1', '0 P1 fleet/us-east4']);
    expect(spread.summary.unservedPercent).toBeLessThan(defaults.summary.unservedPercent);
  });
});
