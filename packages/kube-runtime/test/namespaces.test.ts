import { describe, expect, it } from 'vitest';
import { CLUSTER_PROFILES, createListWatch, KubeClient } from '../src/index.js';
import type { KubeObject, ListWatch, WatchEventType } from '../src/informer.js';
import { filterNamespaces } from '../src/kube.js';

const object = (namespace: string, name: string): KubeObject => ({ metadata: { namespace, name } });

/** A list-watch over fixed objects whose watch replays `events`. */
function fixed(items: KubeObject[], events: [WatchEventType, KubeObject][]): ListWatch<KubeObject> {
  return {
    list: async () => ({ items, resourceVersion: '7' }),
    async watch(_rv, _timeout, onEvent, onDone) {
      for (const [type, o] of events) onEvent(type, o);
      onDone(null);
      return () => {};
    },
  };
}

describe('filterNamespaces (--cluster-profile-namespaces over several namespaces)', () => {
  it('keeps only objects of the listed namespaces in lists and watch events, and passes bookmarks on', async () => {
    const inner = fixed(
      [object('fleet', 'a'), object('team-b', 'b'), object('team-a', 'c')],
      [
        ['ADDED', object('team-b', 'd')],
        ['MODIFIED', object('fleet', 'a')],
        ['DELETED', object('team-b', 'b')],
        ['BOOKMARK', { metadata: { resourceVersion: '9' } }],
      ],
    );
    const filtered = filterNamespaces(inner, new Set(['fleet', 'team-a']));
    const page = await filtered.list({ limit: 10 });
    const seen: string[] = [];
    await filtered.watch(
      '7',
      0,
      (type, o) => seen.push(`${type} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`),
      () => {},
    );
    expect({
      items: page.items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`),
      rv: page.resourceVersion,
      seen,
    }).toEqual({
      items: ['fleet/a', 'team-a/c'],
      rv: '7',
      seen: ['MODIFIED fleet/a', 'BOOKMARK /'],
    });
  });

  it('refuses a namespace scope outside the namespaces, naming it', () => {
    const client = new KubeClient({
      server: 'https://hub.example',
      insecureSkipTlsVerify: false,
      getCredential: async () => ({}),
      invalidate: () => {},
    });
    expect(() => createListWatch(client, CLUSTER_PROFILES, { namespace: 'team-b', namespaces: ['fleet'] })).toThrow(
      'createListWatch: namespace team-b is outside namespaces',
    );
  });
});
