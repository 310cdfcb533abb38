import { createHash } from 'node:crypto';

/** Labels and annotations on everything @mco/flux writes. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** Default value of the managed-by label; mco changes and deletes only objects that carry its own value. */
export const DEFAULT_MANAGER = 'mco-flux';
/** Placement name (or its slug when the name is no valid label value) and namespace. */
export const PLACEMENT_LABEL = 'orchestra.multicluster.x-k8s.io/placement';
export const PLACEMENT_NAMESPACE_LABEL = 'orchestra.multicluster.x-k8s.io/placement-namespace';
/** The cluster slug of the object's cluster. */
export const CLUSTER_LABEL = 'orchestra.multicluster.x-k8s.io/cluster';
/** `namespace/name` of the placement an object was written for (exact, where the label may be a slug). */
export const PLACEMENT_ANNOTATION = 'orchestra.multicluster.x-k8s.io/placement-key';
/** `namespace/name` of the ClusterProfile an object was written for. */
export const CLUSTER_PROFILE_ANNOTATION = 'orchestra.multicluster.x-k8s.io/cluster-profile';
export const CREDENTIAL_EXPIRES_ANNOTATION = 'orchestra.multicluster.x-k8s.io/credential-expires-at';
/** Flux reconciles an object at once when a Secret with this label (value `Enabled`) changes. */
export const FLUX_WATCH_LABEL = 'reconcile.fluxcd.io/watch';
/** The key of the kubeconfig in mco's Secrets: Flux's default for `spec.kubeConfig.secretRef`. */
export const KUBECONFIG_KEY = 'value';

/**
 * A name part that is a DNS label of at most `max` characters, stable for the
 * same input and distinct for distinct inputs: the readable, sanitised text
 * cut short, then 8 hex digits of a hash of the exact input. Sanitising alone
 * could merge `a-b/c` and `a/b-c`; the hash keeps them apart.
 */
export function slug(text: string, max = 63): string {
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  const readable = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, Math.max(0, max - hash.length - 1))
    .replace(/^-+|-+$/g, '');
  return readable ? `${readable}-${hash}` : hash;
}

/** The stable slug of a ClusterProfile `namespace/name`, usable in object names and label values. */
export function clusterSlug(namespace: string, name: string): string {
  return slug(`${namespace}/${name}`);
}

/** The name of mco's kubeconfig Secret for a cluster (one per cluster, shared by its placements). */
export function kubeconfigSecretName(namespace: string, name: string): string {
  return `mco-kubeconfig-${clusterSlug(namespace, name)}`;
}

/** The name of the input provider of (placement, cluster). */
export function inputProviderName(placementNamespace: string, placementName: string, cluster: string): string {
  return `${slug(`${placementNamespace}/${placementName}`, 40)}-${cluster}`;
}

/** The placement label value: the name itself when it is a valid label value, else its slug. */
export function placementLabelValue(name: string): string {
  return name.length <= 63 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) ? name : slug(name);
}
