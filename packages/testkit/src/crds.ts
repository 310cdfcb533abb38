import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireTool } from './tools.js';

/** The repository root; the same relative path from `src/` and `dist/`. */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

type Source =
  /** A file in the repository. */
  | { readonly repo: string }
  /** A file in what `tools/<tool>/build.sh` prepared (CRDs taken from the pinned Go module it builds). */
  | { readonly tool: string; readonly file: string };

/**
 * Every third-party CRD the tests install, by the file name upstream gives it,
 * and where it comes from: the chart's `crds/` (the one copy users install
 * too), the Go module a tool build pins, or the project's own structural CRD
 * where no module serves upstream's (Config Sync). Nothing here reads outside
 * the repository and the prepared tools.
 */
export const THIRD_PARTY_CRDS = {
  'multicluster.x-k8s.io_clusterprofiles.yaml': {
    repo: 'apps/mco/chart/crds/multicluster.x-k8s.io_clusterprofiles.yaml',
  },
  'multicluster.x-k8s.io_placementdecisions.yaml': {
    repo: 'apps/mco/chart/crds/multicluster.x-k8s.io_placementdecisions.yaml',
  },
  'argoproj.io_applications.yaml': { tool: 'argocd', file: 'crds/application-crd.yaml' },
  'argoproj.io_applicationsets.yaml': { tool: 'argocd', file: 'crds/applicationset-crd.yaml' },
  'kustomize.toolkit.fluxcd.io_kustomizations.yaml': {
    tool: 'flux',
    file: 'crds/kustomize.toolkit.fluxcd.io_kustomizations.yaml',
  },
  'helm.toolkit.fluxcd.io_helmreleases.yaml': {
    tool: 'helm-controller-crds',
    file: 'crds/helm.toolkit.fluxcd.io_helmreleases.yaml',
  },
  'fluxcd.controlplane.io_resourcesets.yaml': {
    tool: 'flux-operator',
    file: 'crds/fluxcd.controlplane.io_resourcesets.yaml',
  },
  'fluxcd.controlplane.io_resourcesetinputproviders.yaml': {
    tool: 'flux-operator',
    file: 'crds/fluxcd.controlplane.io_resourcesetinputproviders.yaml',
  },
  'configsync.gke.io_rootsyncs.yaml': { repo: 'packages/testkit/crds/configsync.gke.io_rootsyncs.yaml' },
  'configsync.gke.io_reposyncs.yaml': { repo: 'packages/testkit/crds/configsync.gke.io_reposyncs.yaml' },
  // Google's MCO v0.2.0 CRD, unchanged (Apache-2.0): @mco/core's compatibility tests.
  'reference-mco-v0.2.0_multikubernetesclusterplacements.yaml': {
    repo: 'packages/testkit/crds/reference-mco-v0.2.0_multikubernetesclusterplacements.yaml',
  },
} as const satisfies Record<string, Source>;

export type ThirdPartyCrd = keyof typeof THIRD_PARTY_CRDS;

/**
 * The path of a third-party CRD (see THIRD_PARTY_CRDS). One that comes from a
 * tool needs that tool prepared: list it in the suite's `tools` requirement so
 * the suite skips (outside CI) rather than fails when it is not.
 */
export function thirdPartyCrd(name: ThirdPartyCrd, env: NodeJS.ProcessEnv = process.env): string {
  const source: Source = THIRD_PARTY_CRDS[name];
  const path = 'repo' in source ? join(REPO, source.repo) : join(requireTool(source.tool, env), source.file);
  if (!existsSync(path)) throw new Error(`the CRD ${name} is missing: expected at ${path}`);
  return path;
}

/**
 * Upstream's copies of the CRDs above: `$MCO_SHARED_CRDS`, else `../shared/crds`
 * beside the repository, else the copies vendored in `packages/testkit/crds/upstream`
 * (crds/upstream/SOURCES.md names each one's project, commit and licence). Only the
 * cross-checks read it (packages/testkit/test/third-party-crds.test.ts).
 */
export function sharedCrdsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MCO_SHARED_CRDS) return env.MCO_SHARED_CRDS;
  const beside = join(REPO, '..', 'shared', 'crds');
  return existsSync(beside) ? beside : join(REPO, 'packages', 'testkit', 'crds', 'upstream');
}
