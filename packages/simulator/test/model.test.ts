import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HPA,
  DEFAULT_NODE_POOL,
  HorizontalPodAutoscaler,
  NodePoolModel,
  Pods,
  spreadLoad,
  type HpaStatus,
  type HpaSyncInput,
} from '../src/index.js';

const hpaSpec = { ...DEFAULT_HPA, maxReplicas: 10 }; // min 1, target 70%, 300s scale-down window
const sync = (input: Partial<HpaSyncInput> & { currentReplicas: number; load: number }): HpaSyncInput => ({
  readyReplicas: input.currentReplicas,
  capacityPerReplica: 10, // 7 per pod at the 70% target
  minReplicas: 1,
  maxReplicas: 10,
  ...input,
});

describe('HorizontalPodAutoscaler', () => {
  it.each<{ name: string; spec?: Partial<typeof hpaSpec>; input: HpaSyncInput; status: HpaStatus }>([
    {
      name: 'scales to the replicas that bring utilisation back to the target',
      input: sync({ currentReplicas: 4, load: 56 }),
      status: {
        currentReplicas: 4,
        desiredReplicas: 8,
        minReplicas: 1,
        maxReplicas: 10,
        scalingLimited: { status: 'False', reason: 'DesiredWithinRange' },
      },
    },
    {
      name: 'keeps its size while the ratio is within the tolerance',
      input: sync({ currentReplicas: 4, load: 29 }),
      status: {
        currentReplicas: 4,
        desiredReplicas: 4,
        minReplicas: 1,
        maxReplicas: 10,
        scalingLimited: { status: 'False', reason: 'DesiredWithinRange' },
      },
    },
    {
      name: 'stops at maxReplicas and reports ScalingLimited TooManyReplicas',
      input: sync({ currentReplicas: 10, load: 100 }),
      status: {
        currentReplicas: 10,
        desiredReplicas: 10,
        minReplicas: 1,
        maxReplicas: 10,
        scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
      },
    },
    {
      name: 'scales up at most by the larger of 4 pods and 100% per sync (ScaleUpLimit)',
      input: sync({ currentReplicas: 2, load: 140, maxReplicas: 30 }),
      status: {
        currentReplicas: 2,
        desiredReplicas: 6,
        minReplicas: 1,
        maxReplicas: 30,
        scalingLimited: { status: 'True', reason: 'ScaleUpLimit' },
      },
    },
    {
      name: 'counts pods without metrics at zero on a scale-up, so pending pods cause no overshoot',
      input: sync({ currentReplicas: 10, readyReplicas: 5, load: 70 }),
      status: {
        currentReplicas: 10,
        desiredReplicas: 10,
        minReplicas: 1,
        maxReplicas: 10,
        scalingLimited: { status: 'False', reason: 'DesiredWithinRange' },
      },
    },
    {
      name: 'keeps its size and reports nothing while no pod is ready (no metrics)',
      input: sync({ currentReplicas: 3, readyReplicas: 0, load: 50 }),
      status: { currentReplicas: 3, desiredReplicas: 3, minReplicas: 1, maxReplicas: 10, scalingLimited: undefined },
    },
    {
      name: 'drops at once to a maxReplicas a drainer lowered',
      input: sync({ currentReplicas: 8, load: 50, maxReplicas: 3 }),
      status: { currentReplicas: 8, desiredReplicas: 3, minReplicas: 1, maxReplicas: 3, scalingLimited: undefined },
    },
  ])('$name', ({ spec, input, status }) => {
    const hpa = new HorizontalPodAutoscaler({ ...hpaSpec, ...spec });
    hpa.sync(0, input);
    expect(hpa.status).toEqual(status);
  });

  it('reports TooFewReplicas at its minimum only after the scale-down stabilization window', () => {
    const hpa = new HorizontalPodAutoscaler({ ...hpaSpec, minReplicas: 2 });
    const limited: [number, string, string][] = [];
    for (let t = 0; t <= 330; t += 30) {
      hpa.sync(t, sync({ currentReplicas: 2, load: 1, minReplicas: 2 }));
      limited.push([t, hpa.status!.scalingLimited!.status, hpa.status!.scalingLimited!.reason]);
    }
    expect(limited).toEqual([
      ...[0, 30, 60, 90, 120, 150, 180, 210, 240, 270].map((t) => [t, 'False', 'DesiredWithinRange']),
      [300, 'True', 'TooFewReplicas'],
      [330, 'True', 'TooFewReplicas'],
    ]);
  });

  it('scales down to the highest recommendation of the window, not the latest', () => {
    const hpa = new HorizontalPodAutoscaler(hpaSpec);
    const desired: number[] = [];
    const loads = [56, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14]; // 8 replicas' worth, then 2
    loads.forEach((load, i) => desired.push(hpa.sync(i * 30, sync({ currentReplicas: 8, load }))));
    // The first recommendation (8) leaves the 300s window at t=300 (i = 10).
    expect(desired).toEqual([8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 2, 2]);
  });
});

