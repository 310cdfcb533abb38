import type { CapacityAnswer } from '@mco/core';
import { z } from 'zod';
import { DurationSchema } from './duration.js';
import { hashRandom } from './random.js';

/*
 * A capacity source (docs/placement-rules.md §10.11) as the policy
 * "mco + capacity source" sees it: every `refreshInterval` it answers, for each
 * reachable cluster, how many replicas the cluster could add `delay` ago, with
 * a refresh lost (`dropout`: the last answer stays and ages), unknown or wrong
 * at the configured rates. Draws depend on the seed and the keys only, so the
 * other policies see the same world.
 */

const fraction = z.number().min(0).max(1);

export const CapacitySourceSchema = z
  .strictObject({
    delay: DurationSchema.default(0).describe('How old the state an answer describes is (its observedAt).'),
    refreshInterval: DurationSchema.default(60).describe('Time between two answers of the source.'),
    dropout: fraction.default(0).describe('Probability that a refresh fails: the last answer stays and ages.'),
    unknown: fraction.default(0).describe('Probability that an answer is unknown.'),
    wrong: fraction
      .default(0)
      .describe(
        'Probability that an answer is wrong: room where there is none (the HPA maximum), none where there is (0).',
      ),
  })
  .describe('A capacity source for the policy "mco + capacity source" (docs/simulator.md).');
export type CapacitySource = z.output<typeof CapacitySourceSchema>;

/** The source's name in answers, and in `status` messages. */
export const SIMULATED_SOURCE = 'simulated';

/** One cluster as the source sees it in a tick: reachable, and the replicas it could add. */
export interface CapacityTruth {
  readonly cluster: string;
  readonly reachable: boolean;
  readonly addable: number;
  /** What a wrong answer of room says: the HPA's maximum. */
  readonly hpaMax: number;
}

/** The source's answers for one placement over a run: `answer` once per tick, in order. */
export class SimulatedCapacitySource {
  private readonly history: (readonly CapacityTruth[])[] = [];
  private readonly last = new Map<string, CapacityAnswer>();

  constructor(
    private readonly config: CapacitySource,
    private readonly tick: number,
    private readonly seed: number,
    private readonly key: string,
  ) {}

  /** Records tick `k`'s truth and returns the answers the engine gets at that tick. */
  answer(k: number, truths: readonly CapacityTruth[], timestamp: (t: number) => string): CapacityAnswer[] {
    const { delay, refreshInterval, dropout, unknown, wrong } = this.config;
    const every = Math.max(1, Math.round(refreshInterval / this.tick));
    const lag = Math.round(delay / this.tick);
    // The last lag + 1 ticks: the answer describes the oldest of them.
    this.history.push(truths);
    if (this.history.length > lag + 1) this.history.shift();
    if (k % every === 0 && k >= lag) {
      const t = (k - lag) * this.tick;
      for (const truth of this.history[0]!) {
        const draw = (what: string) => hashRandom(this.seed, 'capacity', what, this.key, truth.cluster, k);
        if (!truth.reachable || draw('dropout') < dropout) continue;
        const base = { cluster: truth.cluster, observedAt: timestamp(t), source: SIMULATED_SOURCE };
        if (draw('unknown') < unknown) {
          this.last.set(truth.cluster, { ...base, reason: 'unknown' });
          continue;
        }
        const isWrong = draw('wrong') < wrong;
        const addable = isWrong ? (truth.addable > 0 ? 0 : truth.hpaMax) : truth.addable;
        this.last.set(truth.cluster, {
          ...base,
          addableReplicas: addable,
          reason: isWrong ? 'a wrong answer' : 'free nodes and HPA room',
        });
      }
    }
    return [...this.last.values()];
  }
}
