import { KubeConfig } from '@kubernetes/client-node';
import {
  CONFIG_MAPS,
  CONFIRMED_AT_KEY,
  DEFAULT_CONTROLLER_NAMESPACE,
  INVENTORY_LOSS_CONFIRMATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from '@mco/controller';
import {
  CLUSTER_MANAGER_LABEL,
  CONTROL_PLANE_HEALTHY,
  formatTaint,
  TAINTS_ANNOTATION,
  type ClusterProfile,
} from '@mco/core';
import {
  ClusterDeclarationSchema,
  MANUAL_MANAGER,
  applyClustersFile,
  clusterFromKubeconfig,
  resolveClusterDeclarations,
  syncClusterProfiles,
  type SyncReport,
} from '@mco/provider-manual';
import { CLUSTER_PROFILES, KubeClient, objectPath, resourcePath } from '@mco/kube-runtime';
import { httpStatusOf, McoError, toMcoError } from '@mco/runtime';
import { stringify } from 'yaml';
import {
  explainFailure,
  KUBECONFIG_HELP,
  loadHub,
  UsageError,
  parseOrThrow,
  type Command,
  type Io,
  parseFlags,
} from '../cli.js';
import { loadKubeConfig } from '../client-node-hub.js';
import {
  changeTaints,
  CORDON_TAINT,
  DRAIN_TAINT,
  parseTaintChange,
  TAINT_FIELD_MANAGER,
  updateTaints,
  type TaintChange,
} from './taint.js';

const USAGE = `Usage:
  mco clusters apply -f <clusters.yaml> [--prune --manager <name> [--allow-mass-prune]] [--dry-run] [options]
  mco clusters from-kubeconfig --context <name> [--name <profile>] [--label k=v]... [--print] [options]
  mco clusters list [--manager <name>] [-o json]
  mco clusters taint NAME KEY[=VALUE]:EFFECT|KEY[:EFFECT]-... [--overwrite] [options]
  mco clusters cordon|uncordon|drain NAME [options]
  mco clusters confirm-removal [--controller-namespace <ns>] [--dry-run]

Declares member clusters as ClusterProfiles in the hub (docs/providers.md).
Profiles are owned by a cluster manager (spec.clusterManager.name and label
${CLUSTER_MANAGER_LABEL}); mco only ever changes or deletes its own.

apply           creates or updates the profiles a clusters file declares
                (status is written through /status); with --prune also deletes
                this manager's profiles that the file no longer declares
                (--manager is then required, so a laptop never prunes a
                controller's profiles under the default name; pruning more
                than half of them needs --allow-mass-prune).
                A second run over the same file writes nothing.
from-kubeconfig creates or updates ONE profile from a kubeconfig context:
                server, CA, TLS server name and proxy (never credentials).
                --print writes the clusters-file entry instead, to add to a file.
list            prints the hub's ClusterProfiles (all managers unless --manager).
taint           changes the taints of ClusterProfile NAME (annotation
                ${TAINTS_ANNOTATION}; docs/api.md), like kubectl taint:
                KEY[=VALUE]:EFFECT adds (EFFECT NoSelect, NoSelectIfNew or
                PreferNoSelect), KEY:EFFECT- removes one, KEY- every effect.
cordon          taints NAME ${formatTaint(CORDON_TAINT)}: placements add it no more.
drain           taints NAME ${formatTaint(DRAIN_TAINT)}: placements evict it (draining
                applies) unless they tolerate the taint.
uncordon        removes the cordon and drain taints.
                These write only the annotation, with their own field manager
                (${TAINT_FIELD_MANAGER}), so a provider's sync leaves them alone.
confirm-removal after a sudden loss of ClusterProfiles (Satisfied=Unknown,
                reason InventoryShrunk), confirms that their clusters really
                go, for the whole fleet: writes the time now into ConfigMap
                ${INVENTORY_LOSS_CONFIRMATION} in the controller's namespace
                (operators only; placement annotations are ignored). The
                controller then removes the clusters it held for the losses
                it saw before; a later loss needs a new confirmation.

Options:
  -f, --file <path>          clusters file, YAML or JSON (apply)
      --prune                delete owned profiles not in the file (apply; needs --manager)
      --allow-mass-prune     let --prune delete more than half of the owned profiles (a decommission)
      --dry-run              the server validates every write, nothing is stored
  -n, --namespace <ns>       namespace of clusters that name none (default fleet)
      --manager <name>       cluster manager name (default ${MANUAL_MANAGER})
      --context <name>       the member's context (from-kubeconfig)
      --source <path>        kubeconfig holding that context (default: $KUBECONFIG or ~/.kube/config)
      --name <profile>       profile name (from-kubeconfig; default: the context name)
      --label k=v            label (from-kubeconfig; repeatable)
      --property k=v         status property (from-kubeconfig; repeatable)
      --access-provider <n>  access provider name (default kubeconfig)
      --print                print the clusters-file entry, write nothing (from-kubeconfig)
      --kubeconfig <path>    ${KUBECONFIG_HELP}
      --hub-context <name>   hub context (default: the current context)
  -o, --output <format>      list: table (default) or json
      --overwrite            taint: replace a taint of the same key and effect
      --controller-namespace <ns>
                             confirm-removal: the controller's namespace (default ${DEFAULT_CONTROLLER_NAMESPACE})
  -h, --help                 show this help

Exit codes: 0 done, 1 a write failed or a declared name belongs to another
manager, 2 bad usage or an invalid clusters file (the message names the field).`;

export const clustersCommand: Command = {
  name: 'clusters',
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parseFlags({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        file: { type: 'string', short: 'f' },
        prune: { type: 'boolean' },
        'allow-mass-prune': { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        namespace: { type: 'string', short: 'n' },
        manager: { type: 'string' },
        context: { type: 'string' },
        source: { type: 'string' },
        name: { type: 'string' },
        label: { type: 'string', multiple: true },
        property: { type: 'string', multiple: true },
        'access-provider': { type: 'string' },
        print: { type: 'boolean' },
        kubeconfig: { type: 'string' },
        'hub-context': { type: 'string' },
        output: { type: 'string', short: 'o' },
        overwrite: { type: 'boolean' },
        'controller-namespace': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    const [verb, ...extra] = positionals;
    if (values.help || verb === undefined) {
      io.stdout(`${USAGE}\n`);
      return values.help ? 0 : 2;
    }
    if (TAINT_VERBS.has(verb)) {
      return await taintCommand(
        verb,
        extra,
        values.namespace ?? 'fleet',
        values.overwrite ?? false,
        () => new KubeClient(loadHub(values.kubeconfig, values['hub-context'])),
        io,
      );
    }
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
    const namespace = values.namespace ?? 'fleet';
    const manager = values.manager ?? MANUAL_MANAGER;
    const hub = () => loadKubeConfig(values.kubeconfig, values['hub-context']);
    // The one-shot reads and annotations: mco's own client, with its request deadline.
    const hubClient = () => new KubeClient(loadHub(values.kubeconfig, values['hub-context']));
    try {
      switch (verb) {
        case 'apply': {
          if (!values.file) throw new UsageError('apply needs -f <clusters file>');
          // The default name is shared by every hand-run apply and the manual provider: pruning under it
          // from a laptop would delete profiles another file declares.
          if (values.prune && !values.manager)
            throw new UsageError('apply --prune needs --manager <name>: the manager whose profiles may be deleted');
          if (values['allow-mass-prune'] && !values.prune) throw new UsageError('--allow-mass-prune needs --prune');
          const report = await applyClustersFile({
            kubeConfig: hub(),
            file: values.file,
            namespace,
            manager,
            prune: values.prune ?? false,
            allowMassPrune: values['allow-mass-prune'],
            dryRun: values['dry-run'],
            now: () => new Date(),
          });
          return printReport(report, io, values['dry-run'] ?? false);
        }
        case 'from-kubeconfig': {
          if (!values.context) throw new UsageError('from-kubeconfig needs --context <name>');
          const source = new KubeConfig();
          if (values.source) source.loadFromFile(values.source);
          else source.loadFromDefault();
          const declaration = parseOrThrow(
            ClusterDeclarationSchema,
            {
              name: values.name ?? values.context.toLowerCase().replace(/[^a-z0-9.-]+/g, '-'),
              ...(values.namespace ? { namespace } : {}),
              ...(values.label ? { labels: pairs(values.label, '--label') } : {}),
              ...(values.property ? { properties: pairs(values.property, '--property') } : {}),
              ...(values['access-provider'] ? { accessProvider: values['access-provider'] } : {}),
              ...(await clusterFields(source, values.context)),
            },
            `cluster from context ${values.context}`,
          );
          if (values.print) {
            io.stdout(stringify({ clusters: [declaration] }));
            return 0;
          }
          const desired = await resolveClusterDeclarations([declaration], { namespace, baseDir: process.cwd() });
          const report = await syncClusterProfiles({
            kubeConfig: hub(),
            manager,
            desired,
            prune: false,
            dryRun: values['dry-run'],
            now: () => new Date(),
          });
          return printReport(report, io, values['dry-run'] ?? false);
        }
        case 'list':
          return await list(hubClient(), values.manager, values.output ?? 'table', io);
        case 'confirm-removal':
          // The guard is fleet-wide: a confirmation for one namespace would release every other's too.
          if (values.namespace !== undefined)
            throw new UsageError(
              'confirm-removal confirms for the whole fleet and takes no -n; --controller-namespace names where the confirmation is written',
            );
          return await confirmRemoval(
            hubClient(),
            values['controller-namespace'] ?? DEFAULT_CONTROLLER_NAMESPACE,
            values['dry-run'] ?? false,
            io,
          );
        default:
          throw new UsageError(
            `unknown subcommand "${verb}" (apply, from-kubeconfig, list, taint, cordon, uncordon, drain, confirm-removal)`,
          );
      }
    } catch (error) {
      if (error instanceof McoError && error.code === 'Invalid') throw new UsageError(error.message);
      if (error instanceof McoError) {
        io.stderr(`mco clusters ${verb}: ${error.message}\n`);
        return 1;
      }
      throw error;
    }
  },
};

/** The shorthand fields of a clusters-file entry for a kubeconfig context (inline CA, never credentials). */
async function clusterFields(source: KubeConfig, context: string) {
  let cluster;
  try {
    cluster = await clusterFromKubeconfig(source, context);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return {
    server: cluster.server,
    ...(cluster['certificate-authority-data']
      ? { certificateAuthorityData: cluster['certificate-authority-data'] }
      : {}),
    ...(cluster['tls-server-name'] ? { tlsServerName: cluster['tls-server-name'] } : {}),
    ...(cluster['proxy-url'] ? { proxyUrl: cluster['proxy-url'] } : {}),
    ...(cluster['insecure-skip-tls-verify'] ? { insecureSkipTlsVerify: true } : {}),
  };
}

function pairs(values: readonly string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    if (at <= 0) throw new UsageError(`${flag} ${value}: expected key=value`);
    out[value.slice(0, at)] = value.slice(at + 1);
  }
  return out;
}

function printReport(report: SyncReport, io: Io, dryRun: boolean): number {
  const created = new Set(report.created);
  const updated = [...new Set([...report.updated, ...report.statusUpdated])].filter((k) => !created.has(k)).sort();
  const lines = [
    ...report.created.map((k) => `created    ${k}`),
    ...updated.map((k) => `updated    ${k}`),
    ...report.deleted.map((k) => `deleted    ${k}`),
    ...report.unchanged.map((k) => `unchanged  ${k}`),
    ...report.skipped.map((s) => `skipped    ${s.key}: ${s.message}`),
    ...report.failed.map((f) => `failed     ${f.key}: ${explainFailure(f.error)}`),
  ];
  const summary =
    `${report.created.length} created, ${updated.length} updated, ${report.deleted.length} deleted, ` +
    `${report.unchanged.length} unchanged, ${report.skipped.length} skipped, ${report.failed.length} failed ` +
    `(${report.writes} writes${dryRun ? ', dry run: nothing stored' : ''})`;
  io.stdout(`${[...lines, summary].join('\n')}\n`);
  const first = report.failed[0];
  if (first) {
    const more = report.failed.length > 1 ? ` (and ${report.failed.length - 1} more, listed above)` : '';
    io.stderr(`mco clusters: cannot write ${first.key}${more}: ${explainFailure(first.error)}\n`);
  }
  return report.failed.length > 0 || report.skipped.length > 0 ? 1 : 0;
}

/** The field manager of the confirmation `confirm-removal` writes. */
const CONFIRM_FIELD_MANAGER = 'mco-confirm-removal';

/**
 * Writes the operator's confirmation (the time now) into the ConfigMap the
 * controller's inventory-loss guard reads: the guard then stops holding the
 * removals of the losses it saw before this write, for every placement.
 */
async function confirmRemoval(hub: KubeClient, namespace: string, dryRun: boolean, io: Io): Promise<number> {
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const where = `ConfigMap ${namespace}/${INVENTORY_LOSS_CONFIRMATION}`;
  try {
    await hub.patch(
      objectPath(CONFIG_MAPS, namespace, INVENTORY_LOSS_CONFIRMATION),
      'apply',
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: INVENTORY_LOSS_CONFIRMATION, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
        data: { [CONFIRMED_AT_KEY]: at },
      },
      { query: { fieldManager: CONFIRM_FIELD_MANAGER, force: true, dryRun: dryRun ? 'All' : undefined } },
    );
  } catch (error) {
    const hint =
      httpStatusOf(error) === 404 ? ` (is ${namespace} the controller's namespace? --controller-namespace)` : '';
    throw toMcoError(error, `write ${where}${hint}`);
  } finally {
    hub.close();
  }
  io.stdout(
    `confirmed at ${at} in ${where}${dryRun ? ' (dry run: nothing stored)' : ''}: the controller removes the clusters ` +
      `it holds for the losses of ClusterProfiles it saw before now, in every namespace\n`,
  );
  return 0;
}

async function list(hub: KubeClient, manager: string | undefined, output: string, io: Io): Promise<number> {
  if (output !== 'table' && output !== 'json') throw new UsageError(`-o ${output}: expected table or json`);
  let items: ClusterProfile[];
  try {
    const page = await hub.get<{ items: ClusterProfile[] }>(resourcePath(CLUSTER_PROFILES), {
      query: manager ? { labelSelector: `${CLUSTER_MANAGER_LABEL}=${manager}` } : {},
    });
    items = page.items;
  } catch (error) {
    io.stderr(`mco clusters list: ${(error as Error).message}\n`);
    return 1;
  } finally {
    hub.close();
  }
  const rows = items
    .map((p) => ({
      namespace: p.metadata.namespace,
      name: p.metadata.name,
      manager: p.spec?.clusterManager?.name ?? '',
      server: p.status?.accessProviders?.[0]?.cluster?.server ?? '',
      healthy: p.status?.conditions?.find((c) => c.type === CONTROL_PLANE_HEALTHY)?.status ?? 'Unknown',
    }))
    .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
  if (output === 'json') {
    io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  const header = { namespace: 'NAMESPACE', name: 'NAME', manager: 'MANAGER', server: 'SERVER', healthy: 'HEALTHY' };
  const table = [header, ...rows];
  const width = (key: keyof typeof header) => Math.max(...table.map((r) => r[key].length));
  const keys = Object.keys(header) as (keyof typeof header)[];
  io.stdout(
    `${table.map((r) => keys.map((k, i) => (i === keys.length - 1 ? r[k] : r[k].padEnd(width(k)))).join('  ')).join('\n')}\n`,
  );
  return 0;
}

const TAINT_VERBS = new Set(['taint', 'cordon', 'uncordon', 'drain']);

/** `taint`, `cordon`, `uncordon`, `drain`: NAME is `name` (in --namespace) or `namespace/name`. */
async function taintCommand(
  verb: string,
  args: readonly string[],
  defaultNamespace: string,
  overwrite: boolean,
  hub: () => KubeClient,
  io: Io,
): Promise<number> {
  const [target, ...rest] = args;
  if (!target) throw new UsageError(`${verb} needs the ClusterProfile NAME`);
  const [namespace, name] = target.includes('/') ? target.split('/', 2) : [defaultNamespace, target];
  let changes: TaintChange[];
  switch (verb) {
    case 'taint':
      if (rest.length === 0) throw new UsageError('taint needs KEY[=VALUE]:EFFECT or KEY[:EFFECT]-');
      changes = rest.map(parseTaintChange);
      break;
    case 'cordon':
      changes = [{ add: CORDON_TAINT }];
      break;
    case 'drain':
      changes = [{ add: DRAIN_TAINT }];
      break;
    default:
      changes = [];
  }
  if (verb !== 'taint' && rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  const client = hub();
  try {
    const result = await updateTaints(client, namespace!, name!, (current) =>
      verb === 'uncordon'
        ? current.filter((t) => ![CORDON_TAINT, DRAIN_TAINT].some((c) => c.key === t.key && c.effect === t.effect))
        : changeTaints(current, changes, new Date(), overwrite),
    );
    const list = result.after.map(formatTaint).join(', ') || 'none';
    const changed = JSON.stringify(result.before) !== JSON.stringify(result.after);
    io.stdout(`${result.key} ${changed ? `${verb}ed` : 'unchanged'}; taints: ${list}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    io.stderr(`mco clusters ${verb}: ${describe(error)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

function describe(error: unknown): string {
  const code = (error as { code?: number }).code;
  if (code === 404) return 'no such ClusterProfile';
  if (code === 409) return 'the ClusterProfile changed while it was updated; run the command again';
  return (error as Error).message;
}
