import { clusterKey, type ClusterProfile, type Signal } from '@mco/core';
import {
  McoError,
  observeWorkloadOnEachCluster,
  signalMetrics,
  silentLogger,
  toMcoError,
  type CapacitySignalSource,
  type ClusterObservation,
  type Logger,
  type McoErrorCode,
  type PluginDeps,
} from '@mco/runtime';
import type { Auth } from './auth.js';
import {
  DEFAULT_QUERIES,
  QUERY_NAMES,
  READY_REPLICAS_PROBE,
  type PrometheusSignalsConfig,
  type QueryName,
} from './config.js';
import { queryEndpoint, queryInstant, redactUrl, type QueryValue } from './prometheus-client.js';

export const SOURCE_NAME = 'prometheus';

export interface PrometheusSignalSourceOptions {
  readonly config: PrometheusSignalsConfig;
  readonly auth: Auth;
  readonly metrics: PluginDeps['metrics'];
  readonly now: () => Date;
  readonly logger?: Logger;
}

/** A PromQL string literal's content: Go escapes, which JSON's are a subset of. */
export function escapeLabelValue(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

/** Replaces `${name}` variables; every name was checked when the configuration was parsed. */
export function render(template: string, variables: Readonly<Record<string, string>>): string {
  return template.replace(/\$\{([^}]*)\}/g, (_m, name: string) => variables[name] ?? '');
}

/**
 * The `${cluster}` variable for a ClusterProfile: `label="value",` per configured
 * cluster label, sorted by label name. A template naming a label, annotation or
 * property the profile lacks is an error: a wrong matcher would read another
 * cluster's series.
 */
export function clusterMatchers(profile: ClusterProfile, labels: Readonly<Record<string, string>>): string {
  const key = clusterKey(profile.metadata.namespace, profile.metadata.name);
  const lookup = (variable: string, label: string): string => {
    if (variable === 'name') return profile.metadata.name;
    if (variable === 'namespace') return profile.metadata.namespace;
    const [kind, ...rest] = variable.split(':');
    const name = rest.join(':');
    const value =
      kind === 'label'
        ? profile.metadata.labels?.[name]
        : kind === 'annotation'
          ? profile.metadata.annotations?.[name]
          : profile.status?.properties?.find((p) => p.name === name)?.value;
    if (value === undefined) {
      throw new McoError('Invalid', `ClusterProfile ${key} has no ${kind} "${name}" (clusterLabels.${label})`, false);
    }
    return value;
  };
  return Object.keys(labels)
    .sort()
    .map((label) => {
      const value = labels[label]!.replace(/\$\{([^}]*)\}/g, (_m, v: string) => lookup(v, label));
      return `${label}="${escapeLabelValue(value)}",`;
    })
    .join('');
}

/**
 * Reads the placed workload's capacity signals from a Prometheus-compatible
 * query API: one instant query per field, each returning one number. A field
 * whose query fails, answers in part or selects no series stays unknown.
 */
export function createPrometheusSignalSource(options: PrometheusSignalSourceOptions): CapacitySignalSource {
  const { config, auth, now } = options;
  const logger = options.logger ?? silentLogger;
  const metrics = signalMetrics(options.metrics);
  // Members that ran out of time lately are asked last (observeEachCluster).
  const outOfTime = new Set<string>();
  const queries = QUERY_NAMES.flatMap((name) => {
    const override = config.queries[name];
    const q = override === undefined ? DEFAULT_QUERIES[name] : override;
    return q ? [{ name, template: q }] : [];
  });
  const readyQuery = queries.find((q) => q.name === 'readyReplicas');
  // Only the default query is known to read kube-state-metrics' series, so only it is probed.
  const probeReady = readyQuery?.template === DEFAULT_QUERIES.readyReplicas;

  return {
    async observe(request, abort) {
      const result = await observeWorkloadOnEachCluster(
        request,
        {
          source: SOURCE_NAME,
          concurrency: config.concurrency,
          outOfTime,
          timeoutMs: config.timeoutSeconds * 1000,
          metrics,
          ...(abort ? { abort } : {}),
        },
        async ({ key, profile }, details, signal): Promise<ClusterObservation> => {
          const endpoint = endpointFor(config, profile, key);
          const variables = {
            cluster: clusterMatchers(profile, config.clusterLabels),
            namespace: escapeLabelValue(details.namespace ?? request.placement.namespace),
            deployment: escapeLabelValue(details.deploymentName),
            hpa: escapeLabelValue(details.hpaName),
            window: `${config.windowSeconds}s`,
            healthWindow: `${config.healthWindowSeconds}s`,
          };
          const headers = { ...config.headers, ...(await auth.headers(signal)) };
          const time = now();
          const ask = async (name: QueryName, template: string): Promise<QueryResult> => {
            try {
              const value = await queryInstant(endpoint, render(template, variables), {
                time,
                headers,
                maxResponseBytes: config.maxResponseBytes,
                signal,
              });
              return { name, value };
            } catch (error) {
              if (signal.aborted) throw signal.reason;
              const e = toMcoError(error);
              if (e.code === 'Unauthorized') auth.invalidate();
              return {
                name,
                value: undefined,
                error: { code: e.code, message: `query ${name} at ${redactUrl(endpoint)}: ${e.message}` },
              };
            }
          };
          const values = await Promise.all(queries.map(({ name, template }) => ask(name, template)));
          // No ready-replica series for the workload is missing data, unless the cluster exports none
          // at all: then this source cannot report readyReplicas there, and says so.
          const ready = values.find((v) => v.name === 'readyReplicas');
          let unexported = false;
          if (probeReady && ready?.value === undefined && !ready?.error) {
            const probe = await ask('readyReplicas', READY_REPLICAS_PROBE);
            if (probe.error) values.push(probe);
            else unexported = probe.value === undefined;
          }
          return toObservation(key, time, values, readyQuery !== undefined && !unexported);
        },
      );
      for (const e of result.errors) logger.debug('signal incomplete', { ...e, placement: request.placement.name });
      return result;
    },
  };
}

