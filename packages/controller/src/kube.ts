import { CoreV1Api, CustomObjectsApi, PatchStrategy, type CoreV1Event, type KubeConfig } from '@kubernetes/client-node';
import { PLACEMENT_DECISIONS, PLACEMENTS, requestOptions, type KubeObject } from '@mco/kube-runtime';

/** The writes of the controller; `createHubClient` implements it over client-node. */
export interface HubClient {
  /** PUT to the /status subresource; the object's resourceVersion makes a stale write fail with 409. */
  replacePlacementStatus(placement: KubeObject): Promise<KubeObject>;
  createPlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** PUT with the object's resourceVersion. */
  replacePlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** Deletes with a uid precondition, so a newer object of the same name is never deleted. */
  deletePlacementDecision(namespace: string, name: string, uid: string | undefined): Promise<void>;
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** Merge-patches an existing Event (count and lastTimestamp of a repeated event). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

export function createHubClient(kubeConfig: KubeConfig, options: { requestTimeoutMs?: number } = {}): HubClient {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const timeout = options.requestTimeoutMs ?? 30_000;
  const meta = (o: KubeObject) => ({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' });
  return {
    async replacePlacementStatus(placement) {
      return (await custom.replaceNamespacedCustomObjectStatus(
        { ...PLACEMENTS, ...meta(placement), body: placement },
        requestOptions(kubeConfig, timeout),
      )) as KubeObject;
    },
    async createPlacementDecision(decision) {
      return (await custom.createNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, namespace: meta(decision).namespace, body: decision },
        requestOptions(kubeConfig, timeout),
      )) as KubeObject;
    },
    async replacePlacementDecision(decision) {
      return (await custom.replaceNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, ...meta(decision), body: decision },
        requestOptions(kubeConfig, timeout),
      )) as KubeObject;
    },
    async deletePlacementDecision(namespace, name, uid) {
      await custom.deleteNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, namespace, name, ...(uid ? { body: { preconditions: { uid } } } : {}) },
        requestOptions(kubeConfig, timeout),
      );
    },
    async createEvent(namespace, event) {
      await core.createNamespacedEvent({ namespace, body: event }, requestOptions(kubeConfig, timeout));
    },
    async patchEvent(namespace, name, patch) {
      await core.patchNamespacedEvent(
        { namespace, name, body: patch },
        requestOptions(kubeConfig, timeout, PatchStrategy.MergePatch),
      );
    },
  };
}
