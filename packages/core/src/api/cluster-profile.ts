import { z } from 'zod';
import { ConditionSchema, ObjectMetaSchema, TimestampSchema } from './common.js';

export const CLUSTER_PROFILE_API_VERSION = 'multicluster.x-k8s.io/v1alpha1';
export const CLUSTER_MANAGER_LABEL = 'x-k8s.io/cluster-manager';
export const CONTROL_PLANE_HEALTHY = 'ControlPlaneHealthy';

/** clientcmd Cluster, as used in `status.accessProviders[].cluster`. Unknown fields are kept. */
export const AccessProviderClusterSchema = z.looseObject({
  server: z.string(),
  'certificate-authority-data': z.string().optional(),
  'certificate-authority': z.string().optional(),
  'insecure-skip-tls-verify': z.boolean().optional(),
  'tls-server-name': z.string().optional(),
  'proxy-url': z.string().optional(),
  'disable-compression': z.boolean().optional(),
  extensions: z.array(z.object({ name: z.string(), extension: z.unknown() })).optional(),
});
export type AccessProviderCluster = z.infer<typeof AccessProviderClusterSchema>;

export const AccessProviderSchema = z.object({
  name: z.string(),
  cluster: AccessProviderClusterSchema.optional(),
});
export type AccessProvider = z.infer<typeof AccessProviderSchema>;

export const ClusterProfileSchema = z.looseObject({
  apiVersion: z.literal(CLUSTER_PROFILE_API_VERSION).optional(),
  kind: z.literal('ClusterProfile').optional(),
  metadata: ObjectMetaSchema.extend({ namespace: z.string().min(1).max(63) }),
  spec: z
    .looseObject({
      displayName: z.string().optional(),
      clusterManager: z.object({ name: z.string() }).optional(),
    })
    .optional(),
  status: z
    .looseObject({
      conditions: z.array(ConditionSchema).optional(),
      properties: z
        .array(z.object({ name: z.string(), value: z.string(), lastObservedTime: TimestampSchema.optional() }))
        .optional(),
      accessProviders: z.array(AccessProviderSchema).optional(),
      credentialProviders: z.array(AccessProviderSchema).optional(),
      version: z.object({ kubernetes: z.string().optional() }).optional(),
    })
    .optional(),
});
export type ClusterProfile = z.infer<typeof ClusterProfileSchema>;
