// Orphaned Flux objects in Flux Operator mode (docs/flux.md#orphaned-kustomizations):
// a Kustomization or HelmRelease that a ResourceSet generated for a cluster
// whose input provider mco has since deleted, and that the operator left in
// place. flux-operator v0.59.0 can leave one after a cluster is removed and
// re-added within seconds: its ResourceSet reconciler reads the ResourceSet
// from its informer cache and writes status.inventory as a merge patch against
// that copy, so a reconcile that starts before the previous one's status is in
// the cache writes no inventory when the new one equals the stale copy, and the
// object re-created then is missing from the inventory that garbage collection
// reads. mco cannot repair the operator's inventory; it reports the orphan (a
// condition on the placement, a Warning Event, a gauge) and, unless told to
// only report, deletes it once the report delay is over,
// after reading the placement and the input providers again (a cluster
// re-added meanwhile keeps it), with uid and resourceVersion preconditions.
import { setCondition, type Condition, type Placement } from '@mco/core';
import {
  PLACEMENTS,
  applyPlacementCondition,
  createPlacementEvent,
  listObjects,
  objectPath,
  readPlacementStatus,
  resourcePath,
  type KubeClient,
  type KubeObject,
  type Resource,
} from '@mco/kube-runtime';
import { httpStatusOf, type Logger } from '@mco/runtime';
import { HELM_RELEASES, INPUT_PROVIDERS, KUSTOMIZATIONS } from './desired.js';
import { PLACEMENT_LABEL, PLACEMENT_NAMESPACE_LABEL, kubeconfigSecretName, placementLabelValue } from './names.js';
import { isReconciling } from './sync.js';

/** The labels flux-operator puts on everything a ResourceSet generates. */
export const RESOURCE_SET_NAME_LABEL = 'resourceset.fluxcd.controlplane.io/name';
export const RESOURCE_SET_NAMESPACE_LABEL = 'resourceset.fluxcd.controlplane.io/namespace';
/** The placement condition mco flux writes while orphans of its ResourceSets exist. */
export const ORPHANS_CONDITION = 'FluxOrphanedObjects';
export const RESOURCE_SETS = { group: 'fluxcd.controlplane.io', version: 'v1', plural: 'resourcesets' } as const;

const SECRET_PREFIX = 'mco-kubeconfig-';

/** The parts of a ResourceSet the check reads. */
export interface ResourceSetView extends KubeObject {
  readonly spec?: {
    readonly inputsFrom?: readonly {
      readonly kind?: string;
      readonly name?: string;
      readonly selector?: LabelSelector;
    }[];
  };
  readonly status?: { readonly inventory?: { readonly entries?: readonly { readonly id?: string }[] } };
}

interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly { key: string; operator: string; values?: readonly string[] }[];
}

export interface Orphan {
  readonly kind: 'Kustomization' | 'HelmRelease';
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** The kubeconfig Secret it delivers through (mco keeps it while the object exists). */
  readonly secretName: string;
  readonly resourceSet: { readonly namespace: string; readonly name: string };
  /** The placement the ResourceSet selects input providers of, when its selector names one that exists. */
  readonly placement?: { readonly namespace: string; readonly name: string };
  /** Whether the ResourceSet's inventory lists it (then the operator may still delete it on a later reconcile). */
  readonly inInventory: boolean;
}

export interface OrphanInput {
  /** Kustomizations and HelmReleases in Flux's namespace (all of them), each with its `kind`. */
  readonly objects: readonly KubeObject[];
  /** mco's input providers. */
  readonly providers: readonly KubeObject[];
  /** The ResourceSets the objects name, by `namespace/name`; absent ones are skipped. */
  readonly resourceSets: ReadonlyMap<string, ResourceSetView>;
  readonly placements: readonly Placement[];
}

