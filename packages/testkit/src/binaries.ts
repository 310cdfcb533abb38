import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The committed build script; the same relative path from `src/` and `dist/`. */
export const BUILD_SCRIPT = fileURLToPath(new URL('../../../tools/k8s-testbin/build.sh', import.meta.url));

/** How to get the binaries, in one line, for skip messages and errors. */
export const ENABLE_HINT =
  'install Go >= 1.26 (tools/k8s-testbin/build.sh builds kube-apiserver and etcd once, ~4 min) ' +
  'or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd';

export type Availability = { readonly available: true } | { readonly available: false; readonly reason: string };

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

function findGo(env: NodeJS.ProcessEnv, standardGo: string): string | undefined {
  if (env.GO && isExecutable(env.GO)) return env.GO;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, 'go'))) return join(dir, 'go');
  }
  // build.sh falls back to the standard install location as well.
  return isExecutable(standardGo) ? standardGo : undefined;
}

/**
 * Whether integration tests can get a kube-apiserver and etcd without a network
 * download: KUBEBUILDER_ASSETS with both binaries, or a Go toolchain for
 * build.sh. Cheap and synchronous, so it can decide `describe` vs `describe.skip`.
 */
export function controlPlaneAvailability(
  env: NodeJS.ProcessEnv = process.env,
  standardGo = '/usr/local/go/bin/go',
): Availability {
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets && hasBothBinaries(assets)) return { available: true };
  if (!existsSync(BUILD_SCRIPT)) return { available: false, reason: `${BUILD_SCRIPT} is missing` };
  if (findGo(env, standardGo)) return { available: true };
  const why = assets
    ? `KUBEBUILDER_ASSETS=${assets} lacks kube-apiserver or etcd, and no Go toolchain was found`
    : 'no Go toolchain and no KUBEBUILDER_ASSETS';
  return { available: false, reason: why };
}

let located: Promise<string> | undefined;

/**
 * The directory holding `kube-apiserver` and `etcd`: runs build.sh, which
 * honours KUBEBUILDER_ASSETS first and otherwise builds once into a cache
 * (minutes on a cold cache, instant afterwards; concurrent callers wait on its
 * flock). Build progress goes to stderr. Memoised per process.
 */
export function locateBinaries(): Promise<string> {
  located ??= runBuildScript().catch((error: unknown) => {
    located = undefined; // let a later caller retry
    throw error;
  });
  return located;
}

function runBuildScript(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', (error) => reject(new Error(`cannot run ${BUILD_SCRIPT}: ${error.message}`)));
    child.on('close', (code, signal) => {
      const dir = out.trim().split('\n').pop() ?? '';
      if (code === 0 && dir && hasBothBinaries(dir)) resolve(dir);
      else
        reject(
          new Error(
            `${BUILD_SCRIPT} failed (${signal ?? `exit ${code}`}); no kube-apiserver/etcd available. To enable: ${ENABLE_HINT}`,
          ),
        );
    });
  });
}
