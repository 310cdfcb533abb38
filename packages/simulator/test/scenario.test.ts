import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  GPU_STOCKOUT_SCENARIO,
  baseDemand,
  demandSeries,
  formatIssues,
  parseDuration,
  parseScenario,
  parseScenarioText,
  type ScenarioIssue,
} from '../src/index.js';

/** A small valid scenario document; tests change one thing at a time. */
function aScenarioDocument(): Record<string, unknown> {
  return {
    name: 'small',
    duration: '1h',
    workload: { capacityPerReplica: 10, hpa: { minReplicas: 2, maxReplicas: 8 } },
    fleet: {
      clusters: [
        { name: 'a', region: 'r1', labels: { gpu: 'l4' } },
        { name: 'b', region: 'r2', labels: { gpu: 'l4' } },
      ],
    },
    placement: {
      metadata: { name: 'p', namespace: 'default' },
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } } },
    },
    demand: { piecewise: [{ at: 0, value: 20 }] },
    events: [],
  };
}

type Doc = ReturnType<typeof aScenarioDocument> & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The issues of a document that must be invalid. */
function issues(doc: unknown): readonly ScenarioIssue[] {
  const result = parseScenario(doc);
  if (result.ok) throw new Error('expected the document to be invalid');
  return result.error;
}

