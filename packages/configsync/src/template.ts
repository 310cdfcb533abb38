import { digestOf } from '@mco/kube-runtime';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import type { Placement, PlacementCluster } from '@mco/core';

/** The placement annotation holding the user's Config Sync template (YAML or JSON documents). */
export const TEMPLATE_ANNOTATION = 'configsync.mco.x-k8s.io/template';
/** Config Sync deletes what a sync object applied before its own deletion completes (its finalizer). */
export const DELETION_PROPAGATION_ANNOTATION = 'configsync.gke.io/deletion-propagation-policy';
/** On every object mco applies on a member: which placement and cluster it is for. */
export const PLACEMENT_ANNOTATION = 'configsync.mco.x-k8s.io/placement';
export const CLUSTER_ANNOTATION = 'configsync.mco.x-k8s.io/cluster';
/** Hash of what mco applied, so a resync that would change nothing writes nothing. */
export const APPLIED_HASH_ANNOTATION = 'configsync.mco.x-k8s.io/applied-hash';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'mco-configsync';
/** Config Sync requires RootSyncs in this namespace. */
export const ROOT_SYNC_NAMESPACE = 'config-management-system';
export const CONFIG_SYNC_GROUP = 'configsync.gke.io';

export type SyncKind = 'RepoSync' | 'RootSync';
export type DeliveredKind = SyncKind | 'RoleBinding';

/** An object mco applies on a member, identified the way the record keeps it: `Kind/namespace/name`. */
export interface MemberObjectRef {
  readonly kind: DeliveredKind;
  readonly namespace: string;
  readonly name: string;
}

export interface MemberObject {
  apiVersion: string;
  kind: DeliveredKind;
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  [field: string]: unknown;
}

