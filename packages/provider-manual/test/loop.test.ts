import { silentLogger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { backoffDelayMs, createSyncMetrics, runSyncLoop, type SyncOutcome } from '../src/index.js';

describe('backoffDelayMs', () => {
  const options = { initialMs: 1000, maxMs: 30_000 };
  it.each([
    ['the first failure waits the initial delay', 1, 0.5, 1000],
    ['each further failure doubles it', 3, 0.5, 4000],
    ['it never exceeds the maximum', 10, 0.5, 30_000],
    ['jitter can shorten it by a fifth', 2, 0, 1600],
    ['jitter can lengthen it by a fifth', 2, 1, 2400],
  ])('%s', (_name, failures, random, expected) => {
    expect(backoffDelayMs(failures, options, () => random)).toBe(expected);
  });
});

describe('runSyncLoop', () => {
  it('retries failures with growing delays, returns to the interval after a success, and stops on abort', async () => {
    const abort = new AbortController();
    const outcomes: SyncOutcome[] = [
      { ok: false, reason: 'Unavailable', error: new Error('down') },
      { ok: false, reason: 'Unavailable', error: new Error('down') },
      { ok: true },
    ];
    const times: number[] = [];
    const start = Date.now();
    await runSyncLoop({
      abort: abort.signal,
      logger: silentLogger,
      intervalMs: 60_000,
      backoff: { initialMs: 20, maxMs: 1000 },
      random: () => 0.5,
      sync: async () => {
        times.push(Date.now() - start);
        const outcome = outcomes.shift();
        if (!outcome) throw new Error('called after the success: the interval was not honoured');
        if (outcomes.length === 0) setTimeout(() => abort.abort(), 50);
        return outcome;
      },
    });
    expect(times).toHaveLength(3);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(18);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(38);
  });

  it('a change of the source ends the wait early', async () => {
    const abort = new AbortController();
    let calls = 0;
    await runSyncLoop({
      abort: abort.signal,
      logger: silentLogger,
      intervalMs: 60_000,
      backoff: { initialMs: 60_000, maxMs: 60_000 },
      changed: () => new Promise((resolve) => setTimeout(resolve, 10)),
      sync: async () => {
        if (++calls === 3) abort.abort();
        return { ok: true };
      },
    });
    expect(calls).toBe(3);
  });

  it('a thrown error counts as a failure and the loop goes on', async () => {
    const abort = new AbortController();
    let calls = 0;
    await runSyncLoop({
      abort: abort.signal,
      logger: silentLogger,
      intervalMs: 60_000,
      backoff: { initialMs: 5, maxMs: 5 },
      sync: async () => {
        if (++calls === 2) {
          abort.abort();
          return { ok: true };
        }
        throw new Error('boom');
      },
    });
    expect(calls).toBe(2);
  });
});

describe('createSyncMetrics', () => {
  it('exposes last success, profile count and errors by reason, shared by two managers on one registry', async () => {
    const registry = new Registry();
    const a = createSyncMetrics(registry, 'mco_test_provider', 'a');
    const b = createSyncMetrics(registry, 'mco_test_provider', 'b');
    a.recordSuccess(new Date('2026-01-01T00:00:00Z'), 3);
    b.recordError('Timeout');
    b.recordError('Timeout');
    const text = await registry.metrics();
    expect(text).toContain('mco_test_provider_last_success_timestamp_seconds{manager="a"} 1767225600');
    expect(text).toContain('mco_test_provider_cluster_profiles{manager="a"} 3');
    expect(text).toContain('mco_test_provider_sync_errors_total{manager="b",reason="Timeout"} 2');
  });
});