describe('parseScenario', () => {
  it('applies the defaults of every section', () => {
    const result = parseScenario(aScenarioDocument());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const s = result.value;
    expect({
      seed: s.seed,
      start: s.start,
      duration: s.duration,
      tick: s.tick,
      workload: s.workload,
      signals: s.signals,
      cluster: s.fleet.clusters[0],
      namespace: s.fleet.namespace,
    }).toEqual({
      seed: 1,
      start: '2026-01-01T00:00:00Z',
      duration: 3600,
      tick: 30,
      workload: {
        capacityPerReplica: 10,
        unit: 'requests/s',
        podStartup: 120,
        deployDelay: 60,
        removeDelay: 60,
        hpa: { minReplicas: 2, maxReplicas: 8, targetUtilization: 70, scaleDownStabilization: 300, tolerance: 0.1 },
      },
      signals: { failedScaleUpWindow: 600, declareOmission: true },
      cluster: {
        name: 'a',
        region: 'r1',
        labels: { gpu: 'l4' },
        nodePool: {
          podsPerNode: 1,
          minNodes: 0,
          maxNodes: 10,
          scaleUpDelay: 240,
          scaleDownDelay: 600,
          stockoutErrorAfter: 60,
          backoff: 300,
        },
        hpa: { minReplicas: 2, maxReplicas: 8, targetUtilization: 70, scaleDownStabilization: 300, tolerance: 0.1 },
        hpaOverrides: {},
      },
      namespace: 'fleet',
    });
  });

  it('layers node pool and HPA settings: built-in defaults, then the fleet, then the cluster', () => {
    const doc = aScenarioDocument() as Doc;
    doc.fleet.nodePool = { maxNodes: 4, scaleUpDelay: '2m' };
    doc.fleet.clusters[1].nodePool = { maxNodes: 6 };
    doc.fleet.clusters[1].hpa = { maxReplicas: 6 };
    const result = parseScenario(doc);
    if (!result.ok) throw new Error(formatIssues(result.error));
    expect(
      result.value.fleet.clusters.map((c) => [c.nodePool.maxNodes, c.nodePool.scaleUpDelay, c.hpa.maxReplicas]),
    ).toEqual([
      [4, 120, 8],
      [6, 120, 6],
    ]);
  });

  it.each<{ name: string; change: (doc: Doc) => void; issues: ScenarioIssue[] }>([
    {
      name: 'a missing duration is named',
      change: (d) => delete d.duration,
      issues: [
        { field: 'duration', message: 'required: a duration such as 30s, 5m, 2h or 1h30m, or a number of seconds' },
      ],
    },
    {
      name: 'an unreadable duration names the field and shows the expected form',
      change: (d) => (d.tick = 'ten minutes'),
      issues: [
        {
          field: 'tick',
          message: 'expected a duration such as 30s, 5m, 2h or 1h30m, or a number of seconds; got "ten minutes"',
        },
      ],
    },
    {
      name: 'a cluster name that is not a DNS label is named with its index',
      change: (d) => (d.fleet.clusters[0].name = 'US_East'),
      issues: [{ field: 'fleet.clusters[0].name', message: 'expected a DNS label: lowercase letters, digits and -' }],
    },
    {
      name: 'a duplicate cluster name is named',
      change: (d) => (d.fleet.clusters[1].name = 'a'),
      issues: [{ field: 'fleet.clusters[1].name', message: 'duplicate cluster name a' }],
    },
    {
      name: 'a negative GPU-hour price is named with its cluster',
      change: (d) => (d.fleet.clusters[0].gpuHourCost = -1),
      issues: [{ field: 'fleet.clusters[0].gpuHourCost', message: 'Too small: expected number to be >=0' }],
    },
    {
      name: 'an unknown field is named with its parent',
      change: (d) => (d.workload.replicas = 3),
      issues: [{ field: 'workload', message: 'Unrecognized key: "replicas"' }],
    },
    {
      name: 'an HPA whose minimum exceeds its maximum is named per cluster',
      change: (d) => (d.fleet.clusters[0].hpa = { minReplicas: 9 }),
      issues: [{ field: 'fleet.clusters[0].hpa.minReplicas', message: 'exceeds maxReplicas' }],
    },
    {
      name: 'an event of an unknown type names its type field',
      change: (d) => (d.events = [{ at: '1m', type: 'meteor', cluster: 'a' }]),
      issues: [
        {
          field: 'events[0].type',
          message:
            "Invalid discriminator value. Expected 'stockout' | 'recovery' | 'outage' | 'labels' | 'controlPlaneHealthy' | 'signalNoise'",
        },
      ],
    },
    {
      name: 'an event on a cluster that does not exist is named',
      change: (d) => (d.events = [{ at: '1m', type: 'stockout', cluster: 'zz' }]),
      issues: [{ field: 'events[0].cluster', message: 'no cluster named zz in fleet.clusters' }],
    },
    {
      name: 'an event on a region without clusters is named',
      change: (d) => (d.events = [{ at: '1m', type: 'outage', region: 'mars' }]),
      issues: [{ field: 'events[0].region', message: 'no cluster in region mars' }],
    },
    {
      name: 'an event with both a cluster and a region is named',
      change: (d) => (d.events = [{ at: '1m', type: 'stockout', cluster: 'a', region: 'r1' }]),
      issues: [{ field: 'events[0].cluster', message: 'set exactly one of cluster and region' }],
    },
    {
      name: 'an event that ends before it starts is named',
      change: (d) => (d.events = [{ at: '10m', until: '5m', type: 'stockout', cluster: 'a' }]),
      issues: [{ field: 'events[0].until', message: 'must be after at' }],
    },
    {
      name: 'an event after the end of the scenario is named',
      change: (d) => (d.events = [{ at: '2h', type: 'stockout', cluster: 'a' }]),
      issues: [{ field: 'events[0].at', message: 'is after the end of the scenario (duration)' }],
    },
    {
      name: 'a placement field rejected by the MKCP schema is named from placement',
      change: (d) => (d.placement.spec.scaling.autoscaleForCapacity.minClustersBelowCapacityCeiling = 0),
      issues: [
        {
          field: 'placement.spec.scaling.autoscaleForCapacity.minClustersBelowCapacityCeiling',
          message: 'Too small: expected number to be >=1',
        },
      ],
    },
    {
      name: 'a placement the engine cannot evaluate is named from placement',
      change: (d) =>
        (d.placement.spec.clusterSelectorRules = [{ type: 'cluster-name-regex', arguments: { regex: '(' } }]),
      issues: [
        {
          field: 'placement.spec.clusterSelectorRules[0].arguments.regex',
          message: expect.stringContaining('(') as unknown as string,
        },
      ],
    },
    {
      name: 'a demand without a curve is named',
      change: (d) => (d.demand = { noise: { stddev: 0.1 } }),
      issues: [{ field: 'demand', message: 'set piecewise, diurnal or both' }],
    },
    {
      name: 'demand points out of time order are named',
      change: (d) =>
        (d.demand.piecewise = [
          { at: '1h', value: 1 },
          { at: '30m', value: 2 },
        ]),
      issues: [{ field: 'demand.piecewise[1].at', message: 'points must be in time order' }],
    },
  ])('$name', ({ change, issues }) => {
    const doc = aScenarioDocument() as Doc;
    change(doc);
    expect(parseScenario(doc)).toEqual({ ok: false, error: issues });
  });

  it('takes several placements instead of workload, placement and demand; the first one is also the top-level one', () => {
    const doc = aScenarioDocument() as Doc;
    const { workload, placement, demand } = doc;
    const other = {
      workload: { ...workload, hpa: { maxReplicas: 4 } },
      demand,
      placement: { ...placement, metadata: { name: 'q' } },
    };
    delete doc.workload;
    delete doc.placement;
    delete doc.demand;
    doc.fleet.clusters[1].hpa = { minReplicas: 1 };
    doc.placements = [{ workload, placement, demand }, other];
    const result = parseScenario(doc);
    if (!result.ok) throw new Error(formatIssues(result.error));
    const s = result.value;
    expect(s.placements.map((p) => p.placement.metadata.name)).toEqual(['p', 'q']);
    expect(s.placement).toBe(s.placements[0]!.placement);
    expect(s.placements[1]!.workload.hpa).toEqual({
      minReplicas: 1,
      maxReplicas: 4,
      targetUtilization: 70,
      scaleDownStabilization: 300,
      tolerance: 0.1,
    });
    expect(s.fleet.clusters[1]!.hpaOverrides).toEqual({ minReplicas: 1 });
  });

  it('names the field when the two forms are mixed, a placement lacks a part, or two placements share a name', () => {
    const doc = aScenarioDocument() as Doc;
    const { workload, placement, demand } = doc;
    doc.placements = [{ workload, placement, demand }];
    expect(issues(doc)).toEqual([
      { field: 'placements', message: 'set either workload, placement and demand, or placements' },
    ]);
    delete doc.workload;
    delete doc.placement;
    delete doc.demand;
    doc.placements = [
      { workload, placement, demand },
      { workload, placement },
    ];
    expect(issues(doc).map((i) => i.field)).toEqual(['placements[1].demand']);
    doc.placements = [
      { workload, placement, demand },
      { workload, placement, demand: { diurnal: { mean: 1, amplitude: 1, peakAt: 0 } } },
    ];
    expect(issues(doc)).toEqual([
      { field: 'placements[1].placement.metadata.name', message: 'duplicate placement default/p' },
    ]);
    delete doc.placements;
    expect(issues(doc).map((i) => i.field)).toEqual(['placements', 'workload', 'placement', 'demand']);
  });

  it('reports a YAML syntax error on the document', () => {
    const result = parseScenarioText('name: [unclosed');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.map((i) => i.field)).toEqual(['(document)']);
  });

  it('formats issues one per line, field first', () => {
    expect(
      formatIssues([
        { field: 'tick', message: 'must be between 1s and 1h' },
        { field: 'events[2].cluster', message: 'no cluster named x in fleet.clusters' },
      ]),
    ).toBe('tick: must be between 1s and 1h\nevents[2].cluster: no cluster named x in fleet.clusters');
  });

  it('embeds examples/scenarios/gpu-stockout.yaml byte for byte (mco demo runs it)', () => {
    const file = readFileSync(new URL('../../../examples/scenarios/gpu-stockout.yaml', import.meta.url), 'utf8');
    expect(GPU_STOCKOUT_SCENARIO).toBe(file);
    expect(parseScenarioText(GPU_STOCKOUT_SCENARIO).ok).toBe(true);
  });
});

