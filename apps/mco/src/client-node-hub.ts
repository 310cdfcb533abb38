import type { KubeConfig } from '@kubernetes/client-node';
import { toClientNodeKubeConfig } from '@mco/kube-runtime/client-node';
import { loadHub } from './cli.js';

/**
 * The hub as a client-node `KubeConfig`, for the commands that still hand one
 * on: `mco inventory` (the provider contract's `PluginDeps.kubeConfig`) and
 * `mco clusters`. Found exactly as `loadHub` finds it.
 */
export function loadKubeConfig(
  path: string | undefined,
  context?: string,
  env: NodeJS.ProcessEnv = process.env,
): KubeConfig {
  return toClientNodeKubeConfig(loadHub(path, context, env));
}
