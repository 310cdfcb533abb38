import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { signalMetrics } from '../src/index.js';

describe('signalMetrics', () => {
  it('lets two sources share one registry and counts results and error codes per cluster', async () => {
    const registry = new Registry();
    signalMetrics(registry).record('kubernetes', 'fleet/a', 'ok', 0.2, []);
    signalMetrics(registry).record('prometheus', 'fleet/a', 'failed', 1.5, ['Timeout']);
    signalMetrics(registry).record('prometheus', 'fleet/a', 'partial', 0.1, ['NotFound', 'Invalid']);

    const metrics = await registry.getMetricsAsJSON();
    const values = (name: string) =>
      metrics.find((m) => m.name === name)?.values.map((v) => ({ labels: v.labels, value: v.value }));
    expect(values('mco_signal_observations_total')).toEqual([
      { labels: { source: 'kubernetes', cluster: 'fleet/a', result: 'ok' }, value: 1 },
      { labels: { source: 'prometheus', cluster: 'fleet/a', result: 'failed' }, value: 1 },
      { labels: { source: 'prometheus', cluster: 'fleet/a', result: 'partial' }, value: 1 },
    ]);
    expect(values('mco_signal_errors_total')).toEqual([
      { labels: { source: 'prometheus', cluster: 'fleet/a', code: 'Timeout' }, value: 1 },
      { labels: { source: 'prometheus', cluster: 'fleet/a', code: 'NotFound' }, value: 1 },
      { labels: { source: 'prometheus', cluster: 'fleet/a', code: 'Invalid' }, value: 1 },
    ]);
    const count = metrics
      .find((m) => m.name === 'mco_signal_observation_duration_seconds')
      ?.values.filter((v) => (v as { metricName?: string }).metricName?.endsWith('_count'))
      .map((v) => ({ labels: v.labels, value: v.value }));
    expect(count).toEqual([
      { labels: { source: 'kubernetes' }, value: 1 },
      { labels: { source: 'prometheus' }, value: 2 },
    ]);
  });
});
