import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  AccessProviderSchema,
  CLUSTER_MANAGER_LABEL,
  CONTROL_PLANE_HEALTHY,
  clusterKey,
  type AccessProvider,
  type AccessProviderCluster,
} from '@mco/core';
import { McoError } from '@mco/runtime';
import { z } from 'zod';
import type { DesiredClusterProfile } from './sync.js';

// Kubernetes name rules (apimachinery validation), fixed patterns, not user input.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const PEM_CERTIFICATE = '-----BEGIN CERTIFICATE-----';
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----\r?\n?/g;

const ResourceName = z
  .string()
  .max(253)
  .regex(DNS_SUBDOMAIN, 'must be a lower-case DNS subdomain (a-z, 0-9, "-", ".")');
const NamespaceName = z.string().max(63).regex(DNS_LABEL, 'must be a lower-case DNS label (a-z, 0-9, "-")');

/** A label or annotation key: `[prefix/]name`. */
export function isQualifiedKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length <= 63 && QUALIFIED_NAME.test(name);
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

const Labels = z.record(z.string(), z.string()).superRefine((labels, ctx) => {
  for (const [key, value] of Object.entries(labels)) {
    if (!isQualifiedKey(key)) ctx.addIssue({ code: 'custom', path: [key], message: 'is not a valid label key' });
    else if (key === CLUSTER_MANAGER_LABEL)
      ctx.addIssue({ code: 'custom', path: [key], message: 'is set by the provider; remove it' });
    else if (!isLabelValue(value))
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: 'is not a valid label value (at most 63 of a-z, A-Z, 0-9, "-", "_", ".", alphanumeric at both ends)',
      });
  }
});

const Annotations = z.record(z.string(), z.string()).superRefine((annotations, ctx) => {
  for (const key of Object.keys(annotations))
    if (!isQualifiedKey(key)) ctx.addIssue({ code: 'custom', path: [key], message: 'is not a valid annotation key' });
});

const Base64Pem = z
  .string()
  .refine(
    (value) =>
      /^[A-Za-z0-9+/=\s]+$/.test(value) && Buffer.from(value, 'base64').toString('utf8').includes(PEM_CERTIFICATE),
    'must be base64 of a PEM certificate bundle (as in a kubeconfig)',
  );

/** One cluster in a clusters file. Unknown fields are rejected, so a typo names itself. */
export const ClusterDeclarationSchema = z
  .strictObject({
    name: ResourceName,
    /** Defaults to the provider's namespace. */
    namespace: NamespaceName.optional(),
    displayName: z.string().max(256).optional(),
    labels: Labels.optional(),
    annotations: Annotations.optional(),
    /** `status.properties`, name → value. */
    properties: z.record(z.string().min(1).max(253), z.string().min(1).max(1024)).optional(),
    /** Writes condition ControlPlaneHealthy; absent leaves it out (unknown, never unhealthy). */
    controlPlaneHealthy: z.boolean().optional(),
    kubernetesVersion: z.string().max(64).optional(),
    /** The access provider's name in `status.accessProviders`. */
    accessProvider: z.string().min(1).max(253).default('kubeconfig'),
    server: z.url({ protocol: /^https?$/ }).optional(),
    certificateAuthorityData: Base64Pem.optional(),
    /** A PEM file, relative to the clusters file; its content is written as certificate-authority-data. */
    certificateAuthorityFile: z.string().min(1).optional(),
    tlsServerName: z.string().min(1).optional(),
    proxyUrl: z.url().optional(),
    insecureSkipTlsVerify: z.boolean().optional(),
    /** clientcmd extensions of the access provider's cluster, e.g. `client.authentication.k8s.io/exec`. */
    extensions: z.array(z.object({ name: z.string().min(1), extension: z.unknown() })).optional(),
    /** The full list instead of the shorthand fields above. */
    accessProviders: z.array(AccessProviderSchema).optional(),
    /** Server, CA, TLS server name and proxy of a kubeconfig context (never its credentials). */
    fromKubeconfig: z.strictObject({ path: z.string().min(1), context: z.string().min(1) }).optional(),
  })
  .superRefine((d, ctx) => {
    const shorthand = (
      [
        'server',
        'certificateAuthorityData',
        'certificateAuthorityFile',
        'tlsServerName',
        'proxyUrl',
        'insecureSkipTlsVerify',
      ] as const
    ).filter((k) => d[k] !== undefined);
    if (d.accessProviders && (shorthand.length > 0 || d.fromKubeconfig))
      ctx.addIssue({
        code: 'custom',
        path: ['accessProviders'],
        message: `cannot be combined with ${d.fromKubeconfig ? 'fromKubeconfig' : shorthand.join(', ')}`,
      });
    if (d.fromKubeconfig && shorthand.some((k) => k !== 'insecureSkipTlsVerify' && k !== 'tlsServerName'))
      ctx.addIssue({
        code: 'custom',
        path: ['fromKubeconfig'],
        message: `cannot be combined with ${shorthand.join(', ')}: the context provides them`,
      });
    if (d.certificateAuthorityData && d.certificateAuthorityFile)
      ctx.addIssue({
        code: 'custom',
        path: ['certificateAuthorityFile'],
        message: 'cannot be combined with certificateAuthorityData',
      });
    if (!d.server && !d.fromKubeconfig && shorthand.length > 0)
      ctx.addIssue({ code: 'custom', path: ['server'], message: `is required with ${shorthand.join(', ')}` });
  });
