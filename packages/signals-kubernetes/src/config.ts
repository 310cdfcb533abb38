import { ProviderFileSchema } from '@mco/cluster-access';
import { z } from 'zod';

/** Configuration of the `kubernetes` signal source (docs/signals.md). */
export const KubernetesSignalsConfigSchema = z
  .object({
    providersFile: z
      .string()
      .min(1)
      .optional()
      .describe('Path of the Cluster Inventory API consumer provider file (JSON or YAML).'),
    providers: ProviderFileSchema.shape.providers
      .optional()
      .describe('The providers inline, instead of providersFile.'),
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
      .describe('Event reasons that mean the cluster autoscaler could not add capacity for the pods.'),
    eventReporter: z
      .string()
      .min(1)
      .default('cluster-autoscaler')
      .describe('source.component (core/v1) or reportingController (events.k8s.io/v1) of those events.'),
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
  .refine((c) => !(c.providersFile && c.providers), {
    message: 'set providersFile or providers, not both',
    path: ['providers'],
  });
export type KubernetesSignalsConfig = z.infer<typeof KubernetesSignalsConfigSchema>;
