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
}

/** One change of the world at one time, from a scenario event (an event with `until` makes two). */
export interface Action {
  readonly t: number;
  /** Names of the clusters it changes. */
  readonly clusters: readonly string[];
  /** One line for the timeline. */
  readonly text: string;
  readonly apply: (c: ClusterConditions) => void;
}

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
    const push = (t: number, text: string, apply: (c: ClusterConditions) => void) =>
      actions.push({ action: { t, clusters: targets, text, apply }, order: index });
    switch (event.type) {
      case 'stockout':
        push(event.at, `stockout: no new nodes can be provisioned in ${scope}`, (c) => (c.stockedOut = true));
        if (event.until !== undefined) {
          push(event.until, `stockout over: nodes can be provisioned again in ${scope}`, (c) => (c.stockedOut = false));
        }
        break;
      case 'recovery':
        push(event.at, `capacity recovered: nodes can be provisioned again in ${scope}`, (c) => (c.stockedOut = false));
        break;
      case 'outage': {
        const report = event.reportUnhealthyAfter;
        push(event.at, `outage: ${scope} unreachable`, (c) => (c.reachable = false));
        push(event.at + report, `ClusterProfile ControlPlaneHealthy=False for ${scope}`, (c) => {
          c.controlPlaneHealthy = 'False';
        });
        if (event.until !== undefined) {
          push(event.until, `outage over: ${scope} reachable again`, (c) => (c.reachable = true));
          push(event.until + report, `ClusterProfile ControlPlaneHealthy=True for ${scope}`, (c) => {
            c.controlPlaneHealthy = 'True';
          });
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
      case 'controlPlaneHealthy':
        push(event.at, `ClusterProfile ControlPlaneHealthy=${event.status} for ${scope}`, (c) => {
          c.controlPlaneHealthy = event.status;
        });
        if (event.until !== undefined) {
          push(event.until, `ClusterProfile ControlPlaneHealthy=True for ${scope}`, (c) => {
            c.controlPlaneHealthy = 'True';
          });
        }
        break;
      case 'signalNoise': {
        const pct = (p: number) => `${Math.round(p * 100)}%`;
        push(
          event.at,
          `flaky signals from ${scope}: ${pct(event.dropout)} of observations missed, ${pct(event.unhealthy)} report the workload unhealthy`,
          (c) => {
            c.dropout = event.dropout;
            c.unhealthy = event.unhealthy;
          },
        );
        if (event.until !== undefined) {
          push(event.until, `signals from ${scope} steady again`, (c) => {
            c.dropout = 0;
            c.unhealthy = 0;
          });
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
