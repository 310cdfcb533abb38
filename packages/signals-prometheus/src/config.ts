import { ExecConfigSchema } from '@mco/cluster-access';
import { parseQuantity } from '@mco/core';
import { z } from 'zod';

/** The GCE/GKE metadata server's token endpoint (workload identity or the node's service account). */
export const GCE_METADATA_TOKEN_URL =
  'http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token';

/** The GKE fleet annotation holding a Prometheus-compatible query API of Google Cloud Monitoring. */
export const GKE_METRICS_ENDPOINT_ANNOTATION = 'fleet.gke.io/metricsEndpoint';
/** Google Cloud Managed Service for Prometheus: where GKE's metricsEndpoint annotation points. */
const GOOGLE_MONITORING_PREFIX = 'https://monitoring.googleapis.com/';

/** Variables a query may use; `${cluster}` is the cluster matchers with a trailing comma, or nothing. */
export const QUERY_VARIABLES = ['cluster', 'namespace', 'deployment', 'hpa', 'window', 'healthWindow'] as const;

const HPA = '${cluster}namespace="${namespace}",horizontalpodautoscaler="${hpa}"';
/** cluster-autoscaler's counter (metrics/metrics.go); a size limit is not a failed scale-up and never counts. */
const CA_FAILED_SCALE_UPS = 'sum(increase(cluster_autoscaler_failed_scale_ups_total{${cluster}}[${window}]))';
/**
 * Karpenter's CloudProvider errors (sigs.k8s.io/karpenter v1.15.0 pkg/cloudprovider/metrics): a NodeClaim's
 * launch refused for want of capacity, as its InsufficientCapacityError Event says per pod.
 */
const KARPENTER_INSUFFICIENT_CAPACITY =
  'sum(increase(karpenter_cloudprovider_errors_total{${cluster}method="Create",error="InsufficientCapacityError"}[${window}]))';

/**
 * The default queries, on kube-state-metrics, cluster-autoscaler and Karpenter metric
 * names. Each returns one number for one cluster's workload; no series means
 * unknown.
 */
export const DEFAULT_QUERIES = {
  hpaCurrentReplicas: `kube_horizontalpodautoscaler_status_current_replicas{${HPA}}`,
  hpaDesiredReplicas: `kube_horizontalpodautoscaler_status_desired_replicas{${HPA}}`,
  hpaMinReplicas: `kube_horizontalpodautoscaler_spec_min_replicas{${HPA}}`,
  hpaMaxReplicas: `kube_horizontalpodautoscaler_spec_max_replicas{${HPA}}`,
  hpaScalingLimited: `kube_horizontalpodautoscaler_status_condition{${HPA},condition="ScalingLimited",status="true"}`,
  // Pending pods owned (through a ReplicaSet) by the Deployment; 0 rather than nothing
  // when kube-state-metrics knows the Deployment's ReplicaSets but none of their pods is pending.
  pendingPods:
    'sum(' +
    '(kube_pod_status_phase{${cluster}namespace="${namespace}",phase="Pending"} == 1)' +
    ' * on (namespace, pod) group_left () max by (namespace, pod) (' +
    'label_replace(kube_pod_owner{${cluster}namespace="${namespace}",owner_kind="ReplicaSet"}, "replicaset", "$1", "owner_name", "(.+)")' +
    ' * on (namespace, replicaset) group_left () max by (namespace, replicaset) (' +
    'kube_replicaset_owner{${cluster}namespace="${namespace}",owner_kind="Deployment",owner_name="${deployment}"})))' +
    ' or on () (0 * count(kube_replicaset_owner{${cluster}namespace="${namespace}",owner_kind="Deployment",owner_name="${deployment}"}))',
  // The cluster autoscaler's failed scale-ups and Karpenter's launches the cloud had no capacity for,
  // summed where a cluster runs both; neither autoscaler's series leaves the field unknown.
  failedScaleUp: `(${CA_FAILED_SCALE_UPS} + ${KARPENTER_INSUFFICIENT_CAPACITY}) or ${CA_FAILED_SCALE_UPS} or ${KARPENTER_INSUFFICIENT_CAPACITY}`,
  workloadHealthy:
    'max_over_time(kube_deployment_status_condition{${cluster}namespace="${namespace}",deployment="${deployment}",condition="Available",status="true"}[${healthWindow}])',
  // The Deployment's status.readyReplicas, for make-before-break draining (rule D1). Set it to null
  // when kube-state-metrics' deployment series are not collected: the signals then declare
  // reportsReadyReplicas: false, and drains step on the clock instead of waiting for them.
  readyReplicas: 'kube_deployment_status_replicas_ready{${cluster}namespace="${namespace}",deployment="${deployment}"}',
  atCapacityCeiling: null,
  wantsScaleIn: null,
} satisfies Record<string, string | null>;
export type QueryName = keyof typeof DEFAULT_QUERIES;

