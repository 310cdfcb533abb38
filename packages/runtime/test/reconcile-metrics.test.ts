import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { reconcileMetrics } from '../src/index.js';

describe('reconcileMetrics', () => {
  it('counts reconciles by result and errors, and stamps the last success, per component in one registry', async () => {
    const registry = new Registry();
    let t = 1_700_000_000_000;
    const flux = reconcileMetrics(registry, 'mco-flux', () => t);
    const sync = reconcileMetrics(registry, 'mco-argocd-sync', () => t);
    expect(await registry.metrics()).toContain('mco_reconciles_total{component="mco-flux",result="ok"} 0');
    flux.record('ok');
    t += 5000;
    flux.record('error');
    sync.record('ok');
    const text = await registry.metrics();
    expect(text).toContain('mco_reconciles_total{component="mco-flux",result="ok"} 1');
    expect(text).toContain('mco_reconciles_total{component="mco-flux",result="error"} 1');
    expect(text).toContain('mco_reconcile_errors_total{component="mco-flux"} 1');
    expect(text).toContain('mco_reconcile_errors_total{component="mco-argocd-sync"} 0');
    expect(text).toContain('mco_reconcile_last_success_timestamp_seconds{component="mco-flux"} 1700000000');
    expect(text).toContain('mco_reconcile_last_success_timestamp_seconds{component="mco-argocd-sync"} 1700000005');
  });
});
