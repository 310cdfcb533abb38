import type { Placement } from '@mco/core';
import { TEMPLATE_ANNOTATION, formatRef, parseRef, type MemberObjectRef } from './template.js';

/**
 * The placement annotation where mco records, per member cluster, the objects
 * it may have created there. It is written before an object is first applied
 * and a cluster leaves it only once its objects are confirmed gone, so a
 * restart, a lost watch or a deleted placement never forgets a cluster that
 * still holds a sync object.
 */
export const DELIVERED_ANNOTATION = 'configsync.mco.x-k8s.io/delivered';
/** Keeps a deleted placement until its sync objects are gone from every member. */
export const CLEANUP_FINALIZER = 'configsync.mco.x-k8s.io/cleanup';

/** True for a placement Config Sync delivery works on: it has a template, a record, or mco's cleanup finalizer. */
export function isConfigSyncPlacement(placement: Placement | undefined): boolean {
  const metadata = placement?.metadata as (Placement['metadata'] & { finalizers?: string[] }) | undefined;
  const annotations = metadata?.annotations ?? {};
  return (
    TEMPLATE_ANNOTATION in annotations ||
    DELIVERED_ANNOTATION in annotations ||
    (metadata?.finalizers ?? []).includes(CLEANUP_FINALIZER)
  );
}

/** Cluster key (`namespace/name`) → refs of objects mco applied there. */
export type DeliveredRecord = ReadonlyMap<string, readonly MemberObjectRef[]>;

export type RecordResult = { ok: true; record: DeliveredRecord } | { ok: false; error: string };

export function readRecord(placement: Placement): RecordResult {
  const text = placement.metadata.annotations?.[DELIVERED_ANNOTATION];
  const record = new Map<string, MemberObjectRef[]>();
  if (text === undefined) return { ok: true, record };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `annotation ${DELIVERED_ANNOTATION}: ${(error as Error).message}` };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, error: `annotation ${DELIVERED_ANNOTATION}: not an object` };
  }
  for (const [cluster, refs] of Object.entries(value)) {
    const parsed = Array.isArray(refs) ? refs.map((r) => (typeof r === 'string' ? parseRef(r) : undefined)) : [];
    if (!Array.isArray(refs) || parsed.some((r) => r === undefined)) {
      return {
        ok: false,
        error: `annotation ${DELIVERED_ANNOTATION}: cluster ${cluster}: not a list of Kind/namespace/name`,
      };
    }
    record.set(cluster, parsed as MemberObjectRef[]);
  }
  return { ok: true, record };
}

/** Serialised with sorted keys and refs, so an unchanged record compares equal as text. */
export function writeRecord(record: DeliveredRecord): string {
  const entries = [...record.entries()]
    .filter(([, refs]) => refs.length > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([cluster, refs]) => [cluster, [...new Set(refs.map(formatRef))].sort()]);
  return JSON.stringify(Object.fromEntries(entries));
}

/** The union of two ref lists, without duplicates. */
export function mergeRefs(a: readonly MemberObjectRef[], b: readonly MemberObjectRef[]): MemberObjectRef[] {
  const seen = new Map<string, MemberObjectRef>();
  for (const ref of [...a, ...b]) seen.set(formatRef(ref), ref);
  return [...seen.values()];
}
