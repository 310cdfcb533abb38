import { z } from 'zod';

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const TemplateObjectSchema = z.object({
  metadata: z.object({
    name: z
      .string()
      .max(180, 'at most 180 characters: mco appends the cluster slug')
      .regex(NAME, 'must be a DNS label (lowercase letters, digits, -)'),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.record(z.string(), z.unknown()),
});

export const FluxTemplateSchema = z
  .object({
    placement: z.object({ namespace: z.string().min(1), name: z.string().min(1) }),
    /** A Kustomization (kustomize.toolkit.fluxcd.io/v1) without `kubeConfig`: mco sets it per cluster. */
    kustomization: TemplateObjectSchema.optional(),
    /** A HelmRelease (helm.toolkit.fluxcd.io/v2) without `kubeConfig`: mco sets it per cluster. */
    helmRelease: TemplateObjectSchema.optional(),
  })
  .refine((t) => t.kustomization || t.helmRelease, { message: 'give a kustomization, a helmRelease or both' })
  .refine((t) => !t.kustomization?.spec.kubeConfig && !t.helmRelease?.spec.kubeConfig, {
    message: 'spec.kubeConfig is set by mco per cluster; leave it out of the template',
  });
export type FluxTemplate = z.infer<typeof FluxTemplateSchema>;

/** The rendering-mode file (`mco flux --templates`, chart value `flux.templates`). */
export const FluxTemplatesFileSchema = z.object({ templates: z.array(FluxTemplateSchema).max(1000) });
export type FluxTemplatesFile = z.infer<typeof FluxTemplatesFileSchema>;
