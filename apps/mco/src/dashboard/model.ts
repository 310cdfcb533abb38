import {
  clusterKey,
  CONTROL_PLANE_HEALTHY,
  explain,
  formatTaint,
  parseTaints,
  PLACEMENT_KIND,
  type ClusterProfile,
  type Placement,
  type PlacementCluster,
} from '@mco/core';
import { kubeconfigSecretName, placementLabelValue } from '@mco/flux';
import type { InformerEvent, KubeObject } from '@mco/kube-runtime';
import { explanationRows } from '../explain-rows.js';
import type {
  ClusterView,
  ControllerView,
  DeliveryView,
  EventView,
  LaneSegment,
  PlacementClusterView,
  PlacementDetail,
  PlacementSummary,
  SignalView,
  View,
} from './view.js';

// @mco/flux's annotations naming the placement and ClusterProfile of a delivery object (a test keeps
// them equal): importing @mco/flux would load the whole adapter with it.
export const PLACEMENT_ANNOTATION = 'orchestra.multicluster.x-k8s.io/placement-key';
export const CLUSTER_PROFILE_ANNOTATION = 'orchestra.multicluster.x-k8s.io/cluster-profile';
// @mco/flux's input provider labels naming a placement (selected by a ResourceSet).
export const PLACEMENT_LABEL = 'orchestra.multicluster.x-k8s.io/placement';
export const PLACEMENT_NAMESPACE_LABEL = 'orchestra.multicluster.x-k8s.io/placement-namespace';
// What flux-operator labels a ResourceSet's objects with.
export const RESOURCESET_NAME_LABEL = 'resourceset.fluxcd.controlplane.io/name';
export const RESOURCESET_NAMESPACE_LABEL = 'resourceset.fluxcd.controlplane.io/namespace';
// The mco generator plugin's input parameters (docs/argocd.md).
const PLUGIN_PLACEMENT_NAME = 'multiClusterOrchestraPlacementName';
const PLUGIN_PLACEMENT_NAMESPACE = 'multiClusterOrchestraPlacementNamespace';
const CORDONED = 'mco.x-k8s.io/cordoned';
const DRAINED = 'mco.x-k8s.io/drained';