/** `namespace/name` of the ResourceSet that generated `object`, or undefined. */
export function resourceSetOf(object: KubeObject): string | undefined {
  const labels = object.metadata?.labels ?? {};
  const [name, namespace] = [labels[RESOURCE_SET_NAME_LABEL], labels[RESOURCE_SET_NAMESPACE_LABEL]];
  return name && namespace ? `${namespace}/${name}` : undefined;
}

/** The mco kubeconfig Secret a Flux object delivers through, or undefined. */
function secretOf(object: KubeObject): string | undefined {
  const name = (object as { spec?: { kubeConfig?: { secretRef?: { name?: unknown } } } }).spec?.kubeConfig?.secretRef
    ?.name;
  return typeof name === 'string' && name.startsWith(SECRET_PREFIX) ? name : undefined;
}

function matches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      if (operator === 'In') return key in labels && values.includes(labels[key]!);
      if (operator === 'NotIn') return !(key in labels) || !values.includes(labels[key]!);
      if (operator === 'Exists') return key in labels;
      if (operator === 'DoesNotExist') return !(key in labels);
      return false;
    })
  );
}

/** The input providers a ResourceSet reads (spec.inputsFrom, by name or selector, in its namespace). */
function selectedProviders(set: ResourceSetView, providers: readonly KubeObject[]): KubeObject[] {
  const namespace = set.metadata?.namespace;
  return providers.filter(
    (p) =>
      p.metadata?.namespace === namespace &&
      (set.spec?.inputsFrom ?? []).some(
        (from) =>
          (from.kind ?? 'ResourceSetInputProvider') === 'ResourceSetInputProvider' &&
          (from.name
            ? from.name === p.metadata?.name
            : from.selector
              ? matches(from.selector, p.metadata?.labels ?? {})
              : false),
      ),
  );
}

/** The placement a ResourceSet's selectors name through mco's placement labels, if it exists. */
function placementOf(set: ResourceSetView, placements: readonly Placement[]): Orphan['placement'] {
  for (const from of set.spec?.inputsFrom ?? []) {
    const labels = from.selector?.matchLabels ?? {};
    const [value, namespace] = [labels[PLACEMENT_LABEL], labels[PLACEMENT_NAMESPACE_LABEL]];
    const found = placements.find(
      (p) => p.metadata.namespace === namespace && placementLabelValue(p.metadata.name ?? '') === value,
    );
    if (found) return { namespace: found.metadata.namespace!, name: found.metadata.name! };
  }
  return undefined;
}

const GROUPS = { Kustomization: 'kustomize.toolkit.fluxcd.io', HelmRelease: 'helm.toolkit.fluxcd.io' } as const;

/**
 * Which Flux objects are orphans now: generated by a ResourceSet (its owner
 * labels), not being deleted, delivering through one of mco's kubeconfig
 * Secrets, while none of the input providers that ResourceSet selects names
 * that Secret any more. Pure.
 */
export function findOrphans(input: OrphanInput): Orphan[] {
  const out: Orphan[] = [];
  for (const object of input.objects) {
    const kind = object.kind === 'HelmRelease' ? 'HelmRelease' : 'Kustomization';
    const setKey = resourceSetOf(object);
    const secretName = secretOf(object);
    const set = setKey ? input.resourceSets.get(setKey) : undefined;
    if (!set || !secretName || object.metadata?.deletionTimestamp) continue;
    const providers = selectedProviders(set, input.providers);
    const named = providers.some(
      (p) =>
        (p as { spec?: { defaultValues?: { kubeconfigSecretName?: unknown } } }).spec?.defaultValues
          ?.kubeconfigSecretName === secretName,
    );
    if (named) continue;
    const namespace = object.metadata?.namespace ?? '';
    const name = object.metadata?.name ?? '';
    const id = `${namespace}_${name}_${GROUPS[kind]}_${kind}`;
    const placement = placementOf(set, input.placements);
    out.push({
      kind,
      namespace,
      name,
      uid: object.metadata?.uid ?? '',
      secretName,
      resourceSet: { namespace: set.metadata?.namespace ?? '', name: set.metadata?.name ?? '' },
      ...(placement ? { placement } : {}),
      inInventory: (set.status?.inventory?.entries ?? []).some((e) => e.id === id),
    });
  }
  return out;
}