export type ClusterDeclaration = z.input<typeof ClusterDeclarationSchema>;

/**
 * A clusters file: `clusters: [...]`. The list is required: an empty document
 * (a truncated write, a comments-only file, `{}`) would otherwise declare zero
 * clusters and prune every profile; an explicit `clusters: []` declares none.
 */
export const ClustersFileSchema = z
  .strictObject({ clusters: z.array(ClusterDeclarationSchema).max(10_000) })
  .superRefine((file, ctx) => {
    const seen = new Map<string, number>();
    file.clusters.forEach((c, i) => {
      const key = `${c.namespace ?? ''}/${c.name}`;
      const first = seen.get(key);
      if (first !== undefined)
        ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: `repeats clusters[${first}]` });
      else seen.set(key, i);
    });
  });
export type ClustersFile = z.input<typeof ClustersFileSchema>;

/** `a.b[0].c` from a zod issue path. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
    '',
  );
}

/** Parses a clusters file or throws McoError(Invalid) naming the file and the offending fields. */
export function parseClustersFile(value: unknown, source = 'clusters file'): z.output<typeof ClustersFileSchema> {
  if (value === null || value === undefined)
    throw new McoError(
      'Invalid',
      `invalid ${source}: the file is empty (declare no cluster with "clusters: []")`,
      false,
    );
  const result = ClustersFileSchema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues
    .slice(0, 5)
    .map((issue) => `${formatIssuePath(issue.path) || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new McoError('Invalid', `invalid ${source}: ${issues}`, false);
}

export interface ResolveOptions {
  /** Namespace of declarations that name none. */
  readonly namespace: string;
  /** Directory that relative paths in the file are relative to. */
  readonly baseDir: string;
  readonly readFile?: (path: string) => Promise<Buffer>;
}

/**
 * Turns parsed declarations into the profiles the writer applies: reads CA
 * files and kubeconfig contexts (paths relative to `baseDir`, `~/` is the home
 * directory). Throws McoError(Invalid) naming `clusters[i].field` when a file
 * or context cannot be read, so an unreadable input never prunes anything.
 */
export async function resolveClusterDeclarations(
  declarations: readonly z.output<typeof ClusterDeclarationSchema>[],
  options: ResolveOptions,
): Promise<DesiredClusterProfile[]> {
  const read = options.readFile ?? ((path: string) => readFile(path));
  const out: DesiredClusterProfile[] = [];
  const seen = new Map<string, number>();
  for (const [i, d] of declarations.entries()) {
    const field = (name: string) => `clusters[${i}].${name}`;
    const namespace = d.namespace ?? options.namespace;
    const key = clusterKey(namespace, d.name);
    if (seen.has(key))
      throw new McoError('Invalid', `${field('name')}: ${key} repeats clusters[${seen.get(key)}]`, false);
    seen.set(key, i);
    let accessProviders: AccessProvider[] = d.accessProviders ? [...d.accessProviders] : [];
    if (d.fromKubeconfig) {
      const path = resolvePath(options.baseDir, d.fromKubeconfig.path);
      let cluster: AccessProviderCluster;
      try {
        const kc = new KubeConfig();
        kc.loadFromString((await read(path)).toString('utf8'));
        kc.makePathsAbsolute(resolve(path, '..'));
        cluster = await clusterFromKubeconfig(kc, d.fromKubeconfig.context, read);
      } catch (error) {
        throw new McoError('Invalid', `${field('fromKubeconfig')}: ${(error as Error).message}`, false, {
          cause: error,
        });
      }
      if (d.tlsServerName) cluster = { ...cluster, 'tls-server-name': d.tlsServerName };
      if (d.insecureSkipTlsVerify !== undefined)
        cluster = { ...cluster, 'insecure-skip-tls-verify': d.insecureSkipTlsVerify };
      if (d.extensions) cluster = { ...cluster, extensions: d.extensions };
      accessProviders = [{ name: d.accessProvider, cluster }];
    } else if (d.server) {
      let caData = d.certificateAuthorityData?.replace(/\s+/g, '');
      if (d.certificateAuthorityFile) {
        const path = resolvePath(options.baseDir, d.certificateAuthorityFile);
        caData = await readCaFile(path, read).catch((error: Error) => {
          throw new McoError('Invalid', `${field('certificateAuthorityFile')}: ${error.message}`, false);
        });
      }
      accessProviders = [
        {
          name: d.accessProvider,
          cluster: {
            server: d.server,
            ...(caData ? { 'certificate-authority-data': caData } : {}),
            ...(d.tlsServerName ? { 'tls-server-name': d.tlsServerName } : {}),
            ...(d.proxyUrl ? { 'proxy-url': d.proxyUrl } : {}),
            ...(d.insecureSkipTlsVerify !== undefined ? { 'insecure-skip-tls-verify': d.insecureSkipTlsVerify } : {}),
            ...(d.extensions ? { extensions: d.extensions } : {}),
          },
        },
      ];
    }
    const properties = Object.entries(d.properties ?? {})
      .map(([name, value]) => ({ name, value }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    out.push({
      namespace,
      name: d.name,
      ...(d.displayName ? { displayName: d.displayName } : {}),
      ...(d.labels ? { labels: d.labels } : {}),
      ...(d.annotations ? { annotations: d.annotations } : {}),
      status: {
        accessProviders,
        properties,
        conditions:
          d.controlPlaneHealthy === undefined
            ? []
            : [
                {
                  type: CONTROL_PLANE_HEALTHY,
                  status: d.controlPlaneHealthy ? 'True' : 'False',
                  reason: d.controlPlaneHealthy ? 'DeclaredHealthy' : 'DeclaredUnhealthy',
                  message: 'declared in the clusters file',
                },
              ],
        ...(d.kubernetesVersion ? { version: { kubernetes: d.kubernetesVersion } } : {}),
      },
    });
  }
  return out;
}

/**
 * The access-provider cluster of a kubeconfig context: server, CA (a CA file
 * is read and inlined), TLS server name, proxy. The context's credentials are
 * never copied: a ClusterProfile is readable by everyone who may list clusters.
 */
export async function clusterFromKubeconfig(
  kubeConfig: KubeConfig,
  contextName: string,
  read: (path: string) => Promise<Buffer> = (path) => readFile(path),
): Promise<AccessProviderCluster> {
  const context = kubeConfig.getContextObject(contextName);
  if (!context) {
    const known = kubeConfig.getContexts().map((c) => c.name);
    throw new Error(`context "${contextName}" not found (contexts: ${known.join(', ') || 'none'})`);
  }
  const cluster = kubeConfig.getCluster(context.cluster);
  if (!cluster) throw new Error(`context "${contextName}" names cluster "${context.cluster}", which is not defined`);
  let caData = cluster.caData?.replace(/\s+/g, '');
  if (!caData && cluster.caFile) caData = await readCaFile(cluster.caFile, read);
  return {
    server: cluster.server,
    ...(caData ? { 'certificate-authority-data': caData } : {}),
    ...(cluster.tlsServerName ? { 'tls-server-name': cluster.tlsServerName } : {}),
    ...(cluster.proxyUrl ? { 'proxy-url': cluster.proxyUrl } : {}),
    ...(cluster.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
  };
}

async function readCaFile(path: string, read: (path: string) => Promise<Buffer>): Promise<string> {
  let content: Buffer;
  try {
    content = await read(path);
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  // Only X.509 certificates are published (the CA goes into ClusterProfile status,
  // readable by every tenant): a private key or anything else in the file is left
  // out, and a certificate block that does not parse is an error.
  const certificates: string[] = [];
  for (const [block, type] of content.toString('utf8').matchAll(PEM_BLOCK)) {
    if (type !== 'CERTIFICATE') continue;
    try {
      new X509Certificate(block);
    } catch {
      throw new Error(`${path} holds a CERTIFICATE block that is not an X.509 certificate`);
    }
    certificates.push(block);
  }
  if (certificates.length === 0) throw new Error(`${path} holds no PEM certificate`);
  return Buffer.from(certificates.join('')).toString('base64');
}

function resolvePath(baseDir: string, path: string): string {
  if (path === '~' || path.startsWith('~/')) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}