/**
 * The query endpoint for one cluster: the configured URL, or the one its
 * ClusterProfile annotation names when that is under an allowed prefix.
 */
export function endpointFor(
  config: Pick<PrometheusSignalsConfig, 'url' | 'metricsEndpointAnnotation' | 'allowedEndpointPrefixes'>,
  profile: ClusterProfile,
  key: string,
): string {
  if (config.url) return queryEndpoint(config.url);
  const annotation = config.metricsEndpointAnnotation!;
  const url = profile.metadata.annotations?.[annotation];
  if (!url) throw new McoError('Invalid', `ClusterProfile ${key} has no annotation ${annotation}`, false);
  // The annotation is the profile writer's to set, and the auth header (a metadata-server
  // OAuth token, say) goes where it points: only to the configured prefixes.
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new McoError('Invalid', `ClusterProfile ${key}: annotation ${annotation} is not a URL`, false);
  }
  const normalised = parsed.href;
  if (parsed.username || parsed.password || !config.allowedEndpointPrefixes.some((p) => normalised.startsWith(p))) {
    throw new McoError(
      'Invalid',
      `ClusterProfile ${key}: annotation ${annotation} is not under an allowed endpoint prefix (allowedEndpointPrefixes)`,
      false,
    );
  }
  return queryEndpoint(normalised);
}

type QueryResult = { name: QueryName; value: QueryValue; error?: { code: McoErrorCode; message: string } };

/**
 * Turns query results into a signal; nothing answered at all means no signal.
 * A signal without readyReplicas declares whether the source reports them:
 * without a readyReplicas query (`reportsReadyReplicas` false) the engine
 * drains on the clock rather than wait for a value that never comes; with
 * one, the missing value is doubt and a drain waits (docs/signals.md).
 */
export function toObservation(
  cluster: string,
  time: Date,
  results: readonly QueryResult[],
  reportsReadyReplicas = true,
): ClusterObservation {
  const errors = results.flatMap((r) => (r.error ? [r.error] : []));
  const v = Object.fromEntries(results.filter((r) => r.value !== undefined).map((r) => [r.name, r.value!])) as Partial<
    Record<QueryName, number>
  >;
  if (Object.keys(v).length === 0) {
    if (errors.length) return { errors };
    return {
      errors: [
        {
          code: 'NotFound',
          message:
            'no query selected any series: check clusterLabels, the workload names and that kube-state-metrics is scraped',
        },
      ],
    };
  }
  const count = (name: QueryName) => {
    const x = v[name];
    return x === undefined ? undefined : x >= 0 ? Math.round(x) : undefined;
  };
  const flag = (name: QueryName) => (v[name] === undefined ? undefined : v[name]! > 0);
  const hpa: NonNullable<Signal['hpa']> = {};
  const set = <K extends keyof typeof hpa>(k: K, x: (typeof hpa)[K] | undefined) => {
    if (x !== undefined) hpa[k] = x;
  };
  set('currentReplicas', count('hpaCurrentReplicas'));
  set('desiredReplicas', count('hpaDesiredReplicas'));
  set('minReplicas', count('hpaMinReplicas'));
  set('maxReplicas', count('hpaMaxReplicas'));
  const limited = flag('hpaScalingLimited');
  if (limited !== undefined) {
    const reason = limited ? scalingLimitedReason(hpa) : undefined;
    hpa.scalingLimited = { status: limited ? 'True' : 'False', ...(reason ? { reason } : {}) };
  }
  const signal: Signal = { cluster, observedAt: time.toISOString() };
  if (Object.keys(hpa).length) signal.hpa = hpa;
  const pending = count('pendingPods');
  if (pending !== undefined) signal.pendingPods = pending;
  const ready = count('readyReplicas');
  if (ready !== undefined) signal.readyReplicas = ready;
  // Without the value, say which it is: doubt where this source reports it, nothing to wait for where it cannot.
  else signal.reportsReadyReplicas = reportsReadyReplicas;
  for (const name of ['failedScaleUp', 'workloadHealthy', 'atCapacityCeiling', 'wantsScaleIn'] as const) {
    const f = flag(name);
    if (f !== undefined) signal[name] = f;
  }
  return { signal, errors };
}

/**
 * kube-state-metrics exports the ScalingLimited condition without its reason.
 * The HPA clamps desiredReplicas to minReplicas (TooFewReplicas) or to
 * maxReplicas (TooManyReplicas), so the reason is read from where it clamped;
 * when that is ambiguous (min = max) or unknown, the reason stays unknown.
 */
export function scalingLimitedReason(hpa: NonNullable<Signal['hpa']>): string | undefined {
  const { desiredReplicas: d, minReplicas: min, maxReplicas: max } = hpa;
  if (d === undefined || min === undefined || max === undefined || min >= max) return undefined;
  if (d === min) return 'TooFewReplicas';
  if (d === max) return 'TooManyReplicas';
  return undefined;
}
