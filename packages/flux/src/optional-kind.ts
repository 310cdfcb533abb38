import type { Informer, KubeClient, KubeObject, Resource } from '@mco/kube-runtime';
import { httpStatusOf, toMcoError, type Logger } from '@mco/runtime';
import type { ObjectCache } from './sync.js';

/** The cache of a kind whose CRD may be missing; `start`/`stop` like an informer's. */
export interface OptionalCache extends ObjectCache<KubeObject> {
  start(): void;
  stop(): Promise<void>;
}

export interface OptionalCacheOptions {
  readonly hub: KubeClient;
  readonly resource: Resource;
  /** The informer to run once the API serves the kind. */
  readonly createInformer: () => Informer<KubeObject>;
  /** Called when that informer has synced (its first list may be empty, so no event says so). */
  readonly onAvailable: () => void;
  /** How often discovery is asked again while the kind is not served. */
  readonly pollMs: number;
  readonly logger: Logger;
}

/**
 * A kind mco watches only where its CRD is installed (HelmRelease without
 * helm-controller): while the API does not serve it, the cache is synced and
 * empty (no such object can exist) and one warning says so; discovery is asked
 * again every `pollMs`, and the informer starts once the CRD is there. Before
 * discovery first answers, the cache has not synced, so nothing is decided on
 * a guess.
 */
export function createOptionalCache(options: OptionalCacheOptions): OptionalCache {
  const { hub, resource, logger } = options;
  const name = `${resource.plural}.${resource.group}`;
  const handlers: Parameters<ObjectCache<KubeObject>['addHandler']>[0][] = [];
  let informer: Informer<KubeObject> | undefined;
  let absent = false;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;

  async function served(): Promise<boolean> {
    try {
      const list = await hub.get<{ resources?: { name?: string }[] }>(`/apis/${resource.group}/${resource.version}`);
      return (list.resources ?? []).some((r) => r.name === resource.plural);
    } catch (error) {
      if (httpStatusOf(error) === 404) return false;
      throw error;
    }
  }

  async function check(): Promise<void> {
    let isServed: boolean;
    try {
      isServed = await served();
    } catch (error) {
      logger.warn('cannot tell whether a CRD is installed; asking again', { crd: name, error: toMcoError(error) });
      schedule();
      return;
    }
    if (stopped) return;
    if (!isServed) {
      if (!absent) {
        logger.warn(`${name} is not installed: not watching or writing that kind until its CRD is installed`, {
          crd: name,
          checkEverySeconds: Math.round(options.pollMs / 1000),
        });
      }
      absent = true;
      schedule();
      return;
    }
    if (absent) logger.info('CRD installed: watching it now', { crd: name });
    absent = false;
    const started = options.createInformer();
    for (const handler of handlers) started.addHandler(handler);
    informer = started;
    started.start();
    void started.waitForSync().then(() => {
      if (!stopped) options.onAvailable();
    });
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => void check(), options.pollMs);
    timer.unref();
  }

  return {
    get: (key) => informer?.get(key),
    list: () => informer?.list() ?? [],
    hasSynced: () => (informer ? informer.hasSynced() : absent),
    served: () => !absent,
    addHandler(handler) {
      handlers.push(handler);
      informer?.addHandler(handler);
    },
    start() {
      if (!stopped) return;
      stopped = false;
      void check();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await informer?.stop();
    },
  };
}
