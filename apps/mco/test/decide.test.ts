import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainStepSize } from '@mco/core';
import { describe, expect, it } from 'vitest';
import { main } from '../src/main.js';

const example = new URL('../../../examples/decide/stockout.yaml', import.meta.url).pathname;

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

function file(name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mco-decide-'));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('mco decide', () => {
  it('decides the stockout example: scales out to the next preferred GPU cluster', async () => {
    const { code, stdout, stderr } = await mco('decide', '-f', example);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.transitions).toEqual([
      {
        cluster: 'fleet/us-west1',
        id: 'P1',
        from: null,
        to: 'ACTIVE',
        reason: 'headroom 0 < min 1: added the highest-priority eligible cluster',
      },
    ]);
    expect(out.status.clusters.map((c: { name: string; state: string }) => `${c.name} ${c.state}`)).toEqual([
      'us-east1 ACTIVE',
      'us-west1 ACTIVE',
    ]);
    expect(out.requeueAfterSeconds).toBe(150);
  });

  it('continues the timeline when an output status is fed back', async () => {
    const first = JSON.parse((await mco('decide', '-f', example)).stdout);
    const input = {
      now: '2026-01-01T12:01:00Z',
      placement: {
        metadata: { name: 'p', namespace: 'default' },
        spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1 } } },
        status: first.status,
      },
      clusterProfiles: [
        { metadata: { name: 'us-east1', namespace: 'fleet' } },
        { metadata: { name: 'us-west1', namespace: 'fleet' } },
      ],
    };
    const { code, stdout } = await mco('decide', '-f', file('next.json', JSON.stringify(input)));
    expect(code).toBe(0);
    const next = JSON.parse(stdout);
    expect(next.transitions).toEqual([]);
    expect(next.status.lastAdditionTime).toBe('2026-01-01T12:00:00Z');
  });

  it('reports an invalid spec in status.conditions and exits 0', async () => {
    const input = {
      now: '2026-01-01T00:00:00Z',
      placement: {
        metadata: { name: 'p' },
        spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '(' } }] },
      },
      clusterProfiles: [],
    };
    const { code, stdout } = await mco('decide', '-f', file('bad-spec.json', JSON.stringify(input)));
    expect(code).toBe(0);
    expect(JSON.parse(stdout).status.conditions[0]).toMatchObject({
      type: 'Valid',
      status: 'False',
      reason: 'InvalidRegex',
    });
  });

  it.each([
    ['a missing file', ['decide', '-f', '/nonexistent/input.yaml'], /cannot read \/nonexistent\/input\.yaml/],
    ['no -f', ['decide'], /missing -f <input file>/],
    ['an unknown flag', ['decide', '--bogus'], /Unknown option '--bogus'/],
  ])('exits 2 for %s', async (_name, argv, message) => {
    const { code, stderr } = await mco(...argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it.each([
    ['unparsable YAML', 'in.yaml', 'now: [unclosed', /in\.yaml is not valid YAML/],
    ['unparsable JSON', 'in.json', '{"now": ', /in\.json is not valid JSON/],
    ['a missing now', 'in.yaml', 'placement: {metadata: {name: p}}', /invalid input .*: now: /],
    [
      'a malformed timestamp',
      'in.yaml',
      'now: yesterday\nplacement: {metadata: {name: p}}',
      /now: expected an RFC 3339 timestamp/,
    ],
    [
      'a ClusterProfile without a name',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}}\nclusterProfiles: [{metadata: {namespace: fleet}}]',
      /clusterProfiles\[0\]\.metadata\.name: /,
    ],
    [
      'a signal with a negative pending pod count',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}}\nsignals: [{cluster: fleet/a, observedAt: "2026-01-01T00:00:00Z", pendingPods: -1}]',
      /signals\[0\]\.pendingPods: /,
    ],
    [
      'a status cluster with an unknown state',
      'in.yaml',
      'now: "2026-01-01T00:00:00Z"\nplacement: {metadata: {name: p}, status: {clusters: [{name: a, state: RUNNING, lastTransitionTime: "2026-01-01T00:00:00Z"}]}}',
      /placement\.status\.clusters\[0\]\.state: /,
    ],
  ])('exits 2 naming the field for %s', async (_name, fileName, content, message) => {
    const { code, stderr, stdout } = await mco('decide', '-f', file(fileName, content));
    expect(stdout).toBe('');
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('prints help for the command and for mco itself', async () => {
    expect((await mco('decide', '--help')).stdout).toMatch(/^Usage: mco decide -f <input\.\(json\|yaml\)>/);
    const top = await mco('--help');
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/decide +Evaluate one placement/);
    expect((await mco('nope')).code).toBe(2);
  });
});

