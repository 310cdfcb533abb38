import type { Condition, Placement } from '@mco/core';
import type { ExistingObject, HubWriter, MemberObjects } from '../src/index.js';
import type { MemberObject, MemberObjectRef } from '../src/index.js';

const refKey = (ref: MemberObjectRef) => `${ref.kind}/${ref.namespace}/${ref.name}`;

/**
 * A member cluster's objects in memory, for unit tests and the benchmark: it
 * stores what is applied, counts writes, can be made unreachable, and keeps a
 * deleted object while it has finalizers (as the API server does).
 */
export class FakeMember implements MemberObjects {
  readonly objects = new Map<string, ExistingObject>();
  writes = 0;
  reachable = true;
  /** Called after every apply (the benchmark times status change → applied). */
  onApply: ((object: MemberObject) => void) | undefined;
  private uid = 0;

  constructor(readonly latencyMs = 0) {}

  private async call(): Promise<void> {
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    if (!this.reachable) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  }

  async get(ref: MemberObjectRef) {
    await this.call();
    const object = this.objects.get(refKey(ref));
    return object && structuredClone(object);
  }

  async apply(object: MemberObject) {
    await this.call();
    this.writes++;
    const existing = this.objects.get(refKey({ ...object, ...object.metadata }));
    const stored: ExistingObject = {
      ...structuredClone(object),
      metadata: { ...structuredClone(object.metadata), uid: existing?.metadata?.uid ?? `uid-${++this.uid}` },
      ...(existing?.status ? { status: existing.status } : {}),
    };
    if (existing?.metadata?.finalizers) stored.metadata!.finalizers = existing.metadata.finalizers;
    this.objects.set(
      refKey({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name }),
      stored,
    );
    this.onApply?.(object);
    return structuredClone(stored);
  }

  async delete(ref: MemberObjectRef, uid: string | undefined) {
    await this.call();
    const object = this.objects.get(refKey(ref));
    if (!object || (uid && object.metadata?.uid !== uid)) return;
    this.writes++;
    if (object.metadata?.finalizers?.length) object.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    else this.objects.delete(refKey(ref));
  }

  /** What Config Sync's reconciler-manager does when it has finished deleting. */
  finishDeletion(ref: MemberObjectRef) {
    const object = this.objects.get(refKey(ref));
    if (object?.metadata?.deletionTimestamp) this.objects.delete(refKey(ref));
  }
}

/** The hub writes in memory: applies them to the placement objects of a map, like the API server would. */
export class FakeHub implements HubWriter {
  writes = 0;
  readonly events: string[] = [];

  constructor(private readonly placements: Map<string, Placement>) {}

  private find(p: Placement): Placement {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const stored = this.placements.get(key);
    if (!stored) throw Object.assign(new Error('not found'), { code: 404 });
    return stored;
  }

  async applyPlacementMetadata(p: Placement, annotations: Record<string, string>, finalizers: readonly string[]) {
    this.writes++;
    const stored = structuredClone(this.find(p));
    stored.metadata.annotations = { ...stored.metadata.annotations, ...annotations };
    (stored.metadata as { finalizers?: string[] }).finalizers = [...finalizers];
    this.placements.set(`${p.metadata.namespace}/${p.metadata.name}`, stored);
  }

  async applyCondition(p: Placement, condition: Condition) {
    this.writes++;
    const stored = structuredClone(this.find(p));
    const others = stored.status?.conditions?.filter((c) => c.type !== condition.type) ?? [];
    stored.status = { ...stored.status, conditions: [...others, condition] };
    this.placements.set(`${p.metadata.namespace}/${p.metadata.name}`, stored);
  }

  async createEvent(_p: Placement, type: string, reason: string, message: string) {
    this.events.push(`${type} ${reason} ${message}`);
  }
}