/**
 * Asked when the default readyReplicas query selects no series for a
 * cluster: does that cluster export kube-state-metrics' ready-replica series
 * at all? None means the source cannot report readyReplicas there (a property
 * of what is collected, not a missing value).
 */
export const READY_REPLICAS_PROBE = 'count(kube_deployment_status_replicas_ready{${cluster}})';
export const QUERY_NAMES = Object.keys(DEFAULT_QUERIES) as QueryName[];

const VARIABLE = /\$\{([^}]*)\}/g;

function unknownVariables(template: string, known: (name: string) => boolean): string[] {
  return [...template.matchAll(VARIABLE)].map((m) => m[1]!).filter((v) => !known(v));
}

/** A refinement that reports the `${...}` variables of a query outside `known`. */
const onlyVariables = (known: readonly string[]) => (q: string | null | undefined, ctx: z.RefinementCtx) => {
  const bad = q ? unknownVariables(q, (v) => known.includes(v)) : [];
  if (bad.length) {
    ctx.addIssue({
      code: 'custom',
      message: `unknown variable ${bad.map((b) => `\${${b}}`).join(', ')}; known: ${known.map((v) => `\${${v}}`).join(', ')}`,
    });
  }
};

const query = (name: QueryName) =>
  z
    .string()
    .max(16_384)
    .nullable()
    .optional()
    .superRefine(onlyVariables(QUERY_VARIABLES))
    .describe(`PromQL for ${name}; null turns it off.`);

const CLUSTER_VALUE = /^(name|namespace|(label|annotation|property):.+)$/;

export const AuthSchema = z
  .object({
    bearerTokenFile: z.string().min(1).optional().describe('File holding a bearer token; read for every request.'),
    basicAuth: z
      .object({ username: z.string().min(1), passwordFile: z.string().min(1) })
      .optional()
      .describe('Basic auth; the password file is read for every request.'),
    exec: ExecConfigSchema.optional().describe(
      'A client-go credential plugin whose ExecCredential token is the bearer token (e.g. gke-gcloud-auth-plugin).',
    ),
    metadataServer: z
      .object({ url: z.url().default(GCE_METADATA_TOKEN_URL) })
      .optional()
      .describe('OAuth access token from the GCE metadata server (Google Cloud Monitoring).'),
  })
  .refine((a) => Object.values(a).filter((v) => v !== undefined).length <= 1, 'set at most one kind of auth');
export type PrometheusAuth = z.infer<typeof AuthSchema>;

