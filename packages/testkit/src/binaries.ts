import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { PREPARE_HINT, preparedTool } from './tools.js';

/** How to get the binaries, in one line, for skip messages and errors. */
export const ENABLE_HINT = `${PREPARE_HINT}, or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd`;

export type Availability =
  { readonly available: true; readonly dir: string } | { readonly available: false; readonly reason: string };

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function hasBothBinaries(dir: string): boolean {
  return isExecutable(join(dir, 'kube-apiserver')) && isExecutable(join(dir, 'etcd'));
}

/**
 * Where kube-apiserver and etcd are: KUBEBUILDER_ASSETS (the envtest
 * convention) first, else what `tools/k8s-testbin/build.sh` prepared before
 * the tests started. Cheap and synchronous; never builds.
 */
export function controlPlaneAvailability(env: NodeJS.ProcessEnv = process.env): Availability {
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets && hasBothBinaries(assets)) return { available: true, dir: assets };
  const prepared = preparedTool('k8s-testbin', env);
  if (prepared && hasBothBinaries(prepared)) return { available: true, dir: prepared };
  const why = assets
    ? `KUBEBUILDER_ASSETS=${assets} lacks kube-apiserver or etcd, and none were prepared`
    : 'kube-apiserver and etcd are not prepared';
  return { available: false, reason: why };
}

/** The directory holding `kube-apiserver` and `etcd`, or an error saying how to get them. */
export function locateBinaries(env: NodeJS.ProcessEnv = process.env): string {
  const availability = controlPlaneAvailability(env);
  if (availability.available) return availability.dir;
  throw new Error(`${availability.reason}; to enable: ${ENABLE_HINT}`);
}