/** A core/v1 Event, as far as the page reads it. */
export interface KubeEvent extends KubeObject {
  involvedObject?: { kind?: string; namespace?: string; name?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  firstTimestamp?: string | null;
}

/** What the viewer may list, per namespace. */
export interface Visibility {
  readonly clusterProfiles: (namespace: string) => boolean;
  readonly placements: (namespace: string) => boolean;
  readonly events: (namespace: string) => boolean;
}

export const SEE_ALL: Visibility = { clusterProfiles: () => true, placements: () => true, events: () => true };

interface LaneEntry {
  readonly at: number;
  /** `-`: no longer listed. */
  readonly state: string;
  readonly desiredMaxReplicas?: number;
}

/**
 * A placement's Event as the dashboard keeps it (the Events informer's
 * transform, {@link keptEvent}): its metadata and what the page shows of it,
 * cut to size. `shown` is dropped when the model evicts the Event, so the
 * informer then holds only the metadata.
 */
export interface KeptEvent extends KubeObject {
  shown?: { readonly placement: string; readonly event: EventView; readonly bytes: number };
}

/**
 * An Argo CD or Flux object as the dashboard keeps it ({@link keptDeliveryObject}); `shown` as in {@link KeptEvent}.
 * It names its placement itself (`placement`, rendered mode) or through the ApplicationSet or ResourceSet that
 * generated it (`owner`, a {@link KeptGenerator} key); `kubeconfigSecret`: a Flux object's cluster, by mco's Secret.
 */
export interface KeptDeliveryObject extends KubeObject {
  shown?: {
    readonly placement?: string;
    readonly owner?: string;
    readonly kubeconfigSecret?: string;
    readonly delivery: DeliveryView;
    readonly bytes: number;
  };
}

/** An ApplicationSet or ResourceSet as the dashboard keeps it ({@link keptGenerator}): the placement it delivers. */
export interface KeptGenerator extends KubeObject {
  /** `name` as the generator gives it: a ResourceSet's label value may be the name's slug. */
  placement?: { readonly namespace: string; readonly name: string };
}

/** The longest Event message kept, in characters; a longer one is cut. */
export const MAX_EVENT_MESSAGE = 1024;

export interface FleetModelOptions {
  /** State changes kept per cluster of a placement (a ring: the oldest goes first). */
  readonly laneLength?: number;
  /** Placement Events kept, and their text in bytes (about): past either, the oldest received goes first. */
  readonly maxEvents?: number;
  readonly maxEventBytes?: number;
  /** Delivery objects kept, likewise. */
  readonly maxDeliveryObjects?: number;
  readonly maxDeliveryBytes?: number;
  /** The controller's Lease, `namespace/name` (default {@link DEFAULT_CONTROLLER_LEASE}). */
  readonly controllerLease?: string;
  readonly now?: () => number;
}

export const DEFAULT_CONTROLLER_LEASE = 'kube-system/mco-controller';
/** A controller not seen for this long (four default Lease durations) is stale. */
export const CONTROLLER_STALE_AFTER_MS = 60_000;

export const DEFAULT_EVENT_BOUNDS = { maxEvents: 10_000, maxEventBytes: 8 * 1024 * 1024 } as const;
export const DEFAULT_DELIVERY_BOUNDS = { maxDeliveryObjects: 10_000, maxDeliveryBytes: 8 * 1024 * 1024 } as const;

/**
 * The hub as the informers last saw it, plus each placement's per-cluster
 * state changes since the server started (bounded), from which every viewer's
 * {@link View} is built. `version` grows on every change.
 */
export class FleetModel {
  readonly startedAt: number;
  version = 0;
  private readonly profiles = new Map<string, ClusterProfile>();
  private readonly placements = new Map<string, Placement>();
  private readonly events: BoundedMap<KeptEvent>;
  private readonly delivery: BoundedMap<KeptDeliveryObject>;
  private readonly generators = new Map<string, NonNullable<KeptGenerator['placement']>>();
  readonly controllerLease: string;
  /** The renewTime of each of the controller's Leases, by name. */
  private readonly leases = new Map<string, number>();
  private wasStale = false;
  private readonly lanes = new Map<string, Map<string, LaneEntry[]>>();
  private readonly laneLength: number;
  private readonly now: () => number;
  private readonly listeners = new Set<() => void>();

  constructor(options: FleetModelOptions = {}) {
    this.now = options.now ?? Date.now;
    this.laneLength = options.laneLength ?? 64;
    this.events = new BoundedMap(
      options.maxEvents ?? DEFAULT_EVENT_BOUNDS.maxEvents,
      options.maxEventBytes ?? DEFAULT_EVENT_BOUNDS.maxEventBytes,
    );
    this.delivery = new BoundedMap(
      options.maxDeliveryObjects ?? DEFAULT_DELIVERY_BOUNDS.maxDeliveryObjects,
      options.maxDeliveryBytes ?? DEFAULT_DELIVERY_BOUNDS.maxDeliveryBytes,
    );
    this.controllerLease = options.controllerLease ?? DEFAULT_CONTROLLER_LEASE;
    this.startedAt = this.now();
  }

  /** A Lease in the controller's Lease namespace: its shards' (`<name>`, `<name>-<i>`) and members' Leases count. */
  lease(event: InformerEvent, object: KubeObject): void {
    const name = String(object.metadata?.name);
    const base = this.controllerLease.slice(this.controllerLease.indexOf('/') + 1);
    if (name !== base && !/^\d+$|^members$/.test(name.startsWith(`${base}-`) ? name.slice(base.length + 1) : ''))
      return;
    const renewed = Date.parse(String((object.spec as { renewTime?: string } | undefined)?.renewTime));
    if (event === 'delete' || !Number.isFinite(renewed)) this.leases.delete(name);
    else this.leases.set(name, renewed);
    this.wasStale = this.controller().stale;
    this.changed();
  }

  /** Re-sends the view when the controller turned stale with time alone (call it now and then). */
  tick(): void {
    const stale = this.controller().stale;
    if (stale !== this.wasStale) {
      this.wasStale = stale;
      this.changed();
    }
  }

