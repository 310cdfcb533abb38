// An example third-party inventory provider: mirrors the clusters listed by a
// CMDB's HTTP export as ClusterProfiles. It is what docs/writing-a-provider.md
// builds, with the same three exports every provider package has, and shows
// the two rules that matter: prune only from a complete listing, and let
// syncClusterProfiles do ownership, /status and write-only-on-change.
//
// The export it reads (GET {url}, JSON):
//   {"complete": true, "clusters": [{"name": "eu-1", "server": "https://...",
//     "caData": "<base64 PEM>", "labels": {"region": "eu"}, "healthy": true}]}
import { readFile } from 'node:fs/promises';
import {
  createSyncMetrics,
  isLabelValue,
  isQualifiedKey,
  ownedCount,
  runSyncLoop,
  syncClusterProfiles,
  type DesiredClusterProfile,
  type SyncOutcome,
} from '@mco/provider-manual';
import { McoError, readBoundedJson, toMcoError, type InventoryProvider, type PluginDeps } from '@mco/runtime';
import { z } from 'zod';

export const kind = 'inventory';
export const name = 'cmdb-http';

export const configSchema = z.strictObject({
  /** The CMDB export. */
  url: z.url({ protocol: /^https?$/ }),
  /** A file holding a bearer token, re-read before each request so a rotated Secret is picked up. */
  tokenFile: z.string().min(1).optional(),
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    .default('fleet'),
  managerName: z.string().min(1).max(63).default('cmdb'),
  pollSeconds: z.number().positive().default(120),
  timeoutSeconds: z.number().positive().default(10),
});
export type Config = z.output<typeof configSchema>;

const ExportSchema = z.object({
  /** The CMDB says whether the export is whole; a partial one is never used to prune. */
  complete: z.boolean(),
  clusters: z
    .array(
      z.object({
        name: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/),
        server: z.url({ protocol: /^https$/ }),
        caData: z.string().optional(),
        labels: z.record(z.string(), z.string()).optional(),
        healthy: z.boolean().optional(),
      }),
    )
    .max(10_000),
});
export type CmdbExport = z.infer<typeof ExportSchema>;

/** The pure part, easy to test: an export to the profiles it declares. */
export function toClusterProfiles(data: CmdbExport, config: Pick<Config, 'namespace'>): DesiredClusterProfile[] {
  return data.clusters.map((c) => ({
    namespace: config.namespace,
    name: c.name,
    labels: Object.fromEntries(Object.entries(c.labels ?? {}).filter(([k, v]) => isQualifiedKey(k) && isLabelValue(v))),
    status: {
      accessProviders: [
        {
          name: 'kubeconfig',
          cluster: { server: c.server, ...(c.caData ? { 'certificate-authority-data': c.caData } : {}) },
        },
      ],
      conditions:
        c.healthy === undefined
          ? []
          : [
              {
                type: 'ControlPlaneHealthy',
                status: c.healthy ? 'True' : 'False',
                reason: c.healthy ? 'CmdbHealthy' : 'CmdbUnhealthy',
              },
            ],
    },
  }));
}

export function create(config: Config, deps: PluginDeps): InventoryProvider {
  const logger = deps.logger.child({ provider: name, manager: config.managerName });
  const metrics = createSyncMetrics(deps.metrics, 'mco_cmdb_http', config.managerName);
  const sync = async (abort: AbortSignal): Promise<SyncOutcome> => {
    let data: CmdbExport;
    try {
      data = await fetchExport(config, abort);
    } catch (error) {
      const failure = toMcoError(error, `read ${config.url}`);
      metrics.recordError(failure.code);
      return { ok: false, reason: failure.code, error: failure };
    }
    const report = await syncClusterProfiles({
      kubeConfig: deps.kubeConfig,
      manager: config.managerName,
      desired: toClusterProfiles(data, config),
      prune: data.complete,
      namespaces: [config.namespace],
      now: deps.now,
      logger,
      abort,
    });
    if (report.failed.length > 0) {
      metrics.recordError('WriteFailed');
      return { ok: false, reason: 'WriteFailed', error: report.failed[0]!.error };
    }
    metrics.recordSuccess(deps.now(), ownedCount(report));
    return { ok: true };
  };
  return {
    run: (abort) =>
      runSyncLoop({
        abort,
        logger,
        sync,
        intervalMs: config.pollSeconds * 1000,
        backoff: { initialMs: 1000, maxMs: config.pollSeconds * 1000 },
      }),
  };
}

const MAX_EXPORT_BYTES = 16 * 1024 * 1024;

async function fetchExport(config: Config, abort: AbortSignal): Promise<CmdbExport> {
  const token = config.tokenFile ? (await readFile(config.tokenFile, 'utf8')).trim() : undefined;
  const response = await fetch(config.url, {
    headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    signal: AbortSignal.any([abort, AbortSignal.timeout(config.timeoutSeconds * 1000)]),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw Object.assign(new Error(`CMDB answered ${response.status}`), { status: response.status });
  }
  // Bounded even when the CMDB streams a chunked body without a length.
  const json = await readBoundedJson(response, MAX_EXPORT_BYTES);
  const parsed = ExportSchema.safeParse(json);
  if (!parsed.success) throw new McoError('Invalid', `CMDB export: ${parsed.error.issues[0]?.message}`, false);
  return parsed.data;
}