/** A validated template: one sync object and the RoleBindings its reconciler needs. */
export interface SyncTemplate {
  readonly sync: MemberObject;
  readonly roleBindings: readonly MemberObject[];
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MetaSchema = z.object({
  name: z.string().max(63).regex(NAME, 'must be a DNS label').optional(),
  namespace: z.string().max(63).regex(NAME, 'must be a DNS label').optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const SyncSchema = z.looseObject({
  apiVersion: z.enum([`${CONFIG_SYNC_GROUP}/v1beta1`, `${CONFIG_SYNC_GROUP}/v1alpha1`]),
  kind: z.enum(['RepoSync', 'RootSync']),
  metadata: MetaSchema.optional(),
  spec: z.looseObject({
    sourceType: z.enum(['git', 'oci', 'helm']).optional(),
    helm: z.looseObject({ values: z.record(z.string(), z.unknown()).optional() }).optional(),
  }),
});
const RoleBindingSchema = z.looseObject({
  apiVersion: z.literal('rbac.authorization.k8s.io/v1'),
  kind: z.literal('RoleBinding'),
  metadata: MetaSchema.extend({ name: MetaSchema.shape.name.unwrap() }),
  roleRef: z.object({ apiGroup: z.string(), kind: z.enum(['Role', 'ClusterRole']), name: z.string().min(1) }),
  subjects: z.array(z.record(z.string(), z.unknown())).optional(),
});

export type TemplateResult = { ok: true; template: SyncTemplate } | { ok: false; error: string };

/**
 * Config Sync's own namespaces (its reconcilers, their credentials, its
 * monitoring and the resource-group controller). A RepoSync there would run
 * a tenant's reconciler beside them, so a placement in a hub namespace of
 * that name is refused, and no RepoSync goes into one.
 */
export const CONFIG_SYNC_SYSTEM_NAMESPACES: readonly string[] = [
  ROOT_SYNC_NAMESPACE,
  'config-management-monitoring',
  'resource-group-system',
];

/**
 * What a tenant's RepoSync `spec` may hold: the fields of Config Sync's
 * RepoSync (v1beta1), each source's as a whole, `override` without
 * `enableShellInRendering` (a shell in the reconciler's rendering container,
 * in config-management-system). Anything else — a RootSync's fields
 * (`helm.namespace`, `helm.deployNamespace`, `override.roleRefs`,
 * `override.namespaceStrategy`) or a field a later Config Sync adds — is
 * refused, since it may reach beyond the tenant's namespace.
 */
const REPO_SYNC_SPEC: Readonly<Record<string, readonly string[] | true>> = {
  sourceType: true,
  sourceFormat: true,
  git: [
    'auth',
    'branch',
    'caCertSecretRef',
    'dir',
    'gcpServiceAccountEmail',
    'noSSLVerify',
    'period',
    'proxy',
    'repo',
    'revision',
    'secretRef',
  ],
  oci: ['auth', 'caCertSecretRef', 'dir', 'gcpServiceAccountEmail', 'image', 'period'],
  helm: [
    'auth',
    'caCertSecretRef',
    'chart',
    'gcpServiceAccountEmail',
    'includeCRDs',
    'period',
    'releaseName',
    'repo',
    'secretRef',
    'values',
    'valuesFileRefs',
    'version',
  ],
  override: ['apiServerTimeout', 'gitSyncDepth', 'logLevels', 'reconcileTimeout', 'resources', 'statusMode'],
};

/** Label and annotation prefixes Config Sync and mco keep for themselves: a template may not set them. */
const RESERVED_PREFIXES = ['configsync.gke.io/', 'configmanagement.gke.io/', 'configsync.mco.x-k8s.io/'];
const RESERVED_KEYS = [MANAGED_BY_LABEL];

/** Why a template's RepoSync spec is refused (`field: reason`), or undefined. */
function repoSyncSpecProblem(spec: Record<string, unknown>): string | undefined {
  for (const [key, value] of Object.entries(spec)) {
    const allowed = REPO_SYNC_SPEC[key];
    if (allowed === undefined) return `spec.${key}: is not a field a RepoSync from a tenant namespace may set`;
    if (allowed === true || value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) return `spec.${key}: must be an object`;
    const extra = Object.keys(value).find((k) => !allowed.includes(k));
    if (extra !== undefined) return `spec.${key}.${extra}: is not a field a RepoSync from a tenant namespace may set`;
  }
  return undefined;
}

/** Why an object's labels or annotations are refused (`field: reason`), or undefined. */
function reservedMetadataProblem(metadata: { labels?: object; annotations?: object } | undefined): string | undefined {
  for (const field of ['labels', 'annotations'] as const) {
    for (const key of Object.keys(metadata?.[field] ?? {})) {
      if (RESERVED_KEYS.includes(key) || RESERVED_PREFIXES.some((prefix) => key.startsWith(prefix))) {
        return `metadata.${field}.${key}: is reserved for Config Sync and mco`;
      }
    }
  }
  return undefined;
}

/** What a placement's template may deliver: the operator's bounds (flags of `mco configsync`). */
export interface TemplatePolicy {
  /**
   * Hub namespaces whose placements may carry a RootSync (`--root-sync-namespaces`; default none).
   * They are the operator's: their RepoSyncs may also target any namespace.
   */
  readonly rootSyncNamespaces?: readonly string[];
  /** The roles a RoleBinding may refer to, as `Kind/name` (`--allowed-role-refs`; default `ClusterRole/edit`). */
  readonly allowedRoleRefs?: readonly string[];
}

export const DEFAULT_ALLOWED_ROLE_REFS: readonly string[] = ['ClusterRole/edit'];

/** `Role/name,ClusterRole/name` (`--allowed-role-refs`) as a sorted list, or the entry that is not one. */
export function parseRoleRefList(text: string): { ok: true; value: string[] } | { ok: false; error: string } {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = entries.find((e) => !/^(Role|ClusterRole)\/[^/\s]+$/.test(e));
  if (bad !== undefined) return { ok: false, error: `"${bad}" is not Role/<name> or ClusterRole/<name>` };
  return { ok: true, value: [...new Set(entries)].sort() };
}

/**
 * The ServiceAccount (in config-management-system) Config Sync runs a sync
 * object's reconciler as: `ns-reconciler-<ns>` for the RepoSync `repo-sync`,
 * else `ns-reconciler-<ns>-<name>-<length of name>`; `root-reconciler` for the
 * RootSync `root-sync`, else `root-reconciler-<name>` (Config Sync's
 * `core.NsReconcilerName` and `core.RootReconcilerName`).
 */
export function reconcilerName(kind: SyncKind, namespace: string, name: string): string {
  if (kind === 'RootSync') return name === 'root-sync' ? 'root-reconciler' : `root-reconciler-${name}`;
  return name === 'repo-sync' ? `ns-reconciler-${namespace}` : `ns-reconciler-${namespace}-${name}-${name.length}`;
}

/**
 * Reads the template annotation of a placement: YAML (or JSON) documents, exactly
 * one RepoSync or RootSync and any RoleBindings its reconciler needs. A
 * template is a tenant's input, so it is bounded (docs/configsync.md):
 *
 * - a RepoSync lives in the placement's own namespace (the template may leave
 *   the namespace out); a RootSync, in `config-management-system`, only from
 *   the hub namespaces the operator lists, whose RepoSyncs may target any namespace;
 * - a RoleBinding of a RepoSync lives in its namespace, refers to a role of
 *   `allowedRoleRefs` and binds only the sync's own reconciler ServiceAccount.
 *
 * The sync object is named after the placement unless the template names it.
 * Errors name the document and field.
 */
export function parseTemplate(placement: Placement, policy: TemplatePolicy = {}): TemplateResult | undefined {
  const text = placement.metadata.annotations?.[TEMPLATE_ANNOTATION];
  if (text === undefined) return undefined;
  const fail = (error: string): TemplateResult => ({ ok: false, error: `annotation ${TEMPLATE_ANNOTATION}: ${error}` });
  const documents = parseAllDocuments(text);
  const values: unknown[] = [];
  for (const [i, doc] of (Array.isArray(documents) ? documents : [documents]).entries()) {
    if (doc.errors.length > 0) return fail(`document ${i}: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJSON();
    if (value !== null && value !== undefined) values.push(value);
  }
  const home = placement.metadata.namespace ?? '';
  if (CONFIG_SYNC_SYSTEM_NAMESPACES.includes(home)) {
    return fail(
      `a placement in the hub namespace ${home} is refused: it is a Config Sync system namespace (${CONFIG_SYNC_SYSTEM_NAMESPACES.join(', ')}), and its RepoSync would run beside Config Sync's own reconcilers on every member`,
    );
  }
  const operators = policy.rootSyncNamespaces ?? [];
  const trusted = operators.includes(home);
  let sync: MemberObject | undefined;
  const roleBindings: { index: number; object: MemberObject }[] = [];
  for (const [i, value] of values.entries()) {
    const kind = (value as { kind?: unknown } | null)?.kind;
    const schema = kind === 'RoleBinding' ? RoleBindingSchema : SyncSchema;
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = issue.path.map(String).join('.');
      return fail(`document ${i}${path ? ` field ${path}` : ''}: ${issue.message}`);
    }
    const reserved = reservedMetadataProblem(parsed.data.metadata);
    if (reserved) return fail(`document ${i} field ${reserved}`);
    if (kind === 'RoleBinding') {
      roleBindings.push({
        index: i,
        object: member(parsed.data as MemberObject, parsed.data.metadata?.namespace ?? ''),
      });
      continue;
    }
    if (sync) return fail(`document ${i}: only one RepoSync or RootSync per placement`);
    const data = parsed.data as z.infer<typeof SyncSchema>;
    const given = data.metadata?.namespace;
    if (data.kind === 'RootSync') {
      if (!trusted) {
        const listed = operators.length > 0 ? operators.join(', ') : 'none';
        return fail(
          `document ${i} field kind: a RootSync is allowed only from the hub namespaces --root-sync-namespaces lists (${listed}), not from ${home}`,
        );
      }
      if (given && given !== ROOT_SYNC_NAMESPACE) {
        return fail(`document ${i} field metadata.namespace: a RootSync must be in ${ROOT_SYNC_NAMESPACE}`);
      }
    } else if (given && given !== home && !trusted) {
      return fail(
        `document ${i} field metadata.namespace: a RepoSync must be in its placement's namespace ${home}, not ${given}`,
      );
    }
    const namespace = data.kind === 'RootSync' ? ROOT_SYNC_NAMESPACE : (given ?? home);
    if (data.kind === 'RepoSync' && CONFIG_SYNC_SYSTEM_NAMESPACES.includes(namespace)) {
      return fail(
        `document ${i} field metadata.namespace: a RepoSync may not be in Config Sync's namespace ${namespace}`,
      );
    }
    const specProblem = data.kind === 'RepoSync' && !trusted ? repoSyncSpecProblem(data.spec) : undefined;
    if (specProblem) return fail(`document ${i} field ${specProblem}`);
    sync = member(
      { ...data, metadata: { ...data.metadata, name: data.metadata?.name ?? placement.metadata.name } } as MemberObject,
      namespace,
    );
  }
  if (!sync) return fail('no RepoSync or RootSync');
  const allowed = policy.allowedRoleRefs ?? DEFAULT_ALLOWED_ROLE_REFS;
  const reconciler = reconcilerName(sync.kind as SyncKind, sync.metadata.namespace, sync.metadata.name);
  for (const { index, object: rb } of roleBindings) {
    const error = checkRoleBinding(rb, sync, allowed, reconciler);
    if (error) return fail(`document ${index} (RoleBinding ${rb.metadata.name}) field ${error}`);
  }
  return { ok: true, template: { sync, roleBindings: roleBindings.map((r) => r.object) } };
}

/** Why a RoleBinding is refused (`field: reason`), or undefined; fills in its namespace. */
function checkRoleBinding(
  rb: MemberObject,
  sync: MemberObject,
  allowed: readonly string[],
  reconciler: string,
): string | undefined {
  if (!rb.metadata.namespace) rb.metadata.namespace = sync.metadata.namespace;
  if (sync.kind === 'RepoSync' && rb.metadata.namespace !== sync.metadata.namespace) {
    return `metadata.namespace: must be the RepoSync's namespace ${sync.metadata.namespace}`;
  }
  const roleRef = rb.roleRef as { apiGroup: string; kind: string; name: string };
  if (roleRef.apiGroup !== 'rbac.authorization.k8s.io') return 'roleRef.apiGroup: must be rbac.authorization.k8s.io';
  if (!allowed.includes(`${roleRef.kind}/${roleRef.name}`)) {
    return `roleRef: ${roleRef.kind}/${roleRef.name} is not one of the roles --allowed-role-refs allows (${allowed.join(', ') || 'none'})`;
  }
  const subjects = (rb.subjects ?? []) as Record<string, unknown>[];
  for (const [j, subject] of subjects.entries()) {
    const isReconciler =
      subject.kind === 'ServiceAccount' &&
      subject.name === reconciler &&
      subject.namespace === ROOT_SYNC_NAMESPACE &&
      (subject.apiGroup === undefined || subject.apiGroup === '') &&
      Object.keys(subject).every((k) => ['kind', 'name', 'namespace', 'apiGroup'].includes(k));
    if (!isReconciler) {
      return `subjects[${j}]: only the sync's own reconciler may be bound: ServiceAccount ${ROOT_SYNC_NAMESPACE}/${reconciler}`;
    }
  }
  return undefined;
}

function member(object: MemberObject, namespace: string): MemberObject {
  const { status: _status, ...rest } = object as MemberObject & { status?: unknown };
  return {
    ...rest,
    metadata: {
      name: object.metadata.name,
      namespace,
      labels: { ...object.metadata.labels },
      annotations: { ...object.metadata.annotations },
    },
  };
}

/** What the workload's Helm chart receives under `.Values.mco` (sourceType helm only). */
export interface ClusterValues {
  cluster: string;
  clusterProfileName: string;
  clusterProfileNamespace: string;
  state: PlacementCluster['state'];
  draining: boolean;
  desiredMaxReplicas?: number;
  /** A replacement's replica floor (rule O3): the HPA minReplicas to apply while set. */
  desiredMinReplicas?: number;
}

export function clusterValues(cluster: PlacementCluster): ClusterValues {
  const namespace = cluster.namespace ?? '';
  return {
    cluster: `${namespace}/${cluster.name}`,
    clusterProfileName: cluster.name,
    clusterProfileNamespace: namespace,
    state: cluster.state,
    draining: cluster.draining !== undefined,
    ...(cluster.draining ? { desiredMaxReplicas: cluster.draining.desiredMaxReplicas } : {}),
    ...(cluster.desiredMinReplicas !== undefined ? { desiredMinReplicas: cluster.desiredMinReplicas } : {}),
  };
}

/**
 * The objects to apply on one placed cluster, in apply order (RoleBindings
 * first, so the reconciler can act as soon as the sync object exists). Each is
 * labelled and annotated as mco's, the sync object gets Config Sync's
 * Foreground deletion propagation, and a Helm source gets the cluster's
 * values (draining included) merged under `values.mco`.
 */
export function desiredObjects(
  template: SyncTemplate,
  placement: Placement,
  cluster: PlacementCluster,
): MemberObject[] {
  const owner = `${placement.metadata.namespace}/${placement.metadata.name}`;
  const key = `${cluster.namespace ?? ''}/${cluster.name}`;
  const mark = (object: MemberObject, extra: Record<string, string>): MemberObject => {
    const marked: MemberObject = {
      ...structuredClone(object),
      metadata: {
        ...object.metadata,
        labels: { ...object.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY },
        annotations: {
          ...object.metadata.annotations,
          ...extra,
          [PLACEMENT_ANNOTATION]: owner,
          [CLUSTER_ANNOTATION]: key,
        },
      },
    };
    marked.metadata.annotations[APPLIED_HASH_ANNOTATION] = contentHash(marked);
    return marked;
  };
  const sync = structuredClone(template.sync);
  const spec = sync.spec as { sourceType?: string; helm?: { values?: Record<string, unknown> } };
  if (spec.sourceType === 'helm') {
    spec.helm = { ...spec.helm, values: { ...spec.helm?.values, mco: clusterValues(cluster) } };
  }
  return [
    ...template.roleBindings.map((rb) => mark(rb, {})),
    mark(sync, { [DELETION_PROPAGATION_ANNOTATION]: 'Foreground' }),
  ];
}

/** A stable digest of an object's content, without the hash annotation itself. */
function contentHash(object: MemberObject): string {
  const { [APPLIED_HASH_ANNOTATION]: _ignored, ...annotations } = object.metadata.annotations;
  return digestOf({ ...object, metadata: { ...object.metadata, annotations } });
}

export function refOf(object: { kind: DeliveredKind; metadata: { namespace: string; name: string } }): MemberObjectRef {
  return { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
}

export function formatRef(ref: MemberObjectRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

export function parseRef(text: string): MemberObjectRef | undefined {
  const [kind, namespace, name, ...rest] = text.split('/');
  if (rest.length > 0 || !namespace || !name) return undefined;
  if (kind !== 'RepoSync' && kind !== 'RootSync' && kind !== 'RoleBinding') return undefined;
  return { kind, namespace, name };
}
