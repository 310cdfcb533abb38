import type { KubernetesObject } from '@kubernetes/client-node';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { apiErrorOf, type RawRequestOptions, type RawResponse } from './http.js';

export const FIELD_MANAGER = 'mco-testkit';

/** What the helpers below need of a cluster: raw requests as admin. */
export interface RequestTarget {
  request(path: string, options?: RawRequestOptions): Promise<RawResponse>;
}

/** The documents of a (multi-document) YAML text; empty documents are skipped. Throws on a YAML error. */
export function parseYamlDocuments(text: string, source = 'YAML'): unknown[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    return value === null || value === undefined ? [] : [value];
  });
}

/**
 * Every object in a YAML file, or in every `.yaml`/`.yml` file of a directory
 * (sorted by name). Throws naming the file on a YAML error.
 */
export function loadYamlObjects(path: string): KubernetesObject[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => ['.yaml', '.yml'].includes(extname(f)))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files.flatMap((file) =>
    parseYamlDocuments(readFileSync(file, 'utf8'), file).filter(
      (value): value is KubernetesObject => typeof value === 'object',
    ),
  );
}

/** YAML text of a value (no line folding, so the output is stable and diffs stay small). */
export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}

function failure(what: string, res: RawResponse): Error {
  let message = res.body;
  try {
    message = apiErrorOf({ code: res.status, body: res.body }).message;
  } catch {
    // keep the raw body
  }
  return new Error(`${what} failed (HTTP ${res.status}): ${message}`);
}

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/** The REST path of an object, from discovery (so any kind, custom ones included, works). */
async function objectPath(cluster: RequestTarget, object: KubernetesObject): Promise<string> {
  const { apiVersion = '', kind = '', metadata } = object;
  const groupVersion = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const res = await cluster.request(groupVersion);
  if (res.status !== 200) throw failure(`discovery of ${apiVersion}`, res);
  const resource = (JSON.parse(res.body) as { resources: ApiResource[] }).resources.find(
    (r) => r.kind === kind && !r.name.includes('/'),
  );
  if (!resource) throw new Error(`the server has no kind ${kind} in ${apiVersion}`);
  const name = encodeURIComponent(metadata?.name ?? '');
  return resource.namespaced
    ? `${groupVersion}/namespaces/${encodeURIComponent(metadata?.namespace ?? 'default')}/${resource.name}/${name}`
    : `${groupVersion}/${resource.name}/${name}`;
}

/**
 * Server-side apply (forced, field manager `mco-testkit`) of each object, in
 * order, sent as the raw JSON given. (client-node's typed serialiser would drop
 * keys it has no model for, such as a CRD schema's `x-kubernetes-*` fields.)
 */
export async function applyObjects(
  cluster: RequestTarget,
  objects: readonly KubernetesObject[],
): Promise<KubernetesObject[]> {
  const applied: KubernetesObject[] = [];
  for (const object of objects) {
    const path = await objectPath(cluster, object);
    const res = await cluster.request(`${path}?fieldManager=${FIELD_MANAGER}&force=true`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/apply-patch+yaml' },
      body: JSON.stringify(object),
    });
    if (res.status !== 200 && res.status !== 201) {
      throw failure(`apply ${object.kind} ${object.metadata?.name ?? '?'}`, res);
    }
    applied.push(JSON.parse(res.body) as KubernetesObject);
  }
  return applied;
}

export type CrdSource = string | KubernetesObject;

/** A CustomResourceDefinition as the server returns it (the fields read here). */
export interface InstalledCrd extends KubernetesObject {
  spec: {
    group: string;
    names: { plural: string; kind: string };
    versions: { name: string; served: boolean; [key: string]: unknown }[];
    [key: string]: unknown;
  };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A list of a custom resource that only its watch cache answers (200 once the
 * cache is initialised, 429 before). A `limit` list would not do: the API
 * server sends those to etcd while the cache is not ready (KEP-4568), so they
 * pass before a plain list does. The selector matches nothing, keeping the
 * answer small.
 */
export function cachedListPath(group: string, version: string, plural: string): string {
  return `/apis/${group}/${version}/${plural}?labelSelector=testkit.mco.dev%2Fready-probe%3Dnone`;
}

/**
 * Applies CustomResourceDefinitions (file or directory paths, or objects; other
 * kinds in a file are ignored) and waits until each is Established and its
 * resource actually serves a list, so the caller can use it at once.
 */
export async function installCrds(
  cluster: RequestTarget,
  sources: readonly CrdSource[],
  timeoutMs = 120_000, // a 1.4 MB CRD on a loaded 2-core machine
): Promise<InstalledCrd[]> {
  const crds = sources
    .flatMap((source) => (typeof source === 'string' ? loadYamlObjects(source) : [source]))
    .filter((o) => o.kind === 'CustomResourceDefinition');
  if (crds.length === 0) throw new Error('installCrds: no CustomResourceDefinition in the given sources');
  await applyObjects(cluster, crds);
  const deadline = Date.now() + timeoutMs;
  const ready: InstalledCrd[] = [];
  for (const { metadata } of crds) {
    const name = metadata?.name ?? '';
    for (;;) {
      const res = await cluster.request(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      if (res.status !== 200) throw failure(`read CRD ${name}`, res);
      const crd = JSON.parse(res.body) as InstalledCrd;
      const conditions = crd.status?.conditions ?? [];
      const names = conditions.find((c) => c.type === 'NamesAccepted');
      if (names?.status === 'False') throw new Error(`CRD ${name}: names not accepted: ${names.message}`);
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
        const served = crd.spec.versions.find((v) => v.served);
        if (!served) throw new Error(`CRD ${name} serves no version`);
        // Established can precede the handler by a moment; a list proves it serves.
        const list = await cluster.request(cachedListPath(crd.spec.group, served.name, crd.spec.names.plural));
        if (list.status === 200) {
          ready.push(crd);
          break;
        }
      }
      if (Date.now() > deadline) {
        throw new Error(`CRD ${name} not Established within ${timeoutMs} ms: ${JSON.stringify(conditions)}`);
      }
      await sleep(100);
    }
  }
  return ready;
}
