import type { KubeConfig } from '@kubernetes/client-node';
import { toClientNodeKubeConfig } from '@mco/kube-runtime/client-node';
import { loadHub } from './cli.js';

/**
 * The hub as a client-node `KubeConfig`, for the commands that still use
 * client-node (the adapters, inventory, clusters, explain). Found exactly as
 * `loadHub` finds it; only the `controller` command is free of client-node.
 */
export function loadKubeConfig(
  path: string | undefined,
  context?: string,
  env: NodeJS.ProcessEnv = process.env,
): KubeConfig {
  return toClientNodeKubeConfig(loadHub(path, context, env));
}
