import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { ClusterHandle } from './control-plane.js';
import { loadYamlObjects } from './objects.js';
import { requireTool } from './tools.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
/** The namespace `renderChart` renders the release into. */
export const RELEASE_NAMESPACE = 'mco-system';

/** `helm template mco apps/mco/chart` with `--set` values; helm was prepared before the tests (tools/helm). */
export function renderChart(values: Readonly<Record<string, string>>): KubernetesObject[] {
  const helm = requireTool('helm');
  const sets = Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
  const out = execFileSync(
    helm,
    ['template', 'mco', join(REPO, 'apps', 'mco', 'chart'), '--namespace', RELEASE_NAMESPACE, ...sets],
    { encoding: 'utf8' },
  );
  const dir = mkdtempSync(join(tmpdir(), 'mco-chart-'));
  try {
    writeFileSync(join(dir, 'rendered.yaml'), out);
    return loadYamlObjects(join(dir, 'rendered.yaml'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A kubeconfig authenticated as a ServiceAccount (TokenRequest API), so it has exactly that account's RBAC. */
export async function serviceAccountKubeConfig(
  hub: ClusterHandle,
  namespace: string,
  name: string,
): Promise<KubeConfig> {
  const core = hub.adminKubeConfig().makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const kc = new KubeConfig();
  const user = `hub-${name}`;
  kc.loadFromOptions({
    clusters: [{ name: 'hub', server: hub.server, caData: hub.caData, skipTLSVerify: false }],
    users: [{ name: user, token: request.status!.token }],
    contexts: [{ name: user, cluster: 'hub', user }],
    currentContext: user,
  });
  return kc;
}