/** Where and how a Prometheus source queries: the fields the signal and the capacity sources share. */
const CONNECTION = {
  url: z.url().optional().describe('Base URL of one Prometheus-compatible API for every cluster.'),
  metricsEndpointAnnotation: z
    .string()
    .min(1)
    .optional()
    .describe(
      `Read each cluster's query API URL from this ClusterProfile annotation (GKE: ${GKE_METRICS_ENDPOINT_ANNOTATION}).`,
    ),
  allowedEndpointPrefixes: z
    .array(
      z.url().refine((u) => u.endsWith('/'), 'must end with "/" (else https://host matches https://host.evil.example)'),
    )
    .min(1)
    .max(64)
    .default([GOOGLE_MONITORING_PREFIX])
    .describe(
      'With metricsEndpointAnnotation: the URL prefixes an annotation may point at. Whoever can write a ClusterProfile sets the annotation, and the auth header goes there.',
    ),
  allowHttpEndpoints: z
    .boolean()
    .default(false)
    .describe('Let allowedEndpointPrefixes hold http:// prefixes (the auth header then crosses the network in clear).'),
  auth: AuthSchema.optional(),
  headers: z
    .record(z.string().regex(/^[A-Za-z0-9-]+$/), z.string())
    .optional()
    .describe('Extra request headers, e.g. X-Scope-OrgID for a multi-tenant backend.'),
  clusterLabels: z
    .record(
      z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'a Prometheus label name'),
      z.string().superRefine((v, ctx) => {
        const bad = unknownVariables(v, (x) => CLUSTER_VALUE.test(x));
        if (bad.length) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown variable ${bad.map((b) => `\${${b}}`).join(', ')}; known: \${name}, \${namespace}, \${label:KEY}, \${annotation:KEY}, \${property:NAME}`,
          });
        }
      }),
    )
    .default({ cluster: '${name}' })
    .describe('Label matchers that select one cluster, as label name -> value template; {} for none.'),
  timeoutSeconds: z.number().positive().max(300).default(5).describe("Budget of one cluster's queries."),
  maxResponseBytes: z
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  concurrency: z.number().int().min(1).max(256).default(8).describe('Clusters observed at the same time.'),
};

type Connection = {
  allowHttpEndpoints: boolean;
  allowedEndpointPrefixes: string[];
  url?: string | undefined;
  metricsEndpointAnnotation?: string | undefined;
};
const httpPrefixesAllowed = (c: Connection) =>
  c.allowHttpEndpoints || c.allowedEndpointPrefixes.every((p) => p.startsWith('https://'));
const HTTP_PREFIXES = {
  message: 'an http:// prefix needs allowHttpEndpoints: true',
  path: ['allowedEndpointPrefixes'],
};
const oneEndpoint = (c: Connection) => !!c.url !== !!c.metricsEndpointAnnotation;
const ONE_ENDPOINT = { message: 'set exactly one of url and metricsEndpointAnnotation', path: ['url'] };

/** Configuration of the `prometheus` signal source (docs/signals.md). */
export const PrometheusSignalsConfigSchema = z
  .object({
    ...CONNECTION,
    queries: z
      .object(Object.fromEntries(QUERY_NAMES.map((n) => [n, query(n)])) as Record<QueryName, ReturnType<typeof query>>)
      .strict()
      .default({})
      .describe('Overrides of the default queries.'),
    windowSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(600)
      .describe('${window}: how far back failed scale-ups count.'),
    healthWindowSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(300)
      .describe('${healthWindow}: unhealthy only when not Available during all of it.'),
  })
  .refine(httpPrefixesAllowed, HTTP_PREFIXES)
  .refine(oneEndpoint, ONE_ENDPOINT);
export type PrometheusSignalsConfig = z.infer<typeof PrometheusSignalsConfigSchema>;

/** Variables a capacity query may use; `${cluster}` as in the signal queries. */
export const CAPACITY_QUERY_VARIABLES = ['cluster', 'namespace', 'deployment', 'hpa'] as const;

/** Configuration of the `prometheus` capacity source (docs/signals.md#capacity-sources). */
export const PrometheusCapacityConfigSchema = z
  .strictObject({
    ...CONNECTION,
    query: z
      .string()
      .min(1)
      .max(16_384)
      .superRefine(onlyVariables(CAPACITY_QUERY_VARIABLES))
      .describe(
        'PromQL returning one number per cluster: the replicas it can add now, or (with perReplica) a spare resource.',
      ),
    perReplica: z
      .string()
      .refine((q) => (parseQuantity(q)?.numerator ?? 0n) > 0n, 'must be a positive Kubernetes quantity, e.g. 500m')
      .optional()
      .describe('The query answers a spare amount of a resource, and one replica takes this much of it.'),
  })
  .refine(httpPrefixesAllowed, HTTP_PREFIXES)
  .refine(oneEndpoint, ONE_ENDPOINT);
export type PrometheusCapacityConfig = z.infer<typeof PrometheusCapacityConfigSchema>;
