import type { Scenario, ScenarioEvent } from './scenario.js';

/** What an event can change in a simulated cluster. */
export interface ClusterConditions {
  labels: Record<string, string>;
  stockedOut: boolean;
  reachable: boolean;
  controlPlaneHealthy: 'True' | 'False' | 'Unknown';
  /** Probability that an observation is missed. */
  dropout: number;
  /** Probability that an observation reports workloadHealthy false. */
  unhealthy: number;
  /**
   * The windowed events in force, from which the fields above are derived, so
   * that overlapping events compose: a cluster stays unreachable until the
   * last outage over it ends, not the first.
   */
  readonly active: ActiveEvents;
}

/** Events in force on one cluster; each entry is removed by identity when its event ends. */
export interface ActiveEvents {
  stockouts: number;
  outages: number;
  readonly health: Set<{ readonly status: 'False' | 'Unknown' }>;
  readonly noise: Set<{ readonly dropout: number; readonly unhealthy: number }>;
}

/** A cluster's conditions with no event in force. */
export function initialConditions(labels: Readonly<Record<string, string>>): ClusterConditions {
  return {
    labels: { ...labels },
    stockedOut: false,
    reachable: true,
    controlPlaneHealthy: 'True',
    dropout: 0,
    unhealthy: 0,
    active: { stockouts: 0, outages: 0, health: new Set(), noise: new Set() },
  };
}

/** Derives the conditions from the events in force: False over Unknown, the worst noise. */
function settle(c: ClusterConditions): void {
  const { stockouts, outages, health, noise } = c.active;
  c.stockedOut = stockouts > 0;
  c.reachable = outages === 0;
  const statuses = [...health].map((h) => h.status);
  c.controlPlaneHealthy = statuses.includes('False') ? 'False' : statuses.length > 0 ? 'Unknown' : 'True';
  c.dropout = Math.max(0, ...[...noise].map((n) => n.dropout));
  c.unhealthy = Math.max(0, ...[...noise].map((n) => n.unhealthy));
}

/** One change of the world at one time, from a scenario event (an event with `until` makes two). */
export interface Action {
  readonly t: number;
  /** Names of the clusters it changes. */
  readonly clusters: readonly string[];
  /** One line for the timeline. */
  readonly text: string;
  /** Applies the action to one cluster; returns whether its derived conditions changed. */
  readonly apply: (c: ClusterConditions) => boolean;
  /**
   * The timeline's mark when the action changed nothing on any of its clusters
   * (overlapping events compose): `(no change)`, and why when another event is in force.
   */
  readonly unchangedMark: (clusters: readonly ClusterConditions[]) => string;
}

const inForce = ({ stockouts, outages, health, noise }: ActiveEvents) =>
  stockouts + outages + health.size + noise.size > 0;