  private controller(): ControllerView {
    const lastSeen = this.leases.size > 0 ? Math.max(...this.leases.values()) : undefined;
    return {
      lease: this.controllerLease,
      ...(lastSeen !== undefined ? { lastSeen } : {}),
      stale: lastSeen !== undefined && this.now() - lastSeen > CONTROLLER_STALE_AFTER_MS,
      staleAfter: CONTROLLER_STALE_AFTER_MS,
    };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    this.version++;
    for (const listener of this.listeners) listener();
  }

  clusterProfile(event: InformerEvent, object: KubeObject): void {
    this.put(this.profiles, event, object as unknown as ClusterProfile);
  }

  placement(event: InformerEvent, object: KubeObject): void {
    const placement = object as unknown as Placement;
    const key = keyOf(object);
    this.put(this.placements, event, placement);
    this.record(key, event === 'delete' ? [] : (placement.status?.clusters ?? []));
    if (event === 'delete') this.lanes.delete(key);
    this.changed();
  }

  /** A placement's Event, as {@link keptEvent} made it; any other Event is ignored. */
  event(event: InformerEvent, object: KeptEvent): void {
    if (this.events.update(keyOf(object), event === 'delete' ? undefined : object)) this.changed();
  }

  /** An Argo CD Application or Flux Kustomization/HelmRelease, as {@link keptDeliveryObject} made it. */
  deliveryObject(event: InformerEvent, object: KeptDeliveryObject): void {
    const key = `${object.kind}/${keyOf(object)}`;
    if (this.delivery.update(key, event === 'delete' ? undefined : object)) this.changed();
  }

  /** An ApplicationSet or ResourceSet, as {@link keptGenerator} made it. */
  generator(event: InformerEvent, object: KeptGenerator): void {
    const key = `${object.kind}/${keyOf(object)}`;
    if (event === 'delete' || !object.placement) {
      if (!this.generators.delete(key)) return;
    } else this.generators.set(key, object.placement);
    this.changed();
  }

  private put<T>(map: Map<string, T>, event: InformerEvent, object: T): void {
    const key = keyOf(object as KubeObject);
    if (event === 'delete') map.delete(key);
    else map.set(key, object);
    if (map !== this.placements) this.changed();
  }

  /** Appends a lane entry for every cluster whose state or draining target changed. */
  private record(placement: string, clusters: NonNullable<Placement['status']>['clusters'] & object): void {
    const now = this.now();
    let lanes = this.lanes.get(placement);
    if (!lanes) this.lanes.set(placement, (lanes = new Map()));
    const listed = new Set<string>();
    for (const c of clusters) {
      const key = clusterKey(c.namespace, c.name);
      listed.add(key);
      const since = Date.parse(c.lastTransitionTime);
      this.append(lanes, key, {
        // The first sight of a cluster starts at its status' lastTransitionTime (known from before the server started).
        at: lanes.has(key) || !Number.isFinite(since) ? now : Math.min(since, now),
        state: c.state,
        ...(c.draining ? { desiredMaxReplicas: c.draining.desiredMaxReplicas } : {}),
      });
    }
    for (const key of lanes.keys()) if (!listed.has(key)) this.append(lanes, key, { at: now, state: '-' });
  }

  private append(lanes: Map<string, LaneEntry[]>, key: string, entry: LaneEntry): void {
    const lane = lanes.get(key) ?? [];
    const last = lane.at(-1);
    if (last && last.state === entry.state && last.desiredMaxReplicas === entry.desiredMaxReplicas) return;
    lane.push(entry);
    if (lane.length > this.laneLength) lane.shift();
    lanes.set(key, lane);
  }

  /** Every namespace holding something the page may show (for the access checks). */
  namespaces(): Set<string> {
    const out = new Set<string>();
    for (const o of [...this.profiles.values(), ...this.placements.values(), ...this.events.values()]) {
      if (o.metadata?.namespace) out.add(o.metadata.namespace);
    }
    return out;
  }

