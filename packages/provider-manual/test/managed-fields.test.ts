import { describe, expect, it } from 'vitest';
import { canonicalJson, projectOwnedFields } from '../src/managed-fields.js';

// managedFields as kube-apiserver records them for a server-side apply of a ClusterProfile.
const profile = {
  metadata: {
    name: 'a',
    namespace: 'fleet',
    labels: { 'x-k8s.io/cluster-manager': 'mco-manual', region: 'eu', 'added-by': 'someone-else' },
    managedFields: [
      {
        manager: 'mco-mco-manual',
        operation: 'Apply',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:region': {}, 'f:x-k8s.io/cluster-manager': {} } },
          'f:spec': { 'f:clusterManager': { 'f:name': {} }, 'f:displayName': {} },
        },
      },
      {
        manager: 'mco-mco-manual',
        operation: 'Apply',
        subresource: 'status',
        fieldsV1: {
          'f:status': {
            'f:accessProviders': {
              'k:{"name":"kubeconfig"}': { '.': {}, 'f:cluster': { 'f:server': {} }, 'f:name': {} },
            },
            'f:conditions': { 'k:{"type":"ControlPlaneHealthy"}': { '.': {}, 'f:status': {}, 'f:type': {} } },
          },
        },
      },
      { manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:added-by': {} } } } },
    ],
  },
  spec: { clusterManager: { name: 'mco-manual' }, displayName: 'A' },
  status: {
    accessProviders: [
      { name: 'other', cluster: { server: 'https://other' } },
      { name: 'kubeconfig', cluster: { server: 'https://a', 'certificate-authority-data': 'QQ==' } },
    ],
    conditions: [{ type: 'ControlPlaneHealthy', status: 'True', reason: 'X', message: '' }],
  },
};

describe('projectOwnedFields', () => {
  it.each([
    [
      'the main resource shows only the labels and spec the manager applied',
      '',
      {
        metadata: { labels: { 'x-k8s.io/cluster-manager': 'mco-manual', region: 'eu' } },
        spec: { clusterManager: { name: 'mco-manual' }, displayName: 'A' },
      },
    ],
    [
      'the status subresource picks list-map items by key and only their owned fields',
      'status',
      {
        status: {
          accessProviders: [{ name: 'kubeconfig', cluster: { server: 'https://a' } }],
          conditions: [{ type: 'ControlPlaneHealthy', status: 'True' }],
        },
      },
    ],
  ])('%s', (_name, subresource, expected) => {
    expect(projectOwnedFields(profile, 'mco-mco-manual', subresource)).toEqual(expected);
  });

  it('an object the manager never applied projects to nothing', () => {
    expect(projectOwnedFields(profile, 'somebody', '')).toEqual({});
  });
});

describe('canonicalJson', () => {
  it.each([
    ['key order does not matter', { b: 1, a: 2 }, { a: 2, b: 1 }],
    ['empty maps and lists are absent', { a: {}, b: [], c: 1 }, { c: 1 }],
    [
      'named list items compare by name, whatever their order',
      [{ name: 'b' }, { name: 'a' }],
      [{ name: 'a' }, { name: 'b' }],
    ],
  ])('%s', (_name, left, right) => {
    expect(canonicalJson(left)).toBe(canonicalJson(right));
  });

  it('unnamed list items keep their order', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });
});
