import type { ClusterProfile, Placement } from '@mco/core';
import { McoError, silentLogger, toMcoError, type Logger, type ReconcileRecorder } from '@mco/runtime';
import { selectAccessProvider } from './access.js';
import { placementsOf, REFRESH_ANNOTATION, type ApplicationSetLike } from './applicationsets.js';
import { createPlacementCheck, type ObjectCache } from './cache.js';
import { placementParameters, type ProfileLookup } from './parameters.js';

/** What the refresher needs from the API server (`createApplicationSetClient` implements it). */
export interface ApplicationSetClient {
  list(): Promise<ApplicationSetLike[]>;
  /**
   * Merge-patches the refresh annotation onto one ApplicationSet; resolves
   * quietly if it is gone. `stale`: the annotation is there already (Argo CD
   * keeps it after a failed reconcile), so it is removed first: Argo CD
   * reconciles when the annotation appears, not when it is written again.
   */
  refresh(namespace: string, name: string, stale: boolean): Promise<void>;
}

export interface RefresherOptions {
  readonly placements: ObjectCache<Placement>;
  readonly clusterProfiles: ObjectCache<ClusterProfile>;
  readonly applicationSets: ApplicationSetClient;
  readonly accessProviderNames?: readonly string[];
  /** The `server` of a profile, as the plugin answers it (see PluginServerOptions.serverOf). */
  readonly serverOf?: (profile: ClusterProfile) => string | null;
  /** Changes within this window are refreshed together (default 200 ms). */
  readonly debounceMs?: number;
  /** Retry delay after a failed list or patch, doubled up to 60 s (default 1 s). */
  readonly retryMs?: number;
  /**
   * Whether the plugin answers (its /readyz); false when it cannot be reached.
   * When it turns ready after being unready, every ApplicationSet that uses
   * mco's plugin generator is refreshed once: Argo CD retries a failed
   * generation only minutes later, so a change made while the plugin was down
   * would wait that long.
   */
  readonly pluginReady?: () => Promise<boolean>;
  /** How often `pluginReady` is asked (default 2 s). */
  readonly probeIntervalMs?: number;
  readonly logger?: Logger;
  /** Each refresh pass is recorded (`reconcileMetrics` of @mco/runtime). */
  readonly reconciles?: ReconcileRecorder;
}

export interface Refresher {
  /** Starts reacting to cache events; call before the caches start so no event is missed. */
  start(): void;
  stop(): void;
  /** Resolves when no refresh is pending or running (for tests and shutdown). */
  idle(): Promise<void>;
}

/**
 * Argo CD only calls the plugin on its poll interval. When the plugin's
 * answer for a placement changes (a cluster joins or leaves the list, a
 * `desiredMaxReplicas`, `desiredMinReplicas` or state changes, a profile's labels or server change),
 * the refresher merge-patches `argocd.argoproj.io/application-set-refresh:
 * "true"` onto every ApplicationSet whose plugin generator names that
 * placement, so Argo CD regenerates at once. Answers the plugin would refuse
 * (503/500) trigger nothing: Argo CD would only get the error.
 */