describe('Pods', () => {
  it('loses pending pods first, then starting ones, then ready ones on a scale-down', () => {
    const pods = new Pods();
    pods.ready = 3;
    pods.starting = [100, 200];
    pods.pending = 2;
    pods.scaleTo(6);
    expect([pods.ready, pods.starting, pods.pending]).toEqual([3, [100, 200], 1]);
    pods.scaleTo(4);
    expect([pods.ready, pods.starting, pods.pending]).toEqual([3, [100], 0]);
    pods.scaleTo(2);
    expect([pods.ready, pods.starting, pods.pending]).toEqual([2, [], 0]);
  });

  it('schedules pending pods onto free slots and turns them ready after the startup time', () => {
    const pods = new Pods();
    pods.scaleTo(5);
    pods.schedule(0, 3, 120);
    expect([pods.ready, pods.starting, pods.pending]).toEqual([0, [120, 120, 120], 2]);
    pods.advance(119);
    expect(pods.ready).toBe(0);
    pods.advance(120);
    expect([pods.ready, pods.starting, pods.pending, pods.total, pods.scheduled]).toEqual([3, [], 2, 5, 3]);
  });
});

describe('NodePoolModel (cluster-autoscaler)', () => {
  const pool = (overrides: Partial<typeof DEFAULT_NODE_POOL> = {}, nodes?: number) =>
    new NodePoolModel({ ...DEFAULT_NODE_POOL, ...overrides }, nodes);

  it('adds nodes for pending pods, Ready after scaleUpDelay', () => {
    const p = pool({ scaleUpDelay: 240 });
    p.autoscale(0, 3, 0);
    p.advance(210, false);
    expect(p.nodes).toBe(0);
    p.advance(240, false);
    expect([p.nodes, p.provisioning, p.events]).toEqual([
      3,
      [],
      [{ t: 0, reason: 'TriggeredScaleUp', message: 'pod triggered scale-up: +3 node(s)' }],
    ]);
  });

  it('asks only for the nodes not already on their way', () => {
    const p = pool();
    p.autoscale(0, 2, 0);
    p.autoscale(30, 3, 0);
    expect(p.provisioning).toEqual([
      { requestedAt: 0, readyAt: 240 },
      { requestedAt: 0, readyAt: 240 },
      { requestedAt: 30, readyAt: 270 },
    ]);
  });

  it('never goes above maxNodes and reports NotTriggerScaleUp, which the signal counts as a failed scale-up', () => {
    const p = pool({ maxNodes: 4 }, 4);
    p.autoscale(0, 2, 4);
    expect([p.nodes, p.provisioning.length, p.events]).toEqual([
      4,
      0,
      [{ t: 0, reason: 'NotTriggerScaleUp', message: "pod didn't trigger scale-up: max node group size reached" }],
    ]);
    expect([p.failedScaleUpWithin(599, 600), p.failedScaleUpWithin(600, 600)]).toEqual([true, false]);
  });

  it('fails with FailedScaleUp while stocked out, backs off, then tries again', () => {
    const p = pool({ stockoutErrorAfter: 60, backoff: 300 });
    p.autoscale(0, 2, 0);
    p.advance(30, true);
    expect(p.provisioning.length).toBe(2);
    p.advance(60, true);
    p.autoscale(90, 2, 0);
    p.autoscale(360, 2, 0);
    expect([p.nodes, p.events.map((e) => [e.t, e.reason])]).toEqual([
      0,
      [
        [0, 'TriggeredScaleUp'],
        [60, 'FailedScaleUp'],
        [90, 'NotTriggerScaleUp'],
        [360, 'TriggeredScaleUp'],
      ],
    ]);
  });

  it('removes unneeded nodes after scaleDownDelay, never below minNodes', () => {
    const p = pool({ minNodes: 1, scaleDownDelay: 600 }, 5);
    p.autoscale(0, 0, 0);
    p.autoscale(570, 0, 0);
    expect(p.nodes).toBe(5);
    p.autoscale(600, 0, 0);
    expect(p.nodes).toBe(1);
  });

  it('restarts the scale-down clock when the nodes are needed again', () => {
    const p = pool({ scaleDownDelay: 600 }, 5);
    p.autoscale(0, 0, 2);
    p.autoscale(300, 0, 5);
    p.autoscale(600, 0, 2);
    p.autoscale(1170, 0, 2);
    expect(p.nodes).toBe(5);
    p.autoscale(1200, 0, 2);
    expect(p.nodes).toBe(2);
  });
});

describe('spreadLoad (load balancer)', () => {
  it.each([
    {
      name: 'spreads demand in proportion to ready endpoints',
      demand: 90,
      capacity: 100,
      endpoints: [1, 2, 0],
      shares: [
        { load: 30, served: 30 },
        { load: 60, served: 60 },
        { load: 0, served: 0 },
      ],
    },
    {
      name: 'serves at most 100% utilisation of each cluster',
      demand: 50,
      capacity: 10,
      endpoints: [1, 1],
      shares: [
        { load: 25, served: 10 },
        { load: 25, served: 10 },
      ],
    },
    {
      name: 'sends nothing anywhere when no endpoint is ready',
      demand: 50,
      capacity: 10,
      endpoints: [0, 0],
      shares: [
        { load: 0, served: 0 },
        { load: 0, served: 0 },
      ],
    },
  ])('$name', ({ demand, endpoints, capacity, shares }) => {
    expect(spreadLoad(demand, endpoints, capacity)).toEqual(shares);
  });
});
