import { describe, expect, it } from 'vitest';
import { metricSums } from '../src/index.js';

describe('metricSums (an API server /metrics text)', () => {
  it('sums one metric by the key its labels make, leaving out other metrics and lines the key skips', () => {
    const text = [
      '# HELP apiserver_request_total Counter of apiserver requests.',
      '# TYPE apiserver_request_total counter',
      'apiserver_request_total{code="200",resource="leases",verb="PUT"} 7',
      'apiserver_request_total{code="409",resource="leases",verb="PUT"} 2',
      'apiserver_request_total{code="200",resource="placements",subresource="status",verb="PUT"} 1e3',
      'apiserver_request_total{code="200",resource="pods",verb="WATCH"} 4',
      'apiserver_request_total_other{resource="leases",verb="PUT"} 100',
      'apiserver_requests{resource="leases",verb="PUT"} 100',
    ].join('\n');
    const sums = metricSums(text, 'apiserver_request_total', (l) =>
      l.verb === 'WATCH' ? undefined : `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ''}`,
    );
    expect(Object.fromEntries(sums)).toEqual({ 'PUT leases': 9, 'PUT placements/status': 1000 });
  });
});
