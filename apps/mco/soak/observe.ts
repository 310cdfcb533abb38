// The soak's eyes: list-then-watch of the hub's placements, Kustomizations,
// Argo CD Applications and cluster Secrets and ClusterProfiles, of each
// member's RepoSyncs (`mco configsync`) and of each member's workload objects, turned into
// history events. After any gap in a watch (an error, a 410, a server
// restart, the watch's own timeout) it re-lists and reports what changed
// meanwhile, deletions included, marked as found by a re-list.
import { request, type RequestOptions } from 'node:https';
import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { DeliveryKind, ListedCluster, UntimedEvent } from './history.js';

type Emit = (event: UntimedEvent) => void;

/** GET of a JSON path on the server of `kc`, with a timeout. */
async function getJson(kc: KubeConfig, path: string, timeoutMs = 10_000): Promise<unknown> {
  const server = new URL(kc.getCurrentCluster()!.server);
  const options: RequestOptions = {
    host: server.hostname,
    port: server.port,
    path,
    method: 'GET',
    timeout: timeoutMs,
    headers: { accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: HTTP ${res.statusCode}: ${body.slice(0, 200)}`));
        else resolve(JSON.parse(body));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

interface ObjectList {
  metadata: { resourceVersion: string };
  items: KubernetesObject[];
}

/**
 * List-then-watch of one collection. `onObject` sees every object present
 * (after a list or an ADDED/MODIFIED event) and every deletion (DELETED, or
 * gone at a re-list: `gap` true).
 */
export class Reflector {
  private readonly known = new Map<string, KubernetesObject>();
  private abort: AbortController | undefined;
  private stopped = false;
  private listed = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly path: string,
    private readonly labelSelector: string | undefined,
    private readonly name: string,
    private readonly onObject: (object: KubernetesObject, present: boolean, gap: boolean) => void,
    private readonly onGap: (source: string, error: string) => void,
  ) {}

  start(): void {
    void this.loop();
  }

  /** True once the first list succeeded. */
  synced(): boolean {
    return this.listed;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const query = this.labelSelector ? `?labelSelector=${encodeURIComponent(this.labelSelector)}` : '';
        const list = (await getJson(this.kc, `${this.path}${query}`)) as ObjectList;
        const seen = new Set<string>();
        for (const item of list.items) {
          const key = keyOf(item);
          seen.add(key);
          const before = this.known.get(key);
          this.known.set(key, item);
          if (before?.metadata?.resourceVersion !== item.metadata?.resourceVersion) this.onObject(item, true, false);
        }
        for (const [key, item] of this.known) {
          if (seen.has(key)) continue;
          this.known.delete(key);
          this.onObject(item, false, this.listed);
        }
        this.listed = true;
        const reason = await this.watch(list.metadata.resourceVersion);
        if (!this.stopped) this.onGap(this.name, reason);
      } catch (error) {
        if (!this.stopped) this.onGap(this.name, (error as Error).message);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }

  /** Watches from `resourceVersion` until the watch ends; resolves with why. */
  private watch(resourceVersion: string): Promise<string> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (why: string) => {
        if (done) return;
        done = true;
        this.abort?.abort();
        resolve(why);
      };
      new Watch(this.kc)
        .watch(
          this.path,
          {
            resourceVersion,
            allowWatchBookmarks: true,
            ...(this.labelSelector ? { labelSelector: this.labelSelector } : {}),
          },
          (phase, object: KubernetesObject & { code?: number; message?: string }) => {
            if (phase === 'ERROR') return finish(`watch error ${object.code ?? ''} ${object.message ?? ''}`.trim());
            if (phase === 'BOOKMARK') return;
            const key = keyOf(object);
            if (phase === 'DELETED') {
              this.known.delete(key);
              this.onObject(object, false, false);
            } else {
              this.known.set(key, object);
              this.onObject(object, true, false);
            }
          },
          (error: unknown) => finish(error ? String((error as Error).message ?? error) : 'watch ended'),
        )
        .then(
          (abort) => {
            this.abort = abort;
            if (done || this.stopped) abort.abort();
          },
          (error: unknown) => finish(String((error as Error).message ?? error)),
        );
    });
  }
}

/** What the history last said of a workload object. */
export interface ObjectSeen {
  readonly present: boolean;
  readonly uid?: string | undefined;
}

type ObjectChange = { present: boolean; gap?: true; uid?: string };

/**
 * The history events for one observation of a workload object (present or
 * not, by a watch event or a list after a gap), given what was last recorded:
 * its presence changes only, each with its uid; present under another uid
 * while it was present, a deletion the watch missed comes first.
 */
export function objectChanges(
  before: ObjectSeen | undefined,
  present: boolean,
  uid: string | undefined,
  gap: boolean,
): { changes: ObjectChange[]; now: ObjectSeen } {
  const withUid = (id: string | undefined) => (id ? { uid: id } : {});
  const changes: ObjectChange[] = [];
  let was = before?.present === true;
  if (present && was && before?.uid !== undefined && uid !== undefined && before.uid !== uid) {
    changes.push({ present: false, gap: true, ...withUid(before.uid) });
    was = false;
  }
  if (present !== was)
    changes.push({ present, ...(gap ? { gap: true as const } : {}), ...withUid(uid ?? before?.uid) });
  return { changes, now: { present, uid: present ? uid : undefined } };
}

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** The label the soak's workload objects carry, with their placement's name. */
export const PLACEMENT_LABEL = 'soak.mco.dev/placement';
/** The label the soak's ApplicationSets put on each Application, with its member (ClusterProfile name). */
export const MEMBER_LABEL = 'soak.mco.dev/member';
/** The ClusterProfile (`<namespace>/<name>`) an Argo CD cluster Secret of mco's is for. */
const PROFILE_ANNOTATION = 'orchestra.multicluster.x-k8s.io/cluster-profile';

interface PlacementObject extends KubernetesObject {
  status?: {
    clusters?: { name: string; namespace?: string; state: string; reason?: string }[];
    lastClusterRemovalTime?: string;
  };
}

export interface ObserveOptions {
  readonly hub: KubeConfig;
  readonly members: Readonly<Record<string, KubeConfig>>;
  readonly placementNamespace: string;
  readonly fleetNamespace: string;
  readonly fluxNamespace: string;
  readonly argocdNamespace: string;
  /** The placements Argo CD delivers: each cluster Secret is recorded for each of them. */
  readonly argoPlacements: readonly string[];
  /** Workload kinds delivered to members: [api path prefix, plural, kind]. */
  readonly workloadKinds: readonly (readonly [string, string, string])[];
  readonly workloadNamespace: string;
  /** Which member a Kustomization applies to, from its cluster slug label. */
  readonly memberOfSlug: (slug: string) => string | undefined;
  /** Milliseconds since the start. */
  readonly now: () => number;
  readonly emit: Emit;
}

/** Starts every reflector; the caller stops them. */
export function observe(o: ObserveOptions): Reflector[] {
  const gap = (source: string, error: string) => o.emit({ type: 'gap', source, error });
  // Presence changes only: an object's status updates are not events of the history.
  const presence = new Map<string, boolean>();
  const changed = (key: string, present: boolean) => {
    if (presence.get(key) === present) return false;
    presence.set(key, present);
    return true;
  };
  const lastStatus = new Map<string, string>();
  const objects = new Map<string, ObjectSeen>();
  /** Records a delivery object's presence (one being deleted, its finalizer pending, no longer delivers). */
  const delivery =
    (kind: DeliveryKind, whose: (object: KubernetesObject) => { member?: string; placements: readonly string[] }) =>
    (object: KubernetesObject, present: boolean, wasGap: boolean) => {
      const { member, placements } = whose(object);
      if (!member) return;
      const name = object.metadata!.name!;
      const live = present && !object.metadata?.deletionTimestamp;
      const key = `delivery|${kind}|${member}|${name}`;
      // Its going, after a deletion asked for earlier, is an event too: a finalizer's work (a prune) ended.
      const gone = !present && presence.get(key) === false;
      if (!changed(key, live) && !gone) return;
      for (const placement of placements) {
        o.emit({
          type: 'delivery',
          kind,
          member,
          placement,
          name,
          present: live,
          ...(wasGap ? { gap: true } : {}),
          ...(present ? {} : { gone: true }),
        });
      }
    };
  const reflectors: Reflector[] = [
    new Reflector(
      o.hub,
      `/apis/orchestra.multicluster.x-k8s.io/v1alpha1/namespaces/${o.placementNamespace}/multikubernetesclusterplacements`,
      undefined,
      'hub placements',
      (object, present) => {
        const p = object as PlacementObject;
        if (!present) return;
        const clusters: ListedCluster[] = (p.status?.clusters ?? []).map((c) => ({
          member: c.name,
          state: c.state,
          ...(c.reason ? { reason: c.reason } : {}),
        }));
        const removal = p.status?.lastClusterRemovalTime;
        const fingerprint = JSON.stringify([clusters, removal]);
        const name = p.metadata!.name!;
        if (lastStatus.get(name) === fingerprint) return;
        lastStatus.set(name, fingerprint);
        // lastClusterRemovalTime on the soak's clock (whole seconds, as the controller writes it).
        const removedAt = removal ? o.now() - (Date.now() - Date.parse(removal)) : undefined;
        o.emit({ type: 'status', placement: name, clusters, ...(removedAt === undefined ? {} : { removedAt }) });
      },
      gap,
    ),
    new Reflector(
      o.hub,
      `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${o.fleetNamespace}/clusterprofiles`,
      undefined,
      'hub clusterprofiles',
      (object, present) => {
        const member = object.metadata!.name!;
        if (changed(`profile|${member}`, present)) o.emit({ type: 'profile', member, present });
      },
      gap,
    ),
    new Reflector(
      o.hub,
      `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${o.fluxNamespace}/kustomizations`,
      // mco's rendered ones and those flux-operator generates for operator placements carry it.
      'orchestra.multicluster.x-k8s.io/placement',
      'hub kustomizations',
      delivery('Kustomization', (object) => {
        const labels = object.metadata?.labels ?? {};
        const placement = labels['orchestra.multicluster.x-k8s.io/placement'];
        return {
          member: o.memberOfSlug(labels['orchestra.multicluster.x-k8s.io/cluster'] ?? ''),
          placements: placement ? [placement] : [],
        };
      }),
      gap,
    ),
    new Reflector(
      o.hub,
      `/apis/argoproj.io/v1alpha1/namespaces/${o.argocdNamespace}/applications`,
      PLACEMENT_LABEL,
      'hub applications',
      delivery('Application', (object) => {
        const labels = object.metadata?.labels ?? {};
        return { member: labels[MEMBER_LABEL], placements: [labels[PLACEMENT_LABEL]!] };
      }),
      gap,
    ),
    new Reflector(
      o.hub,
      `/api/v1/namespaces/${o.argocdNamespace}/secrets`,
      'argocd.argoproj.io/secret-type=cluster',
      'hub cluster secrets',
      delivery('Secret', (object) => {
        const [namespace, member] = (object.metadata?.annotations?.[PROFILE_ANNOTATION] ?? '').split('/');
        return { member: namespace === o.fleetNamespace ? member : undefined, placements: o.argoPlacements };
      }),
      gap,
    ),
  ];
  for (const [member, kc] of Object.entries(o.members)) {
    reflectors.push(
      new Reflector(
        kc,
        `/apis/configsync.gke.io/v1beta1/namespaces/${o.placementNamespace}/reposyncs`,
        undefined,
        `${member} reposyncs`,
        // mco names the RepoSync after its placement.
        delivery('RepoSync', (object) => ({ member, placements: [object.metadata!.name!] })),
        gap,
      ),
    );
    for (const [prefix, plural, kind] of o.workloadKinds) {
      reflectors.push(
        new Reflector(
          kc,
          `${prefix}/namespaces/${o.workloadNamespace}/${plural}`,
          PLACEMENT_LABEL,
          `${member} ${plural}`,
          (object, present, wasGap) => {
            const key = `${member}|${kind}|${object.metadata!.name!}`;
            const seen = objectChanges(objects.get(key), present, object.metadata?.uid, wasGap);
            objects.set(key, seen.now);
            for (const change of seen.changes) {
              o.emit({
                type: 'object',
                member,
                placement: object.metadata!.labels![PLACEMENT_LABEL]!,
                kind,
                name: object.metadata!.name!,
                ...change,
              });
            }
          },
          gap,
        ),
      );
    }
  }
  for (const r of reflectors) r.start();
  return reflectors;
}