  /** What a viewer with `visible` sees; `selected` (`namespace/name`) adds that placement's details. */
  view(visible: Visibility, user: string, synced: boolean, selected?: string): View {
    const placements = [...this.placements.values()]
      .filter((p) => visible.placements(p.metadata.namespace ?? ''))
      .sort(byKey);
    const profiles = [...this.profiles.values()]
      .filter((p) => visible.clusterProfiles(p.metadata.namespace))
      .sort(byKey);
    const controller = this.controller();
    // A stale controller evaluates nothing: no signal it wrote is fresh any more.
    const staleWhy = controller.stale
      ? `the controller was last seen at ${new Date(controller.lastSeen!).toISOString()}`
      : undefined;
    const summaries = placements.map((p) => summary(p, staleWhy));
    const users = new Map<string, ClusterView['placements'][number][]>();
    for (const p of summaries) {
      for (const c of p.clusters) {
        const list = users.get(c.key) ?? [];
        list.push({ key: p.key, state: c.state, ...(c.signal ? { signal: c.signal } : {}) });
        users.set(c.key, list);
      }
    }
    const selectedPlacement = selected ? placements.find((p) => keyOf(p as KubeObject) === selected) : undefined;
    return {
      now: this.now(),
      controller,
      user,
      synced,
      clusters: profiles.map((p) => clusterView(p, users.get(keyOf(p as KubeObject)) ?? [])),
      placements: summaries,
      ...(selectedPlacement ? { placement: this.detail(selectedPlacement, profiles, visible, staleWhy) } : {}),
    };
  }

  private detail(
    placement: Placement,
    profiles: ClusterProfile[],
    visible: Visibility,
    staleWhy: string | undefined,
  ): PlacementDetail {
    const key = keyOf(placement as KubeObject);
    const now = this.now();
    const explanation = explain({
      now: new Date(now),
      placement,
      // The engine's view of the whole fleet, then only the rows the viewer may see.
      clusterProfiles: [...this.profiles.values()],
      signals: [],
      requireWorkloadInPlacementNamespace: true,
    });
    const shown = new Set(profiles.map((p) => keyOf(p as KubeObject)));
    const lanes = [...(this.lanes.get(key) ?? new Map<string, LaneEntry[]>()).entries()]
      .filter(
        ([cluster]) =>
          shown.has(cluster) || placement.status?.clusters?.some((c) => clusterKey(c.namespace, c.name) === cluster),
      )
      .map(([cluster, entries]) => ({ cluster, segments: segments(entries) }));
    const events: EventView[] = visible.events(placement.metadata.namespace ?? '')
      ? [...this.events.values()]
          .filter((e) => e.shown!.placement === key)
          .map((e) => e.shown!.event)
          .sort((a, b) => b.at.localeCompare(a.at))
          .slice(0, 50)
      : [];
    const name = placement.metadata.name;
    const namespace = placement.metadata.namespace ?? '';
    const delivers = (owner: string | undefined) => {
      const p = owner === undefined ? undefined : this.generators.get(owner);
      return p?.namespace === namespace && (p.name === name || p.name === placementLabelValue(name));
    };
    const secrets = new Map(
      (placement.status?.clusters ?? []).map((c) => [
        kubeconfigSecretName(c.namespace ?? '', c.name),
        clusterKey(c.namespace, c.name),
      ]),
    );
    const delivery: DeliveryView[] = [...this.delivery.values()]
      .filter((o) => o.shown!.placement === key || delivers(o.shown!.owner))
      .map(({ shown }) => {
        const cluster = shown!.kubeconfigSecret && secrets.get(shown!.kubeconfigSecret);
        return cluster ? { ...shown!.delivery, cluster } : shown!.delivery;
      })
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
    return {
      ...summary(placement, staleWhy),
      conditions: (placement.status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        ...(c.reason ? { reason: c.reason } : {}),
        ...(c.message ? { message: c.message } : {}),
        ...(c.lastTransitionTime ? { lastTransitionTime: c.lastTransitionTime } : {}),
      })),
      lanes,
      lanesSince: Math.min(this.startedAt, ...lanes.flatMap((l) => l.segments.map((s) => s.from))),
      explain: {
        notes: explanation.notes,
        rows: explanationRows(explanation).filter((r) => shown.has(r.cluster)),
      },
      events,
      delivery,
    };
  }
}

/**
 * A map that keeps at most `maxCount` entries and `maxBytes` (each entry's
 * `shown.bytes`); past either, the entry set longest ago goes first and loses
 * its `shown` part, the only large part of it (the informer that delivered it
 * keeps the rest).
 */
class BoundedMap<V extends { shown?: { readonly bytes: number } }> {
  private readonly entries = new Map<string, V>();
  private bytes = 0;

  constructor(
    private readonly maxCount: number,
    private readonly maxBytes: number,
  ) {}

