import type { Command } from '../cli.js';

/** A subcommand as `mco --help` lists it; its module is imported only when it runs. */
export interface CommandEntry {
  readonly name: string;
  /** One line for `mco --help`. */
  readonly summary: string;
  load(): Promise<Command>;
}

// Loaded on demand, so that a command loads only its own dependencies: only
// `mco inventory` (its providers take a client-node KubeConfig) and `mco
// clusters` (it reads kubeconfig files with it) load @kubernetes/client-node
// (about 65 MiB; docs/performance.md).
/** Every `mco` subcommand, in the order `mco --help` lists them. */
export const commands: readonly CommandEntry[] = [
  {
    name: 'decide',
    summary: 'Evaluate one placement against a fleet snapshot and print the decision as JSON',
    load: async () => (await import('./decide.js')).decideCommand,
  },
  {
    name: 'explain',
    summary: 'Explain why a placement is (not) on each cluster, from a decide input file or live from the hub',
    load: async () => (await import('./explain.js')).explainCommand,
  },
  {
    name: 'controller',
    summary: 'Run the hub controller: decide every placement and write its status and PlacementDecisions',
    load: async () => (await import('./controller.js')).controllerCommand,
  },
  {
    name: 'dashboard',
    summary: 'Serve a read-only live web page of the hub: the fleet and every placement, updated as they change',
    load: async () => (await import('./dashboard.js')).dashboardCommand,
  },
  {
    name: 'clusters',
    summary:
      'Declare member clusters as ClusterProfiles (apply, from-kubeconfig, list); take them out of service (taint, cordon, drain)',
    load: async () => (await import('./clusters.js')).clustersCommand,
  },
  {
    name: 'inventory',
    summary: 'Run inventory providers that keep the hub ClusterProfiles in step (manual, GKE fleet, ...)',
    load: async () => (await import('./inventory.js')).inventoryCommand,
  },
  {
    name: 'simulate',
    summary: 'Run a placement through a simulated fleet and compare it with baselines (HTML report)',
    load: async () => (await import('./simulate.js')).simulateCommand,
  },
  {
    name: 'demo',
    summary: 'See mco work without a cluster: a simulated regional GPU stockout (prints a timeline, writes a report)',
    load: async () => (await import('./demo.js')).demoCommand,
  },
  {
    name: 'argocd-plugin',
    summary: 'Serve the Argo CD ApplicationSet plugin generator (read-only)',
    load: async () => (await import('./argocd-plugin.js')).argocdPluginCommand,
  },
  {
    name: 'argocd-sync',
    summary: 'Refresh Argo CD ApplicationSets and/or sync ClusterProfiles to Argo CD cluster Secrets',
    load: async () => (await import('./argocd-sync.js')).argocdSyncCommand,
  },
  {
    name: 'flux',
    summary:
      'Keep Flux input providers or rendered Kustomizations/HelmReleases, and kubeconfig Secrets, per placed cluster',
    load: async () => (await import('./flux.js')).fluxCommand,
  },
  {
    name: 'configsync',
    summary: 'Deliver placements with Config Sync: a RepoSync or RootSync on every placed member cluster',
    load: async () => (await import('./configsync.js')).configsyncCommand,
  },
];