/** Every action of a scenario, in time order (ties keep the order of the events). */
export function expandEvents(scenario: Scenario): Action[] {
  const ns = scenario.fleet.namespace;
  const actions: { action: Action; order: number }[] = [];
  scenario.events.forEach((event, index) => {
    const targets = targetsOf(scenario, event);
    const scope =
      event.type !== 'labels' && event.region !== undefined
        ? `region ${event.region} (${targets.map((n) => `${ns}/${n}`).join(', ')})`
        : `${ns}/${targets[0]}`;
    const push = (t: number, text: string, change: (c: ClusterConditions) => void) =>
      actions.push({
        action: {
          t,
          clusters: targets,
          text,
          apply: (c) => {
            const { labels: _labels, active: _active, ...before } = c;
            change(c);
            settle(c);
            return Object.entries(before).some(([k, v]) => c[k as keyof typeof before] !== v);
          },
          // Label events compose with nothing, so they get no mark.
          unchangedMark: (clusters) =>
            event.type === 'labels'
              ? ''
              : clusters.some((c) => inForce(c.active))
                ? ' (no change: another event is in force)'
                : ' (no change)',
        },
        order: index,
      });
    // An entry per target cluster, so that the event's end removes what its start added there.
    const entries = <T extends object>(make: () => T) => {
      const byActive = new Map<ActiveEvents, T>();
      return (a: ActiveEvents) => byActive.get(a) ?? byActive.set(a, make()).get(a)!;
    };
    switch (event.type) {
      case 'stockout':
        push(event.at, `stockout: no new nodes can be provisioned in ${scope}`, ({ active: a }) => a.stockouts++);
        if (event.until !== undefined) {
          push(event.until, `stockout over: nodes can be provisioned again in ${scope}`, ({ active: a }) => {
            a.stockouts = Math.max(0, a.stockouts - 1);
          });
        }
        break;
      case 'recovery':
        // Ends every stockout in force: capacity is back, whatever event took it.
        push(
          event.at,
          `capacity recovered: nodes can be provisioned again in ${scope}`,
          ({ active: a }) => (a.stockouts = 0),
        );
        break;
      case 'outage': {
        const report = event.reportUnhealthyAfter;
        const down = entries(() => ({ status: 'False' as const }));
        push(event.at, `outage: ${scope} unreachable`, ({ active: a }) => a.outages++);
        push(event.at + report, `ClusterProfile ControlPlaneHealthy=False for ${scope}`, ({ active: a }) =>
          a.health.add(down(a)),
        );
        if (event.until !== undefined) {
          push(event.until, `outage over: ${scope} reachable again`, ({ active: a }) => {
            a.outages = Math.max(0, a.outages - 1);
          });
          push(event.until + report, `ClusterProfile ControlPlaneHealthy=True for ${scope}`, ({ active: a }) =>
            a.health.delete(down(a)),
          );
        }
        break;
      }
      case 'labels': {
        const changes = Object.keys(event.labels)
          .sort()
          .map((k) => (event.labels[k] === null ? `-${k}` : `${k}=${event.labels[k]}`));
        push(event.at, `labels of ${scope} changed: ${changes.join(', ')}`, (c) => {
          for (const [key, value] of Object.entries(event.labels)) {
            if (value === null) delete c.labels[key];
            else c.labels[key] = value;
          }
        });
        break;
      }
      case 'controlPlaneHealthy': {
        const status = event.status;
        if (status === 'True') {
          // Ends every report in force, as a recovery ends every stockout.
          push(event.at, `ClusterProfile ControlPlaneHealthy=True for ${scope}`, ({ active: a }) => a.health.clear());
          break;
        }
        const report = entries(() => ({ status }));
        push(event.at, `ClusterProfile ControlPlaneHealthy=${status} for ${scope}`, ({ active: a }) =>
          a.health.add(report(a)),
        );
        if (event.until !== undefined) {
          push(event.until, `ClusterProfile ControlPlaneHealthy=True for ${scope}`, ({ active: a }) =>
            a.health.delete(report(a)),
          );
        }
        break;
      }
      case 'signalNoise': {
        const noise = entries(() => ({ dropout: event.dropout, unhealthy: event.unhealthy }));
        const pct = (p: number) => `${Math.round(p * 100)}%`;
        push(
          event.at,
          `flaky signals from ${scope}: ${pct(event.dropout)} of observations missed, ${pct(event.unhealthy)} report the workload unhealthy`,
          ({ active: a }) => a.noise.add(noise(a)),
        );
        if (event.until !== undefined) {
          push(event.until, `signals from ${scope} steady again`, ({ active: a }) => a.noise.delete(noise(a)));
        }
        break;
      }
    }
  });
  return actions.sort((a, b) => a.action.t - b.action.t || a.order - b.order).map((a) => a.action);
}

export function targetsOf(scenario: Scenario, event: ScenarioEvent): string[] {
  if (event.type === 'labels' || event.cluster !== undefined) return [event.cluster!];
  return scenario.fleet.clusters.filter((c) => c.region === event.region).map((c) => c.name);
}