  /** Keeps `value` if it has a `shown` part, else forgets `key`; whether anything changed. */
  update(key: string, value: V | undefined): boolean {
    if (value?.shown) {
      this.set(key, value);
      return true;
    }
    return this.delete(key);
  }

  private set(key: string, value: V): void {
    this.delete(key);
    this.entries.set(key, value);
    this.bytes += value.shown!.bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxCount && this.bytes <= this.maxBytes) break;
      this.delete(oldest);
      delete entry.shown;
    }
  }

  private delete(key: string): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    this.bytes -= entry.shown?.bytes ?? 0;
    return true;
  }

  values(): IterableIterator<V> {
    return this.entries.values();
  }
}

/** `text` cut to `max` characters, copied: a V8 slice would keep the whole original string alive. */
function cut(text: string, max: number): string {
  return text.length > max ? Buffer.from(`${text.slice(0, max)}…`).toString() : text;
}

/** What an object's metadata the informer keeps: enough to follow it. */
function stub(object: KubeObject): KubeObject {
  const { name, namespace, resourceVersion } = object.metadata ?? {};
  return { ...(object.kind ? { kind: object.kind } : {}), metadata: { name, namespace, resourceVersion } };
}

/**
 * The Events informer's transform: a placement's Event reduced to what the
 * page shows, each field cut (the message to {@link MAX_EVENT_MESSAGE}
 * characters); any other Event to its metadata.
 */
export function keptEvent(object: KubeObject): KeptEvent {
  const e = object as KubeEvent;
  const kept: KeptEvent = stub(object);
  if (e.involvedObject?.kind !== PLACEMENT_KIND) return kept;
  const event: EventView = {
    type: cut(String(e.type ?? 'Normal'), 32),
    reason: cut(String(e.reason ?? ''), 128),
    message: cut(String(e.message ?? ''), MAX_EVENT_MESSAGE),
    at: cut(String(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? ''), 64),
    count: typeof e.count === 'number' ? e.count : 1,
  };
  const placement = cut(clusterKey(e.involvedObject.namespace, String(e.involvedObject.name)), 320);
  const bytes =
    2 * (event.type.length + event.reason.length + event.message.length + event.at.length + placement.length);
  kept.shown = { placement, event, bytes };
  return kept;
}

interface DeliverySpec {
  destination?: { name?: string; server?: string };
  kubeConfig?: { secretRef?: { name?: string } };
}

/**
 * The delivery informers' transform: an object that names its placement and
 * cluster (rendered mode's annotations), or that an ApplicationSet or a
 * ResourceSet generated, reduced to its row on the page; any other to its metadata.
 */
export function keptDeliveryObject(object: KubeObject): KeptDeliveryObject {
  const kept: KeptDeliveryObject = stub(object);
  const { annotations = {}, labels = {}, namespace = '' } = object.metadata ?? {};
  const spec = (object.spec ?? {}) as DeliverySpec;
  const placement = cut(annotations[PLACEMENT_ANNOTATION] ?? '', 320);
  const owners = (object.metadata?.ownerReferences ?? []) as { kind?: string; name?: string }[];
  const appSet = owners.find((r) => r.kind === 'ApplicationSet')?.name;
  const resourceSet = labels[RESOURCESET_NAME_LABEL];
  const owner = placement
    ? undefined
    : appSet
      ? `ApplicationSet/${clusterKey(namespace, appSet)}`
      : resourceSet
        ? `ResourceSet/${clusterKey(labels[RESOURCESET_NAMESPACE_LABEL] ?? namespace, resourceSet)}`
        : undefined;
  const kubeconfigSecret = spec.kubeConfig?.secretRef?.name;
  // Argo CD's cluster name is `<profile namespace>.<profile name>`; a namespace holds no dot.
  const destination = spec.destination?.name?.replace('.', '/') ?? spec.destination?.server;
  const cluster = annotations[CLUSTER_PROFILE_ANNOTATION] ?? (owner && (destination ?? kubeconfigSecret));
  if ((!placement && !owner) || !cluster) return kept;
  const delivery: DeliveryView = {
    cluster: cut(cluster, 320),
    kind: cut(String(object.kind), 64),
    name: cut(keyOf(object), 320),
    status: cut(deliveryStatus(object), 256),
  };
  const shown: Omit<NonNullable<KeptDeliveryObject['shown']>, 'bytes'> = {
    ...(placement ? { placement } : { owner: cut(owner!, 400) }),
    ...(owner && kubeconfigSecret ? { kubeconfigSecret: cut(kubeconfigSecret, 253) } : {}),
    delivery,
  };
  const bytes =
    2 *
    [placement, shown.owner, shown.kubeconfigSecret, ...Object.values(delivery)].reduce(
      (n, text) => n + (text?.length ?? 0),
      0,
    );
  kept.shown = { ...shown, bytes };
  return kept;
}

