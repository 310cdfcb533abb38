import type { KubeClient } from '@mco/kube-runtime';
import { KubeApiError } from '@mco/kube-runtime';
import { describe, expect, it } from 'vitest';
import { createApplicationLister } from '../src/kube.js';

const app = (name: string, destination: Record<string, string>, deleting = false) => ({
  metadata: { name, namespace: 'argocd', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { destination },
});

describe('createApplicationLister', () => {
  it('finds the Applications whose destination names the cluster or its server, being deleted or not', async () => {
    const paths: string[] = [];
    const client = {
      get: async (path: string) => {
        paths.push(path);
        return {
          items: [
            app('east-hw', { name: 'fleet.east' }),
            app('east-by-server', { server: 'https://east.example:6443' }, true),
            app('west-hw', { name: 'fleet.west', server: 'https://west.example:6443' }),
          ],
        };
      },
    } as unknown as KubeClient;
    const using = createApplicationLister(client, 'argocd');
    expect(await using({ name: 'fleet.east', server: 'https://east.example:6443' })).toEqual([
      { deleting: false },
      { deleting: true },
    ]);
    expect(await using({ name: 'fleet.north', server: 'https://north.example:6443' })).toEqual([]);
    expect(paths[0]).toBe('/apis/argoproj.io/v1alpha1/namespaces/argocd/applications');
  });

  it('no Application CRD (404) is no Application; any other failure rejects', async () => {
    let status = 404;
    const client = {
      get: async () => {
        throw new KubeApiError(status, '{}', `GET applications: HTTP ${status}`);
      },
    } as unknown as KubeClient;
    const using = createApplicationLister(client, 'argocd');
    expect(await using({ name: 'fleet.east', server: 'https://east.example:6443' })).toEqual([]);
    status = 403;
    await expect(using({ name: 'fleet.east', server: 'https://east.example:6443' })).rejects.toThrow();
  });
});
