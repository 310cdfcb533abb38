import { McoError } from '@mco/runtime';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { allowlistEntryProblem } from './server-trust.js';

export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;

/** clientcmd ExecConfig: how to run a credential plugin (kubectl's `users[].user.exec`). */
export const ExecConfigSchema = z.object({
  apiVersion: z.enum(EXEC_API_VERSIONS),
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: z
    .array(z.object({ name: z.string().min(1), value: z.string() }))
    .nullish()
    .describe('Added to the environment mco runs with.'),
  provideClusterInfo: z
    .boolean()
    .optional()
    .describe('Pass the cluster (server, CA, exec extension) in KUBERNETES_EXEC_INFO.'),
  interactiveMode: z
    .enum(['Never', 'IfAvailable', 'Always'])
    .optional()
    .describe('mco never has a terminal: Always is refused when the plugin is run.'),
  installHint: z.string().optional(),
});
export type ExecConfig = z.infer<typeof ExecConfigSchema>;

const allowlist = (schemes: readonly string[]) =>
  z.array(
    z.string().superRefine((entry, ctx) => {
      const problem = allowlistEntryProblem(entry, schemes);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  );

/**
 * mco's extension of a provider entry: what a ClusterProfile may point this
 * provider's credentials at (server-trust.ts, docs/cluster-access.md).
 */
export const ServerPolicySchema = z.object({
  allowedServers: allowlist(['https:'])
    .optional()
    .describe(
      'https://host[:port][/path] entries (*.host for subdomains; no port: 443). Required unless allowAnyServer is true.',
    ),
  allowAnyServer: z
    .boolean()
    .optional()
    .describe('The explicit opt-out of allowedServers: any https server that is not reserved (default false).'),
  allowInsecureSkipTLSVerify: z
    .boolean()
    .optional()
    .describe('Accept insecure-skip-tls-verify: true from a ClusterProfile (default false).'),
  allowedProxyURLs: allowlist(['http:', 'https:', 'socks5:'])
    .optional()
    .describe('Proxies a ClusterProfile may name in proxy-url; absent: proxy-url is refused.'),
});

/** Where credentials may go must be said: an allowlist, or `allowAnyServer: true`, never both. */
function requireServerBound(policy: z.infer<typeof ServerPolicySchema>, ctx: z.RefinementCtx): void {
  if (policy.allowedServers && policy.allowAnyServer === true) {
    ctx.addIssue({
      code: 'custom',
      path: ['allowAnyServer'],
      message: 'allowAnyServer: true and allowedServers exclude each other; keep one',
    });
  } else if (!policy.allowedServers && policy.allowAnyServer !== true) {
    ctx.addIssue({
      code: 'custom',
      path: ['allowedServers'],
      message:
        'required: list the servers (https://host[:port][/path]) these credentials may go to, or set allowAnyServer: true',
    });
  }
}

/** The Cluster Inventory API consumer configuration: which credential plugin serves which access provider. */
export const ProviderFileSchema = z.object({
  providers: z
    .array(
      z
        .object({ name: z.string().min(1), execConfig: ExecConfigSchema })
        .extend(ServerPolicySchema.shape)
        .superRefine(requireServerBound),
    )
    .refine((ps) => new Set(ps.map((p) => p.name)).size === ps.length, 'provider names must be unique'),
  /** The same bounds for ClusterProfiles that name a kubeconfig Secret (absent: those profiles are refused). */
  kubeconfigSecrets: ServerPolicySchema.superRefine(requireServerBound).optional(),
});
export type ProviderFile = z.infer<typeof ProviderFileSchema>;
export type ProviderConfig = ProviderFile['providers'][number];

/** Parses a provider file (JSON or YAML); the error names the offending field. */
export function parseProviderFile(text: string, source = 'provider file'): ProviderFile {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new McoError('Invalid', `${source}: not valid YAML or JSON: ${(error as Error).message}`, false, {
      cause: error,
    });
  }
  const parsed = ProviderFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join('.') : '(root)';
    throw new McoError('Invalid', `${source}: ${field}: ${issue?.message ?? 'invalid'}`, false);
  }
  return parsed.data;
}
