/** What mco reports for one placed cluster. */
export type ClusterPhase =
  | 'Synced' // the reconciler synced a commit and reports no error
  | 'Syncing' // applied; the reconciler is working or has not reported yet
  | 'Error' // the reconciler reports errors, or the sync is stalled
  | 'Unreachable' // mco could not read or write the member (kept as it is, retried)
  | 'NotOwned' // an object of that name exists and is not mco's: left alone
  | 'Deleting'; // the cluster left the placement; waiting for Config Sync's finalizer

export interface ClusterReport {
  readonly cluster: string;
  readonly phase: ClusterPhase;
  readonly message: string;
}

interface ErrorSummary {
  totalCount?: number;
}
interface SyncErrors {
  errorSummary?: ErrorSummary;
  errors?: { code?: string; errorMessage?: string }[];
  commit?: string;
}
interface SyncCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  errorSummary?: ErrorSummary;
}
/** The status fields of a RepoSync/RootSync (configsync.gke.io/v1beta1) mco reads. */
export interface SyncStatus {
  lastSyncedCommit?: string;
  source?: SyncErrors;
  rendering?: SyncErrors;
  sync?: SyncErrors;
  conditions?: SyncCondition[];
}

/**
 * Summarises a member's sync status: errors of the source, rendering and sync
 * stages (`errorSummary.totalCount`, else the listed errors) and a Stalled
 * condition are errors; a synced commit with nothing pending is Synced;
 * anything else (Reconciling/Syncing, or no status yet) is Syncing.
 */
export function summarizeSyncStatus(cluster: string, status: SyncStatus | undefined): ClusterReport {
  const stages = [
    ['source', status?.source],
    ['rendering', status?.rendering],
    ['sync', status?.sync],
  ] as const;
  const errors: string[] = [];
  let total = 0;
  for (const [stage, s] of stages) {
    const count = s?.errorSummary?.totalCount ?? s?.errors?.length ?? 0;
    total += count;
    const first = s?.errors?.[0];
    if (count > 0)
      errors.push(
        `${stage}: ${first ? `KNV${first.code ?? ''} ${first.errorMessage ?? ''}`.trim() : `${count} errors`}`,
      );
  }
  const stalled = status?.conditions?.find((c) => c.type === 'Stalled' && c.status === 'True');
  if (stalled) errors.unshift(`stalled: ${stalled.reason ?? ''} ${stalled.message ?? ''}`.trim());
  const commit = status?.lastSyncedCommit || status?.sync?.commit;
  const at = commit ? ` (last synced commit ${commit.slice(0, 12)})` : '';
  if (errors.length > 0) {
    return { cluster, phase: 'Error', message: `${total || errors.length} error(s): ${errors.join('; ')}${at}` };
  }
  const busy = status?.conditions?.find(
    (c) => (c.type === 'Reconciling' || c.type === 'Syncing') && c.status === 'True',
  );
  if (commit && !busy) return { cluster, phase: 'Synced', message: `synced commit ${commit.slice(0, 12)}` };
  return {
    cluster,
    phase: 'Syncing',
    message: busy ? `${busy.type}: ${busy.message ?? busy.reason ?? ''}`.trim() + at : `waiting for Config Sync${at}`,
  };
}

/** The condition mco keeps on a placement for Config Sync delivery. */
export const CONDITION_TYPE = 'ConfigSyncSynced';

export interface ConditionSummary {
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

const MAX_MESSAGE = 8192;

/**
 * One condition for the whole placement, with a line per cluster: True when
 * every placed cluster is Synced; False with the worst phase as reason when a
 * cluster has an error, is unreachable or is held by someone else; Unknown
 * while anything is still syncing or being deleted.
 */
export function summarizeCondition(reports: readonly ClusterReport[]): ConditionSummary {
  const sorted = [...reports].sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  let message = sorted.map((r) => `${r.cluster}: ${r.phase}: ${r.message}`).join('\n');
  if (message.length > MAX_MESSAGE) message = `${message.slice(0, MAX_MESSAGE - 1)}…`;
  const has = (phase: ClusterPhase) => reports.some((r) => r.phase === phase);
  if (reports.length === 0) return { status: 'Unknown', reason: 'NoClusters', message: 'no cluster is placed' };
  for (const phase of ['Error', 'Unreachable', 'NotOwned'] as const) {
    if (has(phase)) return { status: 'False', reason: phase === 'Error' ? 'SyncError' : phase, message };
  }
  if (has('Syncing') || has('Deleting'))
    return { status: 'Unknown', reason: has('Syncing') ? 'Syncing' : 'Deleting', message };
  return { status: 'True', reason: 'Synced', message };
}
