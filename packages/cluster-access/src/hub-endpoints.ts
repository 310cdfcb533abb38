import { type KubeClient } from '@mco/kube-runtime';
import { toMcoError } from '@mco/runtime';
import { hubEndpointKey } from './server-trust.js';

const SERVICE = '/api/v1/namespaces/default/services/kubernetes';
/** The API server keeps one EndpointSlice, named after the Service, listing itself (its endpoint reconciler). */
const ENDPOINT_SLICE = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes';

interface Service {
  spec?: { clusterIP?: string; clusterIPs?: string[]; ports?: { port?: number }[] };
}
interface EndpointSlice {
  endpoints?: { addresses?: string[] }[];
  ports?: { port?: number }[];
}

/**
 * The hub's own API endpoints (hubEndpointKey of each address and port) as
 * the `default/kubernetes` Service (its cluster IPs and ports) and its
 * EndpointSlice (the API servers' addresses and port) list them. Rejects
 * with an McoError naming what could not be read: member access then waits,
 * since an unknown hub could be reached as a member.
 */
export async function readHubEndpoints(hub: KubeClient, signal?: AbortSignal): Promise<Set<string>> {
  const options = signal ? { signal } : {};
  let service: Service;
  let slice: EndpointSlice | undefined;
  try {
    service = await hub.get<Service>(SERVICE, options);
  } catch (error) {
    throw toMcoError(error, `reading the hub's own endpoints (Service default/kubernetes)`);
  }
  try {
    slice = await hub.get<EndpointSlice>(ENDPOINT_SLICE, options);
  } catch (error) {
    // A hub without the EndpointSlice (not written by its API server) still has the Service.
    if ((error as { code?: unknown }).code !== 404) {
      throw toMcoError(error, `reading the hub's own endpoints (EndpointSlice default/kubernetes)`);
    }
  }
  const keys = new Set<string>();
  const add = (addresses: readonly (string | undefined)[], ports: readonly { port?: number }[] | undefined) => {
    for (const address of addresses) {
      if (!address || address === 'None') continue;
      for (const { port } of ports ?? []) if (port) keys.add(hubEndpointKey(address, port));
    }
  };
  add([...(service.spec?.clusterIPs ?? []), service.spec?.clusterIP], service.spec?.ports);
  for (const endpoint of slice?.endpoints ?? []) add(endpoint.addresses ?? [], slice?.ports);
  return keys;
}