export function createApplicationSetRefresher(options: RefresherOptions): Refresher {
  const logger = (options.logger ?? silentLogger).child({ component: 'applicationset-refresher' });
  const debounceMs = options.debounceMs ?? 200;
  const baseRetryMs = options.retryMs ?? 1000;
  const lookup: ProfileLookup = {
    clusterProfile: (namespace, name) => options.clusterProfiles.get(`${namespace}/${name}`),
    serverOf:
      options.serverOf ??
      ((profile) => selectAccessProvider(profile, options.accessProviderNames)?.cluster.server ?? null),
  };
  const checkPlacement = createPlacementCheck();
  /** The last answer seen per placement key, as JSON; absent until the caches synced. */
  const answers = new Map<string, string>();
  const dirty = new Set<string>();
  let allDirty = false;
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let retryMs = baseRetryMs;
  let started = false;
  let baselined = false;
  /** Refresh every ApplicationSet that uses the plugin (it became ready again). */
  let refreshAll = false;
  let probeTimer: NodeJS.Timeout | undefined;
  /** The plugin's last probed readiness; undefined before the first probe. */
  let pluginWasReady: boolean | undefined;

  const synced = () => options.placements.hasSynced() && options.clusterProfiles.hasSynced();

  const schedule = (delayMs: number) => {
    if (!started || timer || running) return;
    timer = setTimeout(() => {
      timer = undefined;
      // flush() handles API errors itself; anything else is a bug, logged and retried, never an unhandled rejection.
      let failed = false;
      running = flush()
        .catch((error: unknown) => {
          failed = true;
          allDirty = true;
          logger.error('refreshing ApplicationSets failed unexpectedly; retrying', {
            error: toMcoError(error),
            retryInMs: retryMs,
          });
        })
        .finally(() => {
          running = undefined;
          const delay = failed || pending.size > 0 ? retryMs : debounceMs;
          if (failed) retryMs = Math.min(retryMs * 2, 60_000);
          if (dirty.size > 0 || allDirty || pending.size > 0 || refreshAll) schedule(delay);
        });
    }, delayMs);
  };

  /** The plugin's answer for a cached placement; undefined for one it would refuse or cannot read. */
  const answerOf = (placement: Placement): string | undefined => {
    // One odd object is skipped (the plugin refuses it too), never a crash.
    if (checkPlacement(placement) instanceof McoError) return undefined;
    const result = placementParameters(placement, lookup);
    return result.ok ? JSON.stringify(result.value) : undefined;
  };

  /** Compares answers with the last seen ones; changed placements become pending. */
  const diff = () => {
    const keys = allDirty ? new Set([...answers.keys(), ...options.placements.list().map(keyOf)]) : new Set(dirty);
    dirty.clear();
    allDirty = false;
    for (const key of keys) {
      const placement = options.placements.get(key);
      if (!placement) {
        answers.delete(key);
        continue;
      }
      const answer = answerOf(placement);
      if (answer === undefined) continue;
      const before = answers.get(key);
      answers.set(key, answer);
      if (baselined && before !== answer) pending.add(key);
    }
  };

  async function flush(): Promise<void> {
    if (!synced()) return;
    diff();
    if (!baselined) {
      // The first synced view is the baseline: Argo CD polls anyway, and a
      // restart of mco should not refresh every ApplicationSet in the hub.
      baselined = true;
      return;
    }
    if (pending.size === 0 && !refreshAll) return;
    const keys = new Set(pending);
    // Taken now: the plugin may turn ready again while this pass runs.
    const all = refreshAll;
    refreshAll = false;
    try {
      const appSets = await options.applicationSets.list();
      for (const appSet of appSets) {
        const namespace = appSet.metadata?.namespace;
        const name = appSet.metadata?.name;
        if (!namespace || !name) continue;
        const used = placementsOf(appSet).filter((key) => all || keys.has(key));
        if (used.length === 0) continue;
        const stale = appSet.metadata?.annotations?.[REFRESH_ANNOTATION] !== undefined;
        await options.applicationSets.refresh(namespace, name, stale);
        logger.info('refreshed ApplicationSet', {
          applicationSet: `${namespace}/${name}`,
          placements: used,
          ...(stale ? { replacedStaleAnnotation: true } : {}),
          ...(all ? { reason: 'plugin ready again' } : {}),
        });
      }
      for (const key of keys) pending.delete(key);
      retryMs = baseRetryMs;
      options.reconciles?.record('ok');
    } catch (error) {
      options.reconciles?.record('error');
      refreshAll ||= all;
      logger.warn('refreshing ApplicationSets failed; retrying', { error: toMcoError(error), retryInMs: retryMs });
      retryMs = Math.min(retryMs * 2, 60_000);
    }
  }

  const onPlacement = (_event: string, placement: Placement) => {
    dirty.add(keyOf(placement));
    schedule(debounceMs);
  };
  const onProfile = () => {
    allDirty = true;
    schedule(debounceMs);
  };
  let handlersAdded = false;

  const probe = options.pluginReady;
  const probeIntervalMs = options.probeIntervalMs ?? 2000;
  /** Bumped by stop(), so a probe still running from before a restart ends its loop. */
  let probeRound = 0;
  const probeOnce = async (round: number) => {
    const ready = await probe!().catch(() => false);
    if (!started || round !== probeRound) return;
    if (ready && pluginWasReady === false) {
      logger.info('the plugin is ready again; refreshing the ApplicationSets that use it');
      refreshAll = true;
      schedule(0);
    } else if (!ready && pluginWasReady !== false) {
      logger.info('the plugin is not ready; its ApplicationSets are refreshed when it is');
    }
    pluginWasReady = ready;
    probeTimer = setTimeout(() => void probeOnce(round), probeIntervalMs);
  };

  return {
    start() {
      if (started) return;
      started = true;
      if (!handlersAdded) {
        handlersAdded = true;
        options.placements.addHandler((event, placement) => started && onPlacement(event, placement));
        options.clusterProfiles.addHandler(() => started && onProfile());
      }
      allDirty = true;
      schedule(0);
      if (probe) void probeOnce(probeRound);
    },
    stop() {
      started = false;
      clearTimeout(timer);
      timer = undefined;
      clearTimeout(probeTimer);
      probeTimer = undefined;
      probeRound++;
      pluginWasReady = undefined;
    },
    async idle() {
      for (;;) {
        if (running) await running;
        else if (timer) await new Promise((resolve) => setTimeout(resolve, debounceMs));
        else return;
      }
    },
  };
}

function keyOf(placement: Placement): string {
  return `${placement.metadata.namespace ?? ''}/${placement.metadata.name}`;
}
