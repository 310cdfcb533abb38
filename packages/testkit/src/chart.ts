import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api, CoreV1Api, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
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

/** `helm template mco apps/mco/chart` with extra arguments; resolves to {code, stdout, stderr} without throwing. */
export function helmTemplate(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      requireTool('helm'),
      ['template', 'mco', join(REPO, 'apps', 'mco', 'chart'), '--namespace', RELEASE_NAMESPACE, ...args],
      { encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
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

/** One authorization question: [verb, group, resource (`plural[/subresource]`), namespace ('' = cluster-wide), name?]. */
export type AccessCheck = readonly [string, string, string, string, string?];

/** A readable key of a check: `patch clusterprofiles.multicluster.x-k8s.io/status in fleet`. */
export function accessCheckKey([verb, group, resource, namespace, name]: AccessCheck): string {
  return `${verb} ${resource}${group ? `.${group}` : ''}${name ? `/${name}` : ''} in ${namespace || '(cluster)'}`;
}

/**
 * Asks the API server, by SubjectAccessReview (as `kubectl auth can-i --as=...`
 * does), what the ServiceAccount `namespace/name` may do; keyed by accessCheckKey.
 */
export async function serviceAccountAccess(
  hub: ClusterHandle,
  namespace: string,
  name: string,
  checks: readonly AccessCheck[],
): Promise<Record<string, boolean>> {
  const authz = hub.adminKubeConfig().makeApiClient(AuthorizationV1Api);
  const results: Record<string, boolean> = {};
  for (const check of checks) {
    const [verb, group, resource, checkNamespace, objectName] = check;
    const [plural, subresource] = resource.split('/');
    const review = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${namespace}:${name}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: {
            verb,
            group,
            resource: plural,
            ...(subresource ? { subresource } : {}),
            ...(checkNamespace ? { namespace: checkNamespace } : {}),
            ...(objectName ? { name: objectName } : {}),
          },
        },
      },
    });
    results[accessCheckKey(check)] = review.status!.allowed;
  }
  return results;
}
