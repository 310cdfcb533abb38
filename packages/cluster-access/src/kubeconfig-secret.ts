import type { AccessProviderCluster } from '@mco/core';
import { parse as parseYaml } from 'yaml';
import type { Credential } from '@mco/runtime';

/** ClusterProfile annotation naming a Secret (same namespace, key `kubeconfig`) with a static kubeconfig. */
export const KUBECONFIG_SECRET_ANNOTATION = 'orchestra.multicluster.x-k8s.io/kubeconfig-secret';
export const KUBECONFIG_SECRET_KEY = 'kubeconfig';

/**
 * Where a YAML error is, without the parser's message: that quotes the
 * offending line, which in a kubeconfig is often the token itself.
 */
function yamlErrorPosition(error: unknown): string {
  const position = (error as { linePos?: readonly { line: number; col: number }[] }).linePos?.[0];
  return position ? ` at line ${position.line}, column ${position.col}` : '';
}

/** User fields that would make mco run a command or read a hub file on behalf of whoever can write the Secret. */
const REFUSED_USER_FIELDS = [
  'exec',
  'auth-provider',
  'token-file',
  'client-certificate',
  'client-key',
  'username',
  'password',
];

export interface StaticKubeconfig {
  readonly cluster: AccessProviderCluster;
  readonly credential: Credential;
}

/**
 * Reads the current context of a self-contained kubeconfig: inline CA, and a
 * token or an inline client certificate. Exec plugins, auth providers and file
 * references are refused: a Secret is a static credential, like Flux's
 * `kubeConfig.secretRef`. Throws an Error naming the offending field.
 */
export function parseStaticKubeconfig(text: string): StaticKubeconfig {
  let doc: Record<string, unknown>;
  try {
    doc = parseYaml(text) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`not valid YAML${yamlErrorPosition(error)}`);
  }
  if (!doc || typeof doc !== 'object') throw new Error('not a kubeconfig');
  const contextName = doc['current-context'];
  if (typeof contextName !== 'string' || !contextName) throw new Error('current-context is not set');
  const named = (list: unknown, kind: string, name: string): Record<string, unknown> => {
    const item = Array.isArray(list) ? (list as { name?: unknown }[]).find((e) => e && e.name === name) : undefined;
    const body = (item as Record<string, unknown> | undefined)?.[kind];
    if (!body || typeof body !== 'object') throw new Error(`${kind} "${name}" is not defined in ${kind}s`);
    return body as Record<string, unknown>;
  };
  const context = named(doc.contexts, 'context', contextName);
  const cluster = named(doc.clusters, 'cluster', String(context.cluster ?? ''));
  const user = named(doc.users, 'user', String(context.user ?? ''));

  for (const field of REFUSED_USER_FIELDS) {
    if (user[field] !== undefined && user[field] !== null && user[field] !== '') {
      throw new Error(
        `users[].user.${field} is not allowed in a kubeconfig Secret (use a token or inline certificate data)`,
      );
    }
  }
  if (cluster['certificate-authority']) {
    throw new Error('clusters[].cluster.certificate-authority (a file) is not allowed; use certificate-authority-data');
  }
  if (typeof cluster.server !== 'string' || !cluster.server) throw new Error('clusters[].cluster.server is missing');
  const str = (o: Record<string, unknown>, k: string) =>
    typeof o[k] === 'string' && o[k] ? (o[k] as string) : undefined;
  const token = str(user, 'token');
  const cert = str(user, 'client-certificate-data');
  const key = str(user, 'client-key-data');
  if (!!cert !== !!key) throw new Error('users[].user needs both client-certificate-data and client-key-data');
  if (!token && !cert) throw new Error('users[].user has neither token nor client-certificate-data');
  const pem = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return {
    cluster: {
      server: cluster.server,
      ...(str(cluster, 'certificate-authority-data')
        ? { 'certificate-authority-data': str(cluster, 'certificate-authority-data') }
        : {}),
      ...(str(cluster, 'tls-server-name') ? { 'tls-server-name': str(cluster, 'tls-server-name') } : {}),
      ...(str(cluster, 'proxy-url') ? { 'proxy-url': str(cluster, 'proxy-url') } : {}),
      ...(cluster['insecure-skip-tls-verify'] === true ? { 'insecure-skip-tls-verify': true } : {}),
    },
    credential: {
      ...(token ? { token } : {}),
      ...(cert && key ? { clientCertificateData: pem(cert), clientKeyData: pem(key) } : {}),
    },
  };
}
