import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { LeaderElector, objectPath, type KubeClient } from '@mco/kube-runtime';
import { silentLogger, type Logger } from '@mco/runtime';
import { isValidSecretName } from './cluster-secret.js';

const PREFIX = 'mco-secret-manager';

/**
 * The Lease that a Secret manager name is held by, in the Argo CD namespace:
 * `mco-secret-manager.<manager>`, or a hash of the manager when the managed-by
 * label value is no valid Lease name (upper case, `_`).
 */
export function managerLeaseName(manager: string): string {
  const readable = `${PREFIX}.${manager}`;
  if (isValidSecretName(readable)) return readable;
  return `${PREFIX}-${createHash('sha256').update(manager).digest('hex').slice(0, 16)}`;
}

export interface ManagerLeaseOptions {
  /** The hub. */
  readonly client: KubeClient;
  /** The Argo CD namespace, where the Secrets and the Lease live. */
  readonly namespace: string;
  readonly manager: string;
  /** Default: host name (the pod's name) and a random suffix. */
  readonly identity?: string;
  /** Lease timing (default 15 s, 10 s, 2 s): a crashed holder's name is free a lease duration after its last renewal. */
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  /** How often a syncer that does not hold the name says so (default 60 s). */
  readonly reportEveryMs?: number;
  readonly logger?: Logger;
  readonly onAcquired: () => void;
  readonly onLost: () => void;
}

export interface ManagerLease {
  readonly name: string;
  readonly identity: string;
  /** True while this syncer holds the manager name. */
  held(): boolean;
  /** Stops; releases the Lease when held, so another syncer takes over at once. */
  stop(): Promise<void>;
}

/**
 * Makes a Secret manager name unique among live syncers: two syncers with one
 * `--secret-manager` in one namespace would each take the other's Secrets for
 * orphans and delete them. A syncer writes only while it holds the Lease of its
 * manager name (@mco/kube-runtime's leader election); one that finds it held by
 * another live syncer writes nothing, logs an error naming the holder every
 * `reportEveryMs`, and takes over when the holder releases it or stops renewing
 * it (a crash). Replicas of one Deployment so become warm standbys.
 */
export function holdManagerName(options: ManagerLeaseOptions): ManagerLease {
  const name = managerLeaseName(options.manager);
  const identity = options.identity ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  const logger = (options.logger ?? silentLogger).child({ component: 'argocd-cluster-sync' });
  const lease = `${options.namespace}/${name}`;
  let leading = false;
  const elector = new LeaderElector({
    client: options.client,
    namespace: options.namespace,
    name,
    identity,
    ...(options.leaseDurationMs !== undefined ? { leaseDurationMs: options.leaseDurationMs } : {}),
    ...(options.renewDeadlineMs !== undefined ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
    ...(options.retryPeriodMs !== undefined ? { retryPeriodMs: options.retryPeriodMs } : {}),
    logger,
    onStartedLeading: () => {
      logger.info('holding the cluster Secret manager name; syncing cluster Secrets', {
        manager: options.manager,
        lease,
      });
      leading = true;
      options.onAcquired();
    },
    onStoppedLeading: () => {
      leading = false;
      options.onLost();
    },
  });
  const leasePath = objectPath(
    { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' },
    options.namespace,
    name,
  );
  let reporting: NodeJS.Timeout | undefined;
  const report = async () => {
    if (leading) return;
    let holder = '';
    try {
      const current = await options.client.get<{ spec?: { holderIdentity?: string } }>(leasePath, {
        timeoutMs: 10_000,
      });
      holder = current.spec?.holderIdentity ?? '';
    } catch {
      // Only for the message: the elector itself retries and logs API errors.
    }
    if (leading || !holder || holder === identity) return;
    logger.error(
      `cluster Secret manager "${options.manager}" is in use by another live syncer (${holder}); ` +
        `this syncer writes no cluster Secrets until that one stops: give each syncer into one namespace its own --secret-manager`,
      { manager: options.manager, lease, holder },
    );
  };
  // The first report once a candidate had time to win a free Lease, then periodically.
  const firstReportMs = (options.retryPeriodMs ?? 2000) * 2;
  reporting = setTimeout(function tick() {
    void report().finally(() => {
      if (reporting) reporting = setTimeout(tick, options.reportEveryMs ?? 60_000).unref();
    });
  }, firstReportMs).unref();
  elector.start();
  return {
    name,
    identity,
    held: () => elector.isLeader(),
    async stop() {
      clearTimeout(reporting);
      reporting = undefined;
      await elector.stop();
    },
  };
}
