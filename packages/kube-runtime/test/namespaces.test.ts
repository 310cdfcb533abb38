import { describe, expect, it } from 'vitest';
import { CLUSTER_PROFILES, createListWatch, KubeClient } from '../src/index.js';
import type { KubeObject, ListWatch, WatchEventType } from '../src/informer.js';
import { mergeNamespaces } from '../src/kube.js';

const object = (namespace: string, name: string): KubeObject => ({ metadata: { namespace, name } });

/** One namespace's list-watch: pages of `items`, and watches the test drives, recording where each started. */
function namespaceStream(namespace: string, pages: string[][], resourceVersion: string) {
  const starts: string[] = [];
  const open: { onEvent: (type: WatchEventType, o: KubeObject) => void; onDone: (e: unknown) => void }[] = [];
  let ended = 0;
  const listWatch: ListWatch<KubeObject> = {
    async list({ continue: token }) {
      const index = token ? Number(token) : 0;
      if (pages[index] === undefined) throw new Error(`${namespace}: list failed`);
      return {
        items: pages[index].map((name) => object(namespace, name)),
        resourceVersion,
        continue: index + 1 < pages.length ? String(index + 1) : undefined,
      };
    },
    async watch(rv, _timeout, onEvent, onDone) {
      starts.push(rv);
      open.push({ onEvent, onDone });
      return () => void ended++;
    },
  };
  return { listWatch, starts, open, ended: () => ended };
}

const objectAt = (namespace: string, name: string, resourceVersion: string): KubeObject => ({
  metadata: { namespace, name, resourceVersion },
});

/** Starts a watch of `merged` from `resourceVersion`, recording each event as `TYPE ns/name` and how it ended. */
async function recordedWatch(merged: ListWatch<KubeObject>, resourceVersion: string) {
  const record = { seen: [] as string[], done: 'open' as unknown };
  await merged.watch(
    resourceVersion,
    0,
    (type, o) => record.seen.push(`${type} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`),
    (e) => (record.done = e),
  );
  return record;
}

/** fleet (listed at version 10) and team-a (at 20, `teamAPages`) merged, after one complete list. */
async function listedOnce(teamAPages: string[][]) {
  const fleet = namespaceStream('fleet', [['a']], '10');
  const teamA = namespaceStream('team-a', teamAPages, '20');
  const merged = mergeNamespaces(
    new Map([
      ['fleet', fleet.listWatch],
      ['team-a', teamA.listWatch],
    ]),
  );
  await merged.list({ limit: 10 });
  await merged.list({ limit: 10, continue: '1' });
  return { fleet, teamA, merged };
}

describe('mergeNamespaces (--cluster-profile-namespaces over several namespaces)', () => {
  it('lists every namespace in turn, page by page', async () => {
    const fleet = namespaceStream('fleet', [['a', 'b'], ['c']], '10');
    const teamA = namespaceStream('team-a', [['d']], '20');
    const merged = mergeNamespaces(
      new Map([
        ['fleet', fleet.listWatch],
        ['team-a', teamA.listWatch],
      ]),
    );
    const pages: { items: string[]; continue: string | undefined }[] = [];
    let next: string | undefined;
    do {
      const page = await merged.list({ limit: 2, continue: next });
      pages.push({
        items: page.items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`),
        continue: page.continue,
      });
      next = page.continue;
    } while (next);
    expect(pages).toEqual([
      { items: ['fleet/a', 'fleet/b'], continue: '0:1' },
      { items: ['fleet/c'], continue: '1' },
      { items: ['team-a/d'], continue: undefined },
    ]);
    await expect(merged.list({ limit: 2, continue: '7' })).rejects.toThrow('bad continue token "7"');
  });

  it('resumes each namespace from its own list, events and bookmarks, whatever version it is given', async () => {
    const { fleet, teamA, merged } = await listedOnce([['b']]);
    const watch = await recordedWatch(merged, '20');
    fleet.open[0]!.onEvent('MODIFIED', objectAt('fleet', 'a', '11'));
    teamA.open[0]!.onEvent('BOOKMARK', { metadata: { resourceVersion: '25' } });
    // The server ends fleet's watch: team-a's is ended too, and the merged watch is done once.
    fleet.open[0]!.onDone(null);
    teamA.open[0]!.onDone(new Error('late'));
    teamA.open[0]!.onEvent('ADDED', objectAt('team-a', 'late', '30'));
    await recordedWatch(merged, '11');
    expect({
      ...watch,
      fleetStarts: fleet.starts,
      teamAStarts: teamA.starts,
      teamAEnded: teamA.ended(),
    }).toEqual({
      seen: ['MODIFIED fleet/a', 'BOOKMARK /'],
      done: null,
      fleetStarts: ['10', '11'],
      teamAStarts: ['20', '25'],
      teamAEnded: 1,
    });
  });

  it('ends every stream at an ERROR event, so no later event moves a version the informer did not take', async () => {
    const { fleet, teamA, merged } = await listedOnce([['b']]);
    const watch = await recordedWatch(merged, '');
    fleet.open[0]!.onEvent('ERROR', { metadata: {} });
    teamA.open[0]!.onEvent('MODIFIED', objectAt('team-a', 'b', '21'));
    fleet.open[0]!.onDone(null);
    await recordedWatch(merged, '');
    expect({ ...watch, ended: [fleet.ended(), teamA.ended()], teamAStarts: teamA.starts }).toEqual({
      seen: ['ERROR /'],
      done: 'open',
      ended: [1, 1],
      teamAStarts: ['20', '20'],
    });
  });

  it('keeps watching from the last complete list when a relist fails half-way', async () => {
    const pages: string[][] = [['b']];
    const { fleet, teamA, merged } = await listedOnce(pages);
    pages.length = 0; // team-a's next list fails
    await merged.list({ limit: 10 });
    await expect(merged.list({ limit: 10, continue: '1' })).rejects.toThrow('team-a: list failed');
    await recordedWatch(merged, '');
    expect([fleet.starts, teamA.starts]).toEqual([['10'], ['20']]);
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
