import { ProviderFileSchema } from '@mco/cluster-access';
import { z } from 'zod';

const AUTOSCALER = z.enum(['auto', 'cluster-autoscaler', 'karpenter']);

// Keys are ClusterProfiles as namespace/name: a DNS-1123 label and a subdomain (checked without a regex).
const CLUSTER_AUTOSCALERS = z.record(z.string(), AUTOSCALER).superRefine((map, ctx) => {
  for (const key of Object.keys(map)) {
    const parts = key.split('/');
    if (parts.length !== 2 || !isDnsLabel(parts[0]!) || !isComponentName(parts[1]!))
      ctx.addIssue({ code: 'custom', path: [key], message: 'must be a ClusterProfile as namespace/name' });
  }
});

// A value a field selector takes as it is (no "," "=" "!" or "\\" to escape).
function isComponentName(s: string): boolean {
  return s.length > 0 && s.length <= 253 && [...s].every((c) => isDnsChar(c) || c === '.');
}

function isDnsChar(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c === '-';
}

function isDnsLabel(s: string): boolean {
  if (s.length < 1 || s.length > 63 || s.startsWith('-') || s.endsWith('-')) return false;
  return [...s].every(isDnsChar);
}

/** How the sources reach member clusters: the fields the `kubernetes` and `karpenter` sources share. */
const MEMBER_ACCESS = {
  providersFile: z
    .string()
    .min(1)
    .optional()
    .describe('Path of the Cluster Inventory API consumer provider file (JSON or YAML).'),
  providers: ProviderFileSchema.shape.providers.optional().describe('The providers inline, instead of providersFile.'),
  kubeconfigSecrets: ProviderFileSchema.shape.kubeconfigSecrets.describe(
    "Servers, proxies and TLS settings a ClusterProfile's kubeconfig Secret may use (default: the provider file's).",
  ),
  qps: z.number().positive().max(1000).default(5).describe("Requests per second to each member cluster's API."),
  burst: z.number().int().min(1).max(1000).default(10).describe('Burst of requests to each member cluster.'),
  timeoutSeconds: z
    .number()
    .positive()
    .max(300)
    .default(5)
    .describe("Budget of one cluster's observation; past it that cluster's signal is missing."),
  concurrency: z.number().int().min(1).max(256).default(8).describe('Member clusters observed at the same time.'),
};

const oneProviderSource = (c: { providersFile?: string | undefined; providers?: unknown }) =>
  !(c.providersFile && c.providers);
const ONE_PROVIDER_SOURCE = { message: 'set providersFile or providers, not both', path: ['providers'] };

/** Configuration of the `kubernetes` signal source (docs/signals.md). */
export const KubernetesSignalsConfigSchema = z
  .object({
    ...MEMBER_ACCESS,
    eventWindowSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(600)
      .describe('How far back cluster-autoscaler events count.'),
    eventReasons: z
      .array(z.string().min(1))
      .min(1)
      .default(['FailedScaleUp', 'NotTriggerScaleUp'])
      .describe(
        'Event reasons that mean the cluster autoscaler could not add capacity for the pods (NotTriggerScaleUp only with a capacity reason in its message).',
      ),
    eventReporter: z
      .string()
      .min(1)
      .default('cluster-autoscaler')
      .describe('source.component (core/v1) or reportingController (events.k8s.io/v1) of those events.'),
    autoscaler: AUTOSCALER.default('auto').describe(
      "The node autoscaler whose Events tell a member's ceiling: auto detects Karpenter (karpenter.sh/v1 served).",
    ),
    clusterAutoscalers: CLUSTER_AUTOSCALERS.default({}).describe(
      'Per member (ClusterProfile namespace/name): its autoscaler, instead of `autoscaler`.',
    ),
    karpenterReporter: z
      .string()
      .refine(isComponentName, { message: 'must be lowercase letters, digits, "-" and "."' })
      .default('karpenter')
      .describe("source.component of Karpenter's Events (its event recorder's name)."),
    unavailableAfterSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(300)
      .describe('A Deployment whose Available condition has been False this long is reported unhealthy.'),
    maxPods: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(5000)
      .describe('Pods listed per workload at most; beyond, pendingPods is left unknown.'),
    maxEvents: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(2000)
      .describe('Events listed per reason at most; beyond, failedScaleUp is left unknown.'),
  })
  .refine(oneProviderSource, ONE_PROVIDER_SOURCE);
export type KubernetesSignalsConfig = z.infer<typeof KubernetesSignalsConfigSchema>;

/** Configuration of the `karpenter` capacity source (docs/signals.md#capacity-sources). */
export const KarpenterCapacityConfigSchema = z
  .object({
    ...MEMBER_ACCESS,
    timeoutSeconds: MEMBER_ACCESS.timeoutSeconds.describe(
      "Budget of one cluster's answer (the pod template's read included); past it that answer is missing.",
    ),
  })
  .strict()
  .refine(oneProviderSource, ONE_PROVIDER_SOURCE);
export type KarpenterCapacityConfig = z.infer<typeof KarpenterCapacityConfigSchema>;

/** The member-access part of either configuration. */
export type MemberAccessConfig = Pick<
  KubernetesSignalsConfig,
  'providersFile' | 'providers' | 'kubeconfigSecrets' | 'qps' | 'burst'
>;