/**
 * The ApplicationSet and ResourceSet informers' transform: the placement one
 * delivers, read from an mco generator plugin's parameters (docs/argocd.md) or
 * a ResourceSet's input provider selector (docs/flux.md), kept with its metadata.
 */
export function keptGenerator(object: KubeObject): KeptGenerator {
  const kept: KeptGenerator = stub(object);
  const placement = object.kind === 'ResourceSet' ? resourceSetPlacement(object) : pluginPlacement(object.spec);
  if (typeof placement?.name === 'string' && typeof placement.namespace === 'string' && placement.name) {
    kept.placement = { namespace: cut(placement.namespace, 253), name: cut(placement.name, 253) };
  }
  return kept;
}

/** The placement of the first mco plugin generator found, nested (matrix, merge) or not. */
function pluginPlacement(node: unknown): { name?: unknown; namespace?: unknown } | undefined {
  if (typeof node !== 'object' || node === null) return undefined;
  const parameters = (node as { plugin?: { input?: { parameters?: Record<string, unknown> } } }).plugin?.input
    ?.parameters;
  if (parameters?.[PLUGIN_PLACEMENT_NAME] !== undefined) {
    return { name: parameters[PLUGIN_PLACEMENT_NAME], namespace: parameters[PLUGIN_PLACEMENT_NAMESPACE] };
  }
  for (const child of Object.values(node)) {
    const found = pluginPlacement(child);
    if (found) return found;
  }
  return undefined;
}

function resourceSetPlacement(object: KubeObject): { name?: unknown; namespace?: unknown } | undefined {
  const inputs = (object.spec as { inputsFrom?: { selector?: { matchLabels?: Record<string, string> } }[] })
    ?.inputsFrom;
  for (const input of inputs ?? []) {
    const labels = input.selector?.matchLabels ?? {};
    if (labels[PLACEMENT_LABEL]) return { name: labels[PLACEMENT_LABEL], namespace: labels[PLACEMENT_NAMESPACE_LABEL] };
  }
  return undefined;
}

function keyOf(object: KubeObject): string {
  return clusterKey(object.metadata?.namespace, String(object.metadata?.name));
}

function byKey(a: { metadata: { namespace?: string; name: string } }, b: typeof a): number {
  return keyOf(a as KubeObject).localeCompare(keyOf(b as KubeObject));
}

function segments(entries: readonly LaneEntry[]): LaneSegment[] {
  return entries.map((e, i) => ({
    state: e.state,
    from: e.at,
    ...(entries[i + 1] ? { to: entries[i + 1]!.at } : {}),
    ...(e.desiredMaxReplicas !== undefined ? { desiredMaxReplicas: e.desiredMaxReplicas } : {}),
  }));
}

function conditionText(p: Placement, type: string): string | undefined {
  const c = p.status?.conditions?.find((x) => x.type === type);
  return c ? `${c.status}${c.reason ? ` (${c.reason})` : ''}` : undefined;
}

/** `staleWhy`: why no signal is fresh (the controller is not seen), if so. */
function summary(p: Placement, staleWhy: string | undefined): PlacementSummary {
  const valid = conditionText(p, 'Valid');
  const satisfied = conditionText(p, 'Satisfied');
  const read = signalReader(p);
  const signalOf = (c: PlacementCluster) => {
    const { signal } = read(c);
    return signal && staleWhy ? { signal: { status: 'stale' as const, why: staleWhy } } : signal ? { signal } : {};
  };
  return {
    key: keyOf(p as KubeObject),
    namespace: p.metadata.namespace ?? '',
    name: p.metadata.name,
    ...(valid ? { valid } : {}),
    ...(satisfied ? { satisfied } : {}),
    clusters: (p.status?.clusters ?? []).map((c): PlacementClusterView => ({
      key: clusterKey(c.namespace, c.name),
      state: c.state,
      since: c.lastTransitionTime,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
      ...signalOf(c),
      ...(c.draining ? { desiredMaxReplicas: c.draining.desiredMaxReplicas } : {}),
    })),
  };
}

