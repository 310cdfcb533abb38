import type { KubeConfig } from '@kubernetes/client-node';
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { apiErrorOf } from './http.js';

export const FIELD_MANAGER = 'mco-testkit';

/**
 * Every object in a YAML file, or in every `.yaml`/`.yml` file of a directory
 * (sorted by name); empty documents are skipped. Throws naming the file on a
 * YAML error.
 */
export function loadYamlObjects(path: string): KubernetesObject[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => ['.yaml', '.yml'].includes(extname(f)))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files.flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8')).flatMap((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const value: unknown = doc.toJS();
      return value && typeof value === 'object' ? [value as KubernetesObject] : [];
    }),
  );
}

/** YAML text of a value (no line folding, so the output is stable and diffs stay small). */
export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}

/** Server-side apply (forced, field manager `mco-testkit`) of each object, in order. */
export async function applyObjects(kc: KubeConfig, objects: readonly KubernetesObject[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const applied: KubernetesObject[] = [];
  for (const object of objects) {
    try {
      applied.push(await api.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
    } catch (error) {
      const { code, message } = apiErrorOf(error);
      throw new Error(
        `apply ${object.kind} ${object.metadata?.name ?? '?'} failed (${code ?? 'no status'}): ${message}`,
        {
          cause: error,
        },
      );
    }
  }
  return applied;
}

export type CrdSource = string | KubernetesObject;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Applies CustomResourceDefinitions (file or directory paths, or objects; other
 * kinds in a file are ignored) and waits until each is Established and its
 * resource actually serves a list, so the caller can use it at once.
 */
export async function installCrds(
  kc: KubeConfig,
  sources: readonly CrdSource[],
  timeoutMs = 30_000,
): Promise<V1CustomResourceDefinition[]> {
  const crds = sources
    .flatMap((source) => (typeof source === 'string' ? loadYamlObjects(source) : [source]))
    .filter((o) => o.kind === 'CustomResourceDefinition');
  if (crds.length === 0) throw new Error('installCrds: no CustomResourceDefinition in the given sources');
  await applyObjects(kc, crds);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  const ready: V1CustomResourceDefinition[] = [];
  for (const { metadata } of crds) {
    const name = metadata?.name ?? '';
    for (;;) {
      const crd = await ext.readCustomResourceDefinition({ name });
      const conditions = crd.status?.conditions ?? [];
      const names = conditions.find((c) => c.type === 'NamesAccepted');
      if (names?.status === 'False') throw new Error(`CRD ${name}: names not accepted: ${names.message}`);
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
        const served = crd.spec.versions.find((v) => v.served);
        if (!served) throw new Error(`CRD ${name} serves no version`);
        // Established can precede the handler by a moment; a list proves it serves.
        const listed = await custom
          .listClusterCustomObject({
            group: crd.spec.group,
            version: served.name,
            plural: crd.spec.names.plural,
            limit: 1,
          })
          .then(
            () => true,
            () => false,
          );
        if (listed) {
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
