import {
  McoError,
  silentLogger,
  toMcoError,
  type InventoryProvider,
  type InventoryProviderModule,
  type PluginDeps,
} from '@mco/runtime';
import {
  createSyncMetrics,
  ownedCount,
  runSyncLoop,
  syncClusterProfiles,
  type SyncOutcome,
} from '@mco/provider-manual';
import { Gauge, type Registry } from 'prom-client';
import { z } from 'zod';
import { AuthConfigSchema, createTokenSource } from './auth.js';
import { DEFAULT_HUB_ENDPOINT, listMemberships } from './hub-client.js';
import { planFleet } from './mapping.js';
import { MEMBERSHIP_STATES } from './membership.js';

/** Default cluster manager name. Google's own managed sync uses `gke-fleet`; see docs/providers.md before reusing it. */
export const GKE_FLEET_MANAGER = 'mco-gke-fleet';

const Namespace = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a lower-case DNS label');
const HttpsUrl = z.url({ protocol: /^https?$/ });

export const gkeFleetConfigSchema = z.strictObject({
  /** Fleet host project: ID or number. */
  project: z.string().regex(/^[a-z0-9][-a-z0-9:.]{0,99}$/, 'must be a Google Cloud project ID or number'),
  /** Namespace of every ClusterProfile (a namespaced Role suffices). */
  namespace: Namespace.default('fleet'),
  managerName: z
    .string()
    .min(1)
    .max(63)
    .regex(/^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/, 'must be a valid label value')
    .default(GKE_FLEET_MANAGER),
  hubEndpoint: HttpsUrl.default(DEFAULT_HUB_ENDPOINT),
  /** One Connect Gateway URL for every location (e.g. a private endpoint); per-location hosts by default. */
  connectGatewayEndpoint: HttpsUrl.optional(),
  monitoringEndpoint: HttpsUrl.default('https://monitoring.googleapis.com'),
  /** AIP-160 membership filter, e.g. `labels.env = "prod"`. */
  filter: z.string().max(1024).optional(),
  pageSize: z.number().int().min(1).max(1000).optional(),
  copyLabels: z.boolean().default(true),
  /** Let one sync prune more than half of the owned profiles (a real decommission; set it back afterwards). */
  allowMassPrune: z.boolean().default(false),
  pollSeconds: z.number().positive().default(60),
  requestTimeoutSeconds: z.number().positive().default(30),
  backoff: z
    .strictObject({
      initialSeconds: z.number().positive().default(5),
      maxSeconds: z.number().positive().default(300),
    })
    .default({ initialSeconds: 5, maxSeconds: 300 }),
  auth: AuthConfigSchema,
});
export type GkeFleetConfig = z.output<typeof gkeFleetConfigSchema>;

// The provider contract (docs/writing-a-provider.md): kind, name, configSchema, create.
export const kind = 'inventory';
export const name = 'gke-fleet';
export const configSchema = gkeFleetConfigSchema;

/**
 * Mirrors a GKE fleet's memberships as ClusterProfiles: polls GKE Hub every
 * `pollSeconds`, with exponential backoff after a failure. A listing that is
 * not complete (unreachable locations, an error, a timeout) changes nothing.
 */
export function create(config: GkeFleetConfig, deps: PluginDeps): InventoryProvider {
  return { run: (abort) => runSyncLoop({ ...fleetSyncLoop(config, deps), abort, logger: loggerOf(config, deps) }) };
}

/** The module the mco app registers: the three exports above, plus its kind. */
export const gkeFleetProvider: InventoryProviderModule<GkeFleetConfig> = { kind, name, configSchema, create };

function loggerOf(config: GkeFleetConfig, deps: PluginDeps) {
  return (deps.logger ?? silentLogger).child({ provider: name, manager: config.managerName, project: config.project });
}

/** One sync pass of the GKE fleet provider, exposed for `run` and tests. */
export function createFleetSync(
  config: GkeFleetConfig,
  deps: PluginDeps,
): (abort: AbortSignal) => Promise<SyncOutcome> {
  const logger = loggerOf(config, deps);
  const metrics = createSyncMetrics(deps.metrics, 'mco_gke_fleet', config.managerName);
  const memberships = membershipGauge(deps.metrics);
  const timeoutMs = config.requestTimeoutSeconds * 1000;
  const tokens = createTokenSource(config.auth, { now: deps.now, timeoutMs });
  const fail = (reason: string, error: McoError): SyncOutcome => {
    metrics.recordError(reason);
    return { ok: false, reason, error };
  };
  return async (abort) => {
    const listing = await listMemberships(
      {
        endpoint: config.hubEndpoint,
        project: config.project,
        tokens,
        timeoutMs,
        pageSize: config.pageSize,
        filter: config.filter,
      },
      abort,
    );
    if (!listing.ok) return fail(listing.reason, listing.error);
    let plan;
    try {
      plan = planFleet(listing.memberships, {
        namespace: config.namespace,
        project: config.project,
        monitoringEndpoint: config.monitoringEndpoint,
        connectGatewayEndpoint: config.connectGatewayEndpoint,
        copyLabels: config.copyLabels,
      });
    } catch (error) {
      return fail('Invalid', new McoError('Invalid', (error as Error).message, false));
    }
    for (const state of new Set([...MEMBERSHIP_STATES, ...Object.keys(plan.states)]))
      memberships.set({ manager: config.managerName, state }, plan.states[state] ?? 0);
    for (const note of plan.notes) logger.info('membership without a written profile', note);
    let report;
    try {
      report = await syncClusterProfiles({
        kubeConfig: deps.kubeConfig,
        manager: config.managerName,
        desired: plan.desired,
        retain: plan.retain,
        prune: true,
        allowMassPrune: config.allowMassPrune,
        namespaces: [config.namespace],
        now: deps.now,
        logger,
        abort,
      });
    } catch (error) {
      if (abort.aborted) throw error;
      return fail('KubernetesError', toMcoError(error));
    }
    for (const s of report.skipped)
      logger.warn('ClusterProfile skipped', { cluster: s.key, reason: s.reason, detail: s.message });
    if (report.failed.length > 0) return fail('WriteFailed', report.failed[0]!.error);
    metrics.recordSuccess(deps.now(), ownedCount(report));
    logger.info('fleet synced', {
      memberships: listing.memberships.length,
      pages: listing.pages,
      created: report.created.length,
      deleted: report.deleted.length,
      writes: report.writes,
    });
    return { ok: true };
  };
}

function fleetSyncLoop(config: GkeFleetConfig, deps: PluginDeps) {
  return {
    sync: createFleetSync(config, deps),
    intervalMs: config.pollSeconds * 1000,
    backoff: { initialMs: config.backoff.initialSeconds * 1000, maxMs: config.backoff.maxSeconds * 1000 },
  };
}

function membershipGauge(registry: Registry): Gauge<'manager' | 'state'> {
  const metricName = 'mco_gke_fleet_memberships';
  return (
    (registry.getSingleMetric(metricName) as Gauge<'manager' | 'state'> | undefined) ??
    new Gauge({
      name: metricName,
      help: 'Memberships in the last complete listing, by state.',
      labelNames: ['manager', 'state'],
      registers: [registry],
    })
  );
}