describe('durations', () => {
  it.each([
    ['30s', 30],
    ['5m', 300],
    ['1h30m', 5400],
    ['2d', 172_800],
    ['0.5h', 1800],
    ['5', undefined],
    ['m', undefined],
    ['1h 30m', undefined],
  ])('%s is %s seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });
});

describe('demand', () => {
  const demand = {
    piecewise: [
      { at: 0, value: 10 },
      { at: 100, value: 30 },
    ],
    diurnal: { mean: 5, amplitude: 5, peakAt: 0, period: 400 },
  };

  it.each([
    ['interpolates linearly between points', 50, 20 + 5 + 5 * Math.SQRT1_2],
    ['adds the diurnal curve, highest at its peak', 0, 10 + 10],
    ['is the last point after it', 300, 30 + 5],
    ['is at the trough half a period after the peak', 200, 30 + 0],
  ])('%s', (_name, t, value) => {
    expect(baseDemand(demand, t)).toBeCloseTo(value, 9);
  });

  it('adds the same noise for the same seed, and other noise for another seed', () => {
    const noisy = { ...demand, noise: { stddev: 0.2, correlation: 0.5 } };
    const a = demandSeries(noisy, 50, 30, 1);
    expect(demandSeries(noisy, 50, 30, 1)).toEqual(a);
    expect(demandSeries(noisy, 50, 30, 2)).not.toEqual(a);
    expect(a.every((v) => v >= 0)).toBe(true);
    expect(demandSeries(demand, 3, 50, 1)).toEqual([20, baseDemand(demand, 50), baseDemand(demand, 100)]);
  });
});
