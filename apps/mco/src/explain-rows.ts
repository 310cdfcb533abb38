import type { Explanation } from '@mco/core';

// Apart from commands/explain.ts, so that the dashboard shows the same rows
// without loading what a live `mco explain` loads (signal sources, client-node).
/** A row per cluster of `mco explain`'s table (the dashboard shows the same rows). */
export function explanationRows(e: Explanation) {
  return e.clusters.map((c) => ({
    cluster: c.cluster,
    eligible: c.eligible ? 'yes' : 'no',
    priority: c.priority === undefined ? '-' : String(c.priority),
    score: c.score === undefined ? '-' : String(Math.round(c.score * 100) / 100),
    signal: [
      c.signal.status,
      c.signal.atCapacityCeiling ? 'at ceiling' : '',
      c.signal.wantsScaleIn ? 'wants scale-in' : '',
    ]
      .filter(Boolean)
      .join(', '),
    state: `${c.stateBefore ?? '-'} -> ${c.state ?? '-'}`,
    why: [
      c.excludedBy,
      ...(c.taints ?? []).map((t) => `taint ${t}`),
      c.signal.why,
      ...c.transitions.map((t) => `${t.id}: ${t.reason}`),
      ...c.notes,
    ]
      .filter(Boolean)
      .join('; '),
  }));
}