describe('mco decide: a draining scale-in, MCO-style (useDraining), evaluated once a minute', () => {
  const T0 = Date.parse('2026-01-01T12:00:00Z');
  const iso = (seconds: number) => new Date(T0 + seconds * 1000).toISOString().replace('.000Z', 'Z');
  const STEP = 60; // behavior.drain.stepIntervalSeconds, the default, as MCO's own clock

  /** MCO's clock: the caps a drain from `start` steps through, one per interval, down to 1. */
  function mcoCaps(start: number): number[] {
    const caps = [start];
    while (caps.at(-1)! > 1) caps.push(caps.at(-1)! - drainStepSize(caps.at(-1)!, 25));
    return caps;
  }
  /** The lines of a drain from `start` on MCO's clock, marked unprotected, then the removal. */
  const onTheClock = (start: number) =>
    mcoCaps(start)
      .map((cap, i) => `+${i * STEP}s SCALING_IN ${cap} ReadyReplicasNotReported`)
      .concat([`+${mcoCaps(start).length * STEP}s removed`]);
  /** The receiver's HPA settled at `desired`: `ready` ready replicas, `undefined` for none in the signal. */
  type Receiver = { readonly desired: number; readonly ready?: number; readonly reportsReadyReplicas?: boolean };

  /**
   * us-west1 has wanted scale-in for 10 minutes while us-east1 (preferred)
   * has room: the first evaluation moves it to SCALING_IN (P2) at `start`
   * replicas. Each later evaluation feeds the previous status back, and
   * us-west1's HPA follows the published cap, as a delivery applying
   * desiredMaxReplicas makes it. Returns one line per evaluation, up to the
   * removal or `minutes`.
   */
  async function drain(
    start: number,
    receiver: Receiver,
    minutes: number,
  ): Promise<{ lines: string[]; satisfied: string[] }> {
    let status: unknown = {
      clusters: [
        { name: 'us-east1', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: iso(-86_400) },
        {
          name: 'us-west1',
          namespace: 'fleet',
          state: 'ACTIVE',
          lastTransitionTime: iso(-7_200),
          scaleInCandidateSince: iso(-600),
        },
      ],
      lastAdditionTime: iso(-7_200),
    };
    let replicas = start;
    const lines: string[] = [];
    const satisfied = new Set<string>();
    for (let minute = 0; minute < minutes; minute++) {
      const now = minute * STEP;
      const input = {
        now: iso(now),
        placement: {
          metadata: { name: 'web', namespace: 'default' },
          spec: {
            scaling: {
              autoscaleForCapacity: {
                minClustersBelowCapacityCeiling: 1,
                useDraining: true,
                workloadDetails: { namespace: 'default', deploymentName: 'web', hpaName: 'web' },
              },
            },
          },
          status,
        },
        clusterProfiles: [
          { metadata: { name: 'us-east1', namespace: 'fleet' } },
          { metadata: { name: 'us-west1', namespace: 'fleet' } },
        ],
        signals: [
          {
            cluster: 'fleet/us-east1',
            observedAt: iso(now - 5),
            hpa: {
              currentReplicas: receiver.desired,
              desiredReplicas: receiver.desired,
              minReplicas: 1,
              maxReplicas: 20,
            },
            pendingPods: 0,
            failedScaleUp: false,
            ...(receiver.ready !== undefined ? { readyReplicas: receiver.ready } : {}),
            ...(receiver.reportsReadyReplicas !== undefined
              ? { reportsReadyReplicas: receiver.reportsReadyReplicas }
              : {}),
          },
          {
            cluster: 'fleet/us-west1',
            observedAt: iso(now - 5),
            hpa: {
              currentReplicas: replicas,
              desiredReplicas: replicas,
              minReplicas: minute === 0 ? replicas : 1,
              maxReplicas: replicas,
              scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
            },
            // The same source as the receiver's: it reports readyReplicas or not, and declares the same.
            ...(receiver.ready !== undefined ? { readyReplicas: replicas } : {}),
            ...(receiver.reportsReadyReplicas !== undefined
              ? { reportsReadyReplicas: receiver.reportsReadyReplicas }
              : {}),
          },
        ],
      };
      const { code, stdout, stderr } = await mco('decide', '-f', file('in.json', JSON.stringify(input)));
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const out = JSON.parse(stdout);
      status = out.status;
      const west = out.status.clusters.find((c: { name: string }) => c.name === 'us-west1');
      const message: string = out.status.conditions.find((c: { type: string }) => c.type === 'Satisfied').message;
      for (const part of message.split('; ').slice(1)) satisfied.add(part);
      const d = west?.draining;
      lines.push(
        west
          ? [`+${now}s ${west.state} ${d.desiredMaxReplicas}`, d.unprotectedReason, d.pausedReason]
              .filter(Boolean)
              .join(' ')
          : `+${now}s removed`,
      );
      if (!west) break;
      replicas = d.desiredMaxReplicas;
    }
    return { lines, satisfied: [...satisfied] };
  }

  it.each<{ name: string; start: number; receiver: Receiver; expected: string[]; satisfied: string[] }>([
    {
      name: 'signals without readyReplicas, from a source that declares it reports none: steps on the clock and completes as MCO does',
      start: 8,
      receiver: { desired: 5, reportsReadyReplicas: false },
      expected: onTheClock(8),
      satisfied: [
        'fleet/us-west1 drains unprotected: the signal source of fleet/us-east1 does not report readyReplicas: it steps on the clock of behavior.drain.stepIntervalSeconds (60s) with no ready-replica check (rule D1)',
      ],
    },
    {
      name: 'a larger drain (20 replicas) without readyReplicas: eight steps of MCO’s clock, then removed',
      start: 20,
      receiver: { desired: 5, reportsReadyReplicas: false },
      expected: onTheClock(20),
      satisfied: [
        'fleet/us-west1 drains unprotected: the signal source of fleet/us-east1 does not report readyReplicas: it steps on the clock of behavior.drain.stepIntervalSeconds (60s) with no ready-replica check (rule D1)',
      ],
    },
    {
      name: 'readyReplicas reported and the receiver settled (5 of 5 ready): rule D1 lets every step through, as before',
      start: 8,
      receiver: { desired: 5, ready: 5 },
      expected: [
        '+0s SCALING_IN 8',
        '+60s SCALING_IN 6',
        '+120s SCALING_IN 4',
        '+180s SCALING_IN 3',
        '+240s SCALING_IN 2',
        '+300s SCALING_IN 1',
        '+360s removed',
      ],
      satisfied: [],
    },
    {
      name: 'readyReplicas reported and the receiver short (3 of 9 ready, not growing): rule D1 holds the drain after its first step, as before',
      start: 8,
      receiver: { desired: 9, ready: 3 },
      expected: ['+0s SCALING_IN 8', '+60s SCALING_IN 6'].concat(
        Array.from({ length: 28 }, (_, i) => `+${(i + 2) * STEP}s SCALING_IN 6 ReceiversNotReady`),
      ),
      satisfied: [],
    },
    {
      name: 'MCO-style signals without readyReplicas and no declaration (a source written for MCO): learned as not reported, the drain steps on the clock and completes as MCO does',
      start: 8,
      receiver: { desired: 5 },
      expected: onTheClock(8),
      satisfied: [
        'fleet/us-west1 drains unprotected: the signal source of fleet/us-east1 has sent no readyReplicas during this drain and does not declare reportsReadyReplicas: it steps on the clock of behavior.drain.stepIntervalSeconds (60s) with no ready-replica check (rule D1)',
      ],
    },
    {
      name: 'a source that declares it reports readyReplicas (reportsReadyReplicas: true) but sent none: the drain waits, visibly, as before',
      start: 8,
      receiver: { desired: 5, reportsReadyReplicas: true },
      expected: ['+0s SCALING_IN 8'].concat(
        Array.from({ length: 29 }, (_, i) => `+${(i + 1) * STEP}s SCALING_IN 8 ReadyReplicasUnknown`),
      ),
      satisfied: [],
    },
  ])('$name', async ({ start, receiver, expected, satisfied }) => {
    expect(await drain(start, receiver, 30)).toEqual({ lines: expected, satisfied });
  });

  it('a drain without readyReplicas ends within the time MCO’s clock takes, from any size, declared or not', async () => {
    // MCO's clock, written out: 25% of the cap (at least 1) a minute.
    expect([mcoCaps(8), mcoCaps(20)]).toEqual([
      [8, 6, 4, 3, 2, 1],
      [20, 15, 11, 8, 6, 4, 3, 2, 1],
    ]);
    for (const reportsReadyReplicas of [false, undefined]) {
      for (const start of [2, 5, 8, 13, 20, 40]) {
        const { lines } = await drain(start, { desired: 5, reportsReadyReplicas }, 60);
        // MCO: P2, then one step a minute down to 1, then removal once the cluster runs 1 replica.
        expect({ reportsReadyReplicas, start, last: lines.at(-1) }).toEqual({
          reportsReadyReplicas,
          start,
          last: `+${mcoCaps(start).length * STEP}s removed`,
        });
      }
    }
  });
});