// The controller's Satisfied=Unknown reasons for an autoscaling placement without a usable signal
// source (@mco/controller's REASON_*_SIGNAL_SOURCE; a test keeps them equal).
export const NO_SIGNAL_SOURCE_REASONS: ReadonlySet<string> = new Set([
  'NoSignalSource',
  'UnknownSignalSource',
  'SignalSourceNotAllowed',
]);
export const CONDITION_SIGNALS_OBSERVED = 'SignalsObserved';

/**
 * Each listed cluster's capacity signal, from what the controller wrote at its
 * last evaluation (docs/dashboard.md, "Capacity signals"): the engine writes a
 * cluster's `atCapacityCeiling` only from a fresh signal, so its absence means
 * stale; SignalsObserved=False names up to 5 clusters the source could not
 * observe, with the error code. A placement that reads no signals has none.
 */
function signalReader(p: Placement): (c: PlacementCluster) => { signal?: SignalView } {
  const conditions = p.status?.conditions ?? [];
  const invalid = conditions.some((c) => c.type === 'Valid' && c.status === 'False');
  if (!p.spec?.scaling?.autoscaleForCapacity || invalid) return () => ({});
  const codes = new Map<string, string>();
  const observed = conditions.find((c) => c.type === CONDITION_SIGNALS_OBSERVED);
  if (observed?.status === 'False') {
    for (const part of (observed.message ?? '').split('; ')) {
      const match = /^(.+): (\w+)$/.exec(part);
      if (match) codes.set(match[1]!, match[2]!);
    }
  }
  const satisfied = conditions.find((c) => c.type === 'Satisfied');
  const noSource =
    satisfied?.status === 'Unknown' && satisfied.reason && NO_SIGNAL_SOURCE_REASONS.has(satisfied.reason)
      ? satisfied.reason
      : undefined;
  return (c) => {
    const code = codes.get(clusterKey(c.namespace, c.name));
    if (c.atCapacityCeiling === undefined) {
      const why = code
        ? `the signal source could not observe it (${code})`
        : noSource
          ? `no usable signal source (${noSource})`
          : 'no fresh signal at the last evaluation';
      return { signal: { status: 'stale', why } };
    }
    return {
      signal: {
        status: c.atCapacityCeiling ? 'at ceiling' : 'fresh',
        ...(code ? { why: `observed in part (${code})` } : {}),
      },
    };
  };
}

function clusterView(p: ClusterProfile, placements: ClusterView['placements']): ClusterView {
  const { taints, error } = parseTaints(p.metadata.annotations);
  const health = p.status?.conditions?.find((c) => c.type === CONTROL_PLANE_HEALTHY);
  return {
    key: keyOf(p as KubeObject),
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    labels: p.metadata.labels ?? {},
    taints: error ? [`unreadable taints annotation: ${error}`] : taints.map(formatTaint),
    cordoned: taints.some((t) => t.key === CORDONED),
    draining: taints.some((t) => t.key === DRAINED),
    health: health?.status === 'True' ? 'Healthy' : health?.status === 'False' ? 'Unhealthy' : 'Unknown',
    ...(health?.message ? { healthMessage: health.message } : {}),
    properties: Object.fromEntries((p.status?.properties ?? []).map((x) => [x.name, x.value])),
    deleting: p.metadata.deletionTimestamp !== undefined,
    placements,
  };
}

/** Argo CD: sync and health status; Flux: the Ready condition. */
function deliveryStatus(o: KubeObject): string {
  const status = (o.status ?? {}) as {
    sync?: { status?: string };
    health?: { status?: string };
    conditions?: { type: string; status: string; reason?: string }[];
  };
  if (status.sync || status.health) return `${status.sync?.status ?? 'Unknown'}, ${status.health?.status ?? 'Unknown'}`;
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  return ready ? `Ready ${ready.status}${ready.reason ? ` (${ready.reason})` : ''}` : 'not reconciled yet';
}