/** One line per orphan, for logs, Events and the condition message. */
export function describeOrphan(o: Orphan): string {
  const why = o.inInventory
    ? "its ResourceSet's inventory still lists it, but the operator has not deleted it"
    : "it is missing from its ResourceSet's inventory, so the operator will never delete it";
  return (
    `${o.kind} ${o.namespace}/${o.name} (ResourceSet ${o.resourceSet.namespace}/${o.resourceSet.name}, ` +
    `Secret ${o.secretName}) delivers to a cluster no input provider of its ResourceSet names: ${why}; ` +
    `delete it (kubectl -n ${o.namespace} delete ${o.kind.toLowerCase()} ${o.name}) to remove the workload from that cluster`
  );
}

export interface OrphanCheckOptions {
  readonly hub: KubeClient;
  readonly manager: string;
  /** The caches of the sync: every Kustomization and HelmRelease in Flux's namespace, mco's input providers, placements. */
  readonly objects: () => readonly KubeObject[];
  readonly providers: () => readonly KubeObject[];
  readonly placements: () => readonly Placement[];
  /** How long an object must stay an orphan before it is reported (the operator deletes in seconds; default 2 min). */
  readonly graceMs?: number;
  /** How often to look (default 30 s). */
  readonly intervalMs?: number;
  /**
   * Delete a reported orphan (default true): the operator never deletes one
   * its inventory lost, nor, within the report delay, one it lists; then
   * kustomize-controller prunes the member. False: report only
   * (`mco flux --report-orphans-only`).
   */
  readonly remedy?: boolean;
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface OrphanCheck {
  /** The orphans reported now (past the grace period). */
  orphans(): readonly Orphan[];
  /** How many orphans this check has deleted. */
  deleted(): number;
  /** Runs one check now (the timer calls it; tests may too). */
  check(): Promise<void>;
  stop(): void;
}

const placementKey = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;

/**
 * Looks for orphans every `intervalMs` and reports each one that lasts past
 * the grace period: a warning log, a Warning Event `FluxOrphanedObject` on the
 * placement, the placement condition `FluxOrphanedObjects` (True while any
 * remain, False once they are gone), and `orphans()` for the gauge.
 */
export function startOrphanCheck(options: OrphanCheckOptions): OrphanCheck {
  const graceMs = options.graceMs ?? 120_000;
  const now = options.now ?? Date.now;
  const firstSeen = new Map<string, number>();
  let reported: Orphan[] = [];
  /** The condition message last written per placement; '' once False was written. */
  const written = new Map<string, string>();

  async function readResourceSets(keys: Iterable<string>): Promise<Map<string, ResourceSetView>> {
    const sets = new Map<string, ResourceSetView>();
    for (const key of keys) {
      const [namespace, name] = key.split('/') as [string, string];
      try {
        sets.set(key, await options.hub.get<ResourceSetView>(objectPath(RESOURCE_SETS, namespace, name)));
      } catch (error) {
        options.logger.debug('cannot read a ResourceSet for the orphan check', { resourceSet: key, error });
      }
    }
    return sets;
  }

  function event(placement: Placement, message: string): Promise<void> {
    return createPlacementEvent(
      options.hub,
      placement,
      { type: 'Warning', reason: 'FluxOrphanedObject', message },
      options.manager,
      new Date(now()),
    );
  }

  async function writeCondition(placement: Placement, orphans: readonly Orphan[]): Promise<void> {
    const key = placementKey({ namespace: placement.metadata.namespace ?? '', name: placement.metadata.name ?? '' });
    const previous = (placement.status?.conditions ?? []).find((c) => c.type === ORPHANS_CONDITION);
    const next =
      orphans.length > 0
        ? {
            status: 'True',
            reason: 'OrphanedObjects',
            message: orphans.map(describeOrphan).join('\n').slice(0, 32_768),
          }
        : { status: 'False', reason: 'NoOrphanedObjects', message: 'no orphaned Flux objects' };
    // What this process wrote last, or else what the placement holds (a True left by an earlier run is cleared).
    const last = written.get(key) ?? (previous ? `${previous.status}\n${previous.message ?? ''}` : 'False\nnone');
    if (last === `${next.status}\n${next.message}`) return;
    // setCondition on a list of at most this one condition returns exactly it.
    const [condition] = setCondition(
      previous ? [previous as Condition] : [],
      { type: ORPHANS_CONDITION, ...(next as { status: 'True' | 'False'; reason: string; message: string }) },
      new Date(now()).toISOString(),
    );
    await applyPlacementCondition(options.hub, placement, condition!, options.manager);
    written.set(key, `${next.status}\n${next.message}`);
  }

  async function check(): Promise<void> {
    const objects = options.objects();
    const sets = await readResourceSets(
      new Set(
        objects.flatMap((o) =>
          resourceSetOf(o) && secretOf(o) && !o.metadata?.deletionTimestamp ? [resourceSetOf(o)!] : [],
        ),
      ),
    );
    const placements = options.placements();
    const current = findOrphans({ objects, providers: options.providers(), resourceSets: sets, placements });
    const t = now();
    const live = new Set(current.map((o) => o.uid));
    for (const uid of firstSeen.keys()) if (!live.has(uid)) firstSeen.delete(uid);
    for (const o of current) if (!firstSeen.has(o.uid)) firstSeen.set(o.uid, t);
    const due = current.filter((o) => t - firstSeen.get(o.uid)! >= graceMs);
    const before = new Set(reported.map((o) => o.uid));
    reported = due;
    for (const o of due.filter((d) => !before.has(d.uid))) {
      options.logger.warn('orphaned Flux object', {
        orphan: describeOrphan(o),
        ...(o.placement ? { placement: placementKey(o.placement) } : {}),
      });
      const placement =
        o.placement &&
        placements.find(
          (p) =>
            placementKey({ namespace: p.metadata.namespace ?? '', name: p.metadata.name ?? '' }) ===
            placementKey(o.placement!),
        );
      if (placement)
        await event(placement, describeOrphan(o)).catch((error) =>
          options.logger.warn('cannot record an event', { error }),
        );
    }
    if (options.remedy !== false) {
      for (const o of due) {
        await remedy(o, placements).catch((error) =>
          options.logger.warn('cannot delete an orphaned Flux object; retrying at the next check', {
            orphan: `${o.kind} ${o.namespace}/${o.name}`,
            error,
          }),
        );
      }
    }
    // The condition: on every placement with orphans, and back to False on one
    // that had them (written by this process or an earlier one), unless an
    // orphan of it is still within its grace period.
    for (const p of placements) {
      const key = placementKey({ namespace: p.metadata.namespace ?? '', name: p.metadata.name ?? '' });
      const of = (list: readonly Orphan[]) => list.filter((o) => o.placement && placementKey(o.placement) === key);
      const mine = of(due);
      const had = written.has(key) || p.status?.conditions?.some((c) => c.type === ORPHANS_CONDITION);
      if (mine.length === 0 && (!had || of(current).length > 0)) continue;
      await writeCondition(p, mine).catch((error) =>
        options.logger.warn('cannot write the orphan condition of a placement', { placement: key, error }),
      );
    }
  }

  let deletedCount = 0;

  /** One object by name through a list (the RBAC of `mco flux` lists and watches; it does not get). */
  async function readLive(resource: Resource, namespace: string, name: string): Promise<KubeObject | undefined> {
    const page = await options.hub.get<{ items?: KubeObject[] }>(resourcePath(resource, namespace), {
      query: { fieldSelector: `metadata.name=${name}` },
    });
    return page.items?.[0];
  }

  /**
   * Deletes a reported orphan, after reading again what could make
   * it wanted: its placement (a trusted status that does not list its cluster)
   * and every input provider (none names its Secret), then the object itself
   * (the same uid, still using that Secret, not being deleted), and deletes it
   * with that uid and resourceVersion as preconditions. Anything else: kept.
   */
  async function remedy(o: Orphan, placements: readonly Placement[]): Promise<void> {
    const field = { orphan: `${o.kind} ${o.namespace}/${o.name}` };
    const keep = (reason: string) => options.logger.debug('keeping an orphaned Flux object', { ...field, reason });
    if (!o.placement) return keep('its ResourceSet names no placement of mco: delete it by hand if it must go');
    const placement = (await readLive(PLACEMENTS, o.placement.namespace, o.placement.name)) as Placement | undefined;
    if (!placement) return keep(`placement ${placementKey(o.placement)} is gone`);
    const reading = readPlacementStatus(placement);
    if (!reading.ok) return keep(reading.reason);
    if (reading.clusters.some((c) => kubeconfigSecretName(c.namespace ?? '', c.name) === o.secretName)) {
      return keep(`placement ${placementKey(o.placement)} lists its cluster again`);
    }
    const providers = await listObjects(options.hub, INPUT_PROVIDERS, o.namespace);
    if (
      providers.some(
        (p) =>
          (p as { spec?: { defaultValues?: { kubeconfigSecretName?: unknown } } }).spec?.defaultValues
            ?.kubeconfigSecretName === o.secretName,
      )
    ) {
      return keep(`an input provider names Secret ${o.secretName} again`);
    }
    const resource = o.kind === 'HelmRelease' ? HELM_RELEASES : KUSTOMIZATIONS;
    const current = await readLive(resource, o.namespace, o.name);
    if (!current || current.metadata?.uid !== o.uid || current.metadata.deletionTimestamp) return;
    if (secretOf(current) !== o.secretName) return keep('it changed since the check');
    // Deleted mid-apply, kustomize-controller may finalize it without the inventory it is writing.
    if (isReconciling(current)) return keep('Flux is still applying it');
    try {
      await options.hub.delete(objectPath(resource, o.namespace, o.name), {
        preconditions: { uid: o.uid, resourceVersion: current.metadata.resourceVersion },
      });
    } catch (error) {
      // Changed or re-created since it was read (409), or gone: the next check decides again.
      if (httpStatusOf(error) === 409 || httpStatusOf(error) === 404) return;
      throw error;
    }
    deletedCount++;
    const message = `deleted orphaned ${o.kind} ${o.namespace}/${o.name} (Secret ${o.secretName}): placement ${placementKey(o.placement)} does not list its cluster and no input provider names it; Flux now removes its workload from that cluster`;
    options.logger.info('deleted an orphaned Flux object', { ...field, placement: placementKey(o.placement) });
    const known = placements.find(
      (p) =>
        placementKey({ namespace: p.metadata.namespace ?? '', name: p.metadata.name ?? '' }) ===
        placementKey(o.placement!),
    );
    if (known) {
      await createPlacementEvent(
        options.hub,
        known,
        { type: 'Normal', reason: 'FluxOrphanedObjectDeleted', message },
        options.manager,
        new Date(now()),
      ).catch((error) => options.logger.warn('cannot record an event', { error }));
    }
  }

  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void check()
      .catch((error) => options.logger.warn('orphan check failed', { error }))
      .finally(() => (running = false));
  }, options.intervalMs ?? 30_000);
  timer.unref();
  return { orphans: () => reported, deleted: () => deletedCount, check, stop: () => clearInterval(timer) };
}
