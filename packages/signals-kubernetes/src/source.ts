import type { ClusterAccessManager, MemberClusterClient } from '@mco/cluster-access';
import type { Signal } from '@mco/core';
import type { Query } from '@mco/kube-runtime';
import {
  McoError,
  httpStatusOf,
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

import {
  KARPENTER_REPEAT_SECONDS,
  clusterAutoscalerCeiling,
  clusterAutoscalerLimit,
  karpenterCeiling,
  karpenterLimit,
  type AutoscalerSetting,
} from './autoscalers.js';
import type { KubernetesSignalsConfig } from './config.js';
import type { CoreEvent, Deployment, HorizontalPodAutoscaler, LabelSelector, Pod } from './kube-types.js';

export const SOURCE_NAME = 'kubernetes';

export interface KubernetesSignalSourceOptions {
  readonly access: ClusterAccessManager;
  readonly config: Omit<KubernetesSignalsConfig, 'providers' | 'providersFile' | 'qps' | 'burst'>;
  readonly metrics: PluginDeps['metrics'];
  readonly now: () => Date;
  readonly logger?: Logger;
}

type Problem = { code: McoErrorCode; message: string };

/** How long a member's detected autoscaler is trusted before it is asked again. */
const DETECTION_TTL_MS = 10 * 60 * 1000;

/**
 * Reads, on each member cluster, the placed workload's HPA (autoscaling/v2),
 * its Deployment (selector and Available condition), the Deployment's pending
 * pods and cluster-autoscaler events about those pods. Whatever cannot be read
 * is left undefined and reported; nothing is guessed.
 */
export function createKubernetesSignalSource(options: KubernetesSignalSourceOptions): CapacitySignalSource {
  const { access, config, now } = options;
  const logger = options.logger ?? silentLogger;
  const metrics = signalMetrics(options.metrics);
  // Members that ran out of time lately are asked last (observeEachCluster).
  const outOfTime = new Set<string>();
  // Polls in a row each member could not be reached: 2 make it unreachable for the engine.
  const transportErrors = new Map<string, number>();
  // `auto` members: whether each serves Karpenter's API, and when that was learned.
  const detected = new Map<string, { karpenter: boolean; at: number }>();

  return {
    async observe(request, abort) {
      const result = await observeWorkloadOnEachCluster(
        request,
        {
          source: SOURCE_NAME,
          concurrency: config.concurrency,
          outOfTime,
          transportErrors,
          now,
          timeoutMs: config.timeoutSeconds * 1000,
          metrics,
          ...(abort ? { abort } : {}),
        },
        async ({ key, profile }, details, signal): Promise<ClusterObservation> => {
          const client = await access.clientFor(profile, signal);
          // Credentials first, inside this cluster's budget (the first request would fetch them unbounded).
          await client.access.getCredential(signal);
          const namespace = details.namespace ?? request.placement.namespace;
          return observeWorkload(client, key, namespace, details.deploymentName, details.hpaName, signal);
        },
      );
      for (const e of result.errors) logger.debug('signal incomplete', { ...e, placement: request.placement.name });
      return result;
    },
  };

  async function observeWorkload(
    client: MemberClusterClient,
    cluster: string,
    namespace: string,
    deploymentName: string,
    hpaName: string,
    signal: AbortSignal,
  ): Promise<ClusterObservation> {
    const observedAt = now();
    const problems: Problem[] = [];
    const ns = `namespaces/${encodeURIComponent(namespace)}`;
    const get = <T>(path: string, query?: Query) => client.client.get<T>(path, { signal, ...(query ? { query } : {}) });

    const [hpa, deployment] = await Promise.all([
      attempt(problems, `HorizontalPodAutoscaler ${namespace}/${hpaName}`, () =>
        get<HorizontalPodAutoscaler>(
          `/apis/autoscaling/v2/${ns}/horizontalpodautoscalers/${encodeURIComponent(hpaName)}`,
        ),
      ),
      attempt(problems, `Deployment ${namespace}/${deploymentName}`, () =>
        get<Deployment>(`/apis/apps/v1/${ns}/deployments/${encodeURIComponent(deploymentName)}`),
      ),
    ]);
    const selector = deployment?.spec?.selector ? labelSelectorString(deployment.spec.selector) : undefined;
    const setting: AutoscalerSetting = config.clusterAutoscalers[cluster] ?? config.autoscaler;
    const listEvents = (fieldSelector: string) =>
      listAll<CoreEvent>(
        (cont) => get(`/api/v1/${ns}/events`, { fieldSelector, limit: 500, continue: cont }),
        config.maxEvents,
        'events',
      );
    const [pods, caEvents, karpenterEvents] = await Promise.all([
      selector === undefined
        ? undefined
        : attempt(problems, `pods of Deployment ${namespace}/${deploymentName}`, () =>
            listAll<Pod>(
              (cont) => get(`/api/v1/${ns}/pods`, { labelSelector: selector, limit: 500, continue: cont }),
              config.maxPods,
              'pods',
            ),
          ),
      setting === 'karpenter'
        ? null
        : attempt(problems, `events in namespace ${namespace}`, async () => {
            const lists = await Promise.all(
              config.eventReasons.map((reason) => listEvents(`reason=${reason},involvedObject.kind=Pod`)),
            );
            return lists.flat();
          }),
      attempt(problems, `Karpenter events in namespace ${namespace}`, async () => {
        if (setting === 'cluster-autoscaler' || (setting === 'auto' && !(await servesKarpenter(cluster, get))))
          return null;
        // One list: every Event Karpenter wrote about a pod here (FailedScheduling, Nominated, InsufficientCapacityError).
        return listEvents(`source=${config.karpenterReporter},involvedObject.kind=Pod`);
      }),
    ]);

    if (!hpa && !deployment && !pods && !caEvents && !karpenterEvents) {
      // Nothing answered: one error says why (usually the same cause for every read).
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more reads failed)` : '';
      return { errors: [{ code: problems[0]!.code, message: `${problems[0]!.message}${more}` }] };
    }
    const result: Signal = { cluster, observedAt: observedAt.toISOString() };
    if (hpa) result.hpa = hpaSignal(hpa);
    const pending = pods?.filter((p) => p.status?.phase === 'Pending' && !p.metadata?.deletionTimestamp);
    if (pending) result.pendingPods = pending.length;
    if (pods) {
      // Each autoscaler read says true, false, or unknown (its read failed); null: not read.
      // `limits`: whether a ceiling is a size limit (rule F2 of fail-back), read the same way.
      const verdicts: (boolean | undefined)[] = [];
      const limits: (boolean | undefined)[] = [];
      if (caEvents !== null) {
        const names = new Set(pods.map((p) => p.metadata?.name));
        const since = observedAt.getTime() - config.eventWindowSeconds * 1000;
        const recent = caEvents?.filter(
          (e) => names.has(e.involvedObject.name) && reportedBy(e, config.eventReporter) && eventTime(e) >= since,
        );
        verdicts.push(recent?.some(clusterAutoscalerCeiling));
        limits.push(recent?.some(clusterAutoscalerLimit));
      }
      if (karpenterEvents !== null) {
        // Only pods still waiting for a node; Karpenter repeats its verdict at most every 5 minutes.
        const waiting = new Set(pending!.filter((p) => !p.spec?.nodeName).map((p) => p.metadata?.name ?? ''));
        const windowSeconds = Math.max(config.eventWindowSeconds, KARPENTER_REPEAT_SECONDS);
        const since = observedAt.getTime() - windowSeconds * 1000;
        const reporter = config.karpenterReporter;
        verdicts.push(karpenterEvents && karpenterCeiling(karpenterEvents, waiting, reporter, since, eventTime));
        limits.push(karpenterEvents && karpenterLimit(karpenterEvents, waiting, reporter, since, eventTime));
      }
      // One autoscaler saying so is enough; "not at the ceiling" needs every read.
      if (verdicts.includes(true)) result.failedScaleUp = true;
      else if (verdicts.every((v) => v === false)) result.failedScaleUp = false;
      if (limits.includes(true)) result.nodeLimitReached = true;
      else if (limits.every((v) => v === false)) result.nodeLimitReached = false;
    }
    // A Deployment omits readyReplicas when none is ready. Without the Deployment the value is doubt,
    // which this source declares (it reports readyReplicas), so a drain waits rather than learn otherwise.
    if (deployment) result.readyReplicas = deployment.status?.readyReplicas ?? 0;
    else result.reportsReadyReplicas = true;
    const healthy = deployment ? deploymentHealth(deployment, observedAt, config.unavailableAfterSeconds) : undefined;
    if (healthy !== undefined) result.workloadHealthy = healthy;
    return { signal: result, errors: problems };
  }

  /** Whether the member serves Karpenter's API (karpenter.sh/v1 NodePools), asked again after DETECTION_TTL_MS. */
  async function servesKarpenter(cluster: string, get: <T>(path: string) => Promise<T>): Promise<boolean> {
    const known = detected.get(cluster);
    const at = now().getTime();
    if (known && at - known.at < DETECTION_TTL_MS) return known.karpenter;
    let karpenter: boolean;
    try {
      const list = await get<{ resources?: { name?: string }[] }>('/apis/karpenter.sh/v1');
      karpenter = (list.resources ?? []).some((r) => r.name === 'nodepools');
    } catch (error) {
      if (httpStatusOf(error) !== 404) throw error;
      karpenter = false;
    }
    detected.set(cluster, { karpenter, at });
    return karpenter;
  }
}

/** Runs one read; a failure is recorded as a problem and yields undefined (that field stays unknown). */
async function attempt<T>(problems: Problem[], what: string, read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    problems.push(describeError(error, what));
    return undefined;
  }
}

/** A short message: the HTTP status and the Status message, never the whole response. */
export function describeError(error: unknown, what: string): Problem {
  if (error instanceof McoError) return { code: error.code, message: `${what}: ${error.message}` };
  const status = httpStatusOf(error);
  const code = toMcoError(error).code;
  if (status === undefined) {
    const message = error instanceof Error ? error.message : String(error);
    return { code, message: `${what}: ${message}` };
  }
  let detail = '';
  try {
    const body = (error as { body?: unknown }).body;
    const parsed = typeof body === 'string' ? (JSON.parse(body) as { message?: unknown }) : undefined;
    if (typeof parsed?.message === 'string') detail = `: ${parsed.message}`;
  } catch {
    // not a Status object
  }
  return { code, message: `${what}: HTTP ${status}${detail}` };
}

async function listAll<T>(
  page: (cont: string | undefined) => Promise<{ items: T[]; metadata?: { continue?: string } }>,
  max: number,
  what: string,
): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const list = await page(cont);
    items.push(...list.items);
    if (items.length > max) throw new McoError('Invalid', `more than ${max} ${what}; raise the limit`, false);
    cont = list.metadata?.continue || undefined;
  } while (cont);
  return items;
}

export function hpaSignal(hpa: HorizontalPodAutoscaler): NonNullable<Signal['hpa']> {
  const limited = hpa.status?.conditions?.find((c) => c.type === 'ScalingLimited');
  const status = limited?.status;
  return {
    ...(hpa.status?.currentReplicas !== undefined ? { currentReplicas: hpa.status.currentReplicas } : {}),
    ...(hpa.status?.desiredReplicas !== undefined ? { desiredReplicas: hpa.status.desiredReplicas } : {}),
    // The API defaults minReplicas to 1.
    minReplicas: hpa.spec?.minReplicas ?? 1,
    ...(hpa.spec?.maxReplicas !== undefined ? { maxReplicas: hpa.spec.maxReplicas } : {}),
    ...(status === 'True' || status === 'False' || status === 'Unknown'
      ? { scalingLimited: { status, ...(limited?.reason ? { reason: limited.reason } : {}) } }
      : {}),
  };
}

/**
 * True when the Deployment is Available; false when it has failed to progress
 * (ProgressDeadlineExceeded) or has been unavailable for `unavailableAfterSeconds`
 * (a rollout or a cold start is not a failure); otherwise unknown.
 */
export function deploymentHealth(
  deployment: Deployment,
  now: Date,
  unavailableAfterSeconds: number,
): boolean | undefined {
  const conditions = deployment.status?.conditions ?? [];
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') return false;
  const available = conditions.find((c) => c.type === 'Available');
  if (available?.status === 'True') return true;
  if (available?.status === 'False') {
    const since = available.lastTransitionTime ? new Date(available.lastTransitionTime).getTime() : undefined;
    if (since !== undefined && now.getTime() - since >= unavailableAfterSeconds * 1000) return false;
  }
  return undefined;
}

/** `source.component` on core/v1; `reportingComponent` is events.k8s.io/v1's `reportingController`. */
function reportedBy(event: CoreEvent, reporter: string): boolean {
  return event.source?.component === reporter || event.reportingComponent === reporter;
}

/**
 * The last time the event was seen, in milliseconds (0 when it carries no time).
 * The creation time is only a fallback: a recorder may write an old event late.
 */
export function eventTime(event: CoreEvent): number {
  const ms = (t: Date | string | undefined | null) => (t ? new Date(t).getTime() : NaN);
  const seen = [ms(event.series?.lastObservedTime), ms(event.lastTimestamp), ms(event.eventTime)].filter(
    Number.isFinite,
  );
  if (seen.length) return Math.max(...seen);
  const first = ms(event.firstTimestamp);
  if (Number.isFinite(first)) return first;
  const created = ms(event.metadata?.creationTimestamp);
  return Number.isFinite(created) ? created : 0;
}

/** A Deployment selector as a label-selector query string. */
export function labelSelectorString(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    switch (e.operator) {
      case 'In':
        parts.push(`${e.key} in (${values})`);
        break;
      case 'NotIn':
        parts.push(`${e.key} notin (${values})`);
        break;
      case 'Exists':
        parts.push(e.key);
        break;
      case 'DoesNotExist':
        parts.push(`!${e.key}`);
        break;
      default:
        throw new McoError('Invalid', `Deployment selector operator "${e.operator}" is not known`, false);
    }
  }
  return parts.join(',');
}
