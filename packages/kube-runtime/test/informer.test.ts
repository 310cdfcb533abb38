import { createLogger } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from '../src/informer.js';
import {
  Informer,
  backoffDelay,
  jsonSize,
  type KubeObject,
  type ListWatch,
  type WatchEventType,
} from '../src/index.js';

const obj = (name: string, rv: string): KubeObject => ({ metadata: { namespace: 'ns', name, resourceVersion: rv } });

type Script = (emit: (type: WatchEventType, object: KubeObject) => void, done: (error: unknown) => void) => void;

/** A ListWatch that replays scripted lists and watches (an in-memory stand-in for the informer's own interface). */
function scripted(lists: KubeObject[][], watches: Script[]) {
  const calls: string[] = [];
  let list = 0;
  let watch = 0;
  const lw: ListWatch<KubeObject> = {
    async list() {
      const items = lists[Math.min(list, lists.length - 1)]!;
      calls.push(`list#${++list}`);
      return { items: structuredClone(items), resourceVersion: `L${list}` };
    },
    async watch(resourceVersion, _timeout, onEvent, onDone) {
      calls.push(`watch@${resourceVersion}`);
      const script = watches[watch++];
      if (script) queueMicrotask(() => script(onEvent, onDone));
      return () => {};
    },
  };
  return { lw, calls };
}

const fast = { baseMs: 1, maxMs: 5, jitter: 0 };

describe('Informer', () => {
  it('caches and hands out listed and watched objects as its transform leaves them, without managedFields', async () => {
    const noisy = (name: string, rv: string): KubeObject => ({
      metadata: { ...obj(name, rv).metadata, managedFields: [{ manager: 'kubectl' }], annotations: { big: 'x' } },
      spec: { keep: true },
    });
    const { lw } = scripted([[noisy('a', '1')]], [(emit) => emit('MODIFIED', noisy('a', '2'))]);
    const informer = new Informer({
      name: 't',
      listWatch: lw,
      backoff: fast,
      transform: (o) => ({ metadata: { ...o.metadata, annotations: undefined }, spec: o.spec }),
    });
    const seen: KubeObject[] = [];
    informer.addHandler((_event, o) => seen.push(o));
    informer.start();
    await informer.waitForSync();
    while (seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await informer.stop();
    const trimmed = (rv: string) => ({
      metadata: { namespace: 'ns', name: 'a', resourceVersion: rv, annotations: undefined },
      spec: { keep: true },
    });
    expect({ seen, cached: informer.get('ns/a') }).toEqual({
      seen: [trimmed('1'), trimmed('2')],
      cached: trimmed('2'),
    });
  });

  it('past a bound of objects or bytes keeps every object, reports it in health and warns once; back within, says so', async () => {
    const big = (name: string, rv: string, size: number): KubeObject => ({
      ...obj(name, rv),
      spec: { pad: 'x'.repeat(size) },
    });
    const { lw } = scripted(
      [[big('a', '1', 100), big('b', '1', 100)]],
      [
        (emit) => {
          emit('ADDED', big('c', '2', 100)); // a third object: over maxObjects
          emit('MODIFIED', big('a', '3', 1000)); // and over maxBytes
          emit('DELETED', big('c', '4', 100));
          emit('MODIFIED', big('a', '5', 100)); // back within both
        },
      ],
    );
    const lines: Record<string, unknown>[] = [];
    const informer = new Informer({
      name: 't',
      listWatch: lw,
      backoff: fast,
      limits: { maxObjects: 2, maxBytes: 1000 },
      logger: createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    });
    const health: { objects: number; bytes: number | undefined; overLimit: boolean }[] = [];
    informer.addHandler(() => {
      const { objects, bytes, overLimit } = informer.health();
      health.push({ objects, bytes, overLimit });
    });
    informer.start();
    await informer.waitForSync();
    while (health.length < 6) await new Promise((resolve) => setTimeout(resolve, 5));
    await informer.stop();
    const size = (pad: number) => JSON.stringify(big('a', '1', pad)).length;
    expect({
      health,
      kept: informer.keys().sort(),
      log: lines.filter((l) => String(l.msg).startsWith('watch cache')).map((l) => [l.level, l.msg, l.objects]),
    }).toEqual({
      health: [
        { objects: 1, bytes: size(100), overLimit: false },
        { objects: 2, bytes: 2 * size(100), overLimit: false },
        { objects: 3, bytes: 3 * size(100), overLimit: true },
        { objects: 3, bytes: 2 * size(100) + size(1000), overLimit: true },
        { objects: 2, bytes: size(100) + size(1000), overLimit: true },
        { objects: 2, bytes: 2 * size(100), overLimit: false },
      ],
      kept: ['ns/a', 'ns/b'],
      log: [
        ['warn', 'watch cache over its bound; it keeps every object (a cache cannot drop one)', 3],
        ['info', 'watch cache back within its bound', 2],
      ],
    });
  });

  it.each([
    { value: { a: 1, b: 'x', c: [true, null, { d: false }], e: [] } },
    { value: { metadata: { name: 'n', labels: { k: 'v' } }, spec: { n: 12.5, list: ['a', 'bb'] } } },
  ])('measures the JSON length of $value without writing it', ({ value }) => {
    expect(jsonSize(value)).toBe(JSON.stringify(value).length);
  });

  it('measures no bytes without a byte bound', async () => {
    const { lw } = scripted([[obj('a', '1')]], []);
    const informer = new Informer({ name: 't', listWatch: lw, backoff: fast, limits: { maxObjects: 10 } });
    informer.start();
    await informer.waitForSync();
    await informer.stop();
    expect(informer.health()).toMatchObject({ objects: 1, bytes: undefined, overLimit: false });
  });

  it('relists at once on 410 Gone and emits only the differences', async () => {
    const { lw, calls } = scripted(
      [
        [obj('a', '1'), obj('b', '1')],
        [obj('a', '1'), obj('c', '7')],
      ],
      [
        (emit) => {
          emit('MODIFIED', obj('b', '5'));
          emit('ERROR', { code: 410, reason: 'Expired', message: 'too old resource version' } as unknown as KubeObject);
        },
      ],
    );
    const informer = new Informer({ name: 't', listWatch: lw, backoff: fast });
    const events: string[] = [];
    informer.addHandler((event, o) => events.push(`${event} ${o.metadata?.name}@${o.metadata?.resourceVersion}`));
    informer.start();
    await informer.waitForSync();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await informer.stop();
    expect({
      calls: calls.slice(0, 4),
      events,
      keys: informer.keys().sort(),
      health: informer.health().restarts,
    }).toEqual({
      calls: ['list#1', 'watch@L1', 'list#2', 'watch@L2'],
      events: ['add a@1', 'add b@1', 'update b@5', 'add c@7', 'delete b@5'],
      keys: ['ns/a', 'ns/c'],
      health: 1,
    });
  });

  it('resumes from the last resourceVersion (bookmarks included) after an error, with backoff, without relisting', async () => {
    const { lw, calls } = scripted(
      [[obj('a', '1')]],
      [
        (emit, done) => {
          emit('ADDED', obj('b', '3'));
          emit('BOOKMARK', { metadata: { resourceVersion: '9' } });
          done(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
        },
        (emit) => emit('DELETED', obj('a', '10')),
      ],
    );
    const informer = new Informer({ name: 't', listWatch: lw, backoff: fast });
    const events: string[] = [];
    informer.addHandler((event, o) => events.push(`${event} ${o.metadata?.name}`));
    informer.start();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await informer.stop();
    expect({ calls: calls.slice(0, 3), events, keys: informer.keys(), health: informer.health() }).toMatchObject({
      calls: ['list#1', 'watch@L1', 'watch@9'],
      events: ['add a', 'add b', 'delete a'],
      keys: ['ns/b'],
      health: { synced: true, lists: 1, watches: 2, restarts: 1 },
    });
  });

  it('is not synced, and keeps retrying, while the list fails', async () => {
    let attempts = 0;
    const informer = new Informer<KubeObject>({
      name: 't',
      backoff: fast,
      listWatch: {
        list: async () => {
          attempts++;
          throw Object.assign(new Error('forbidden'), { code: 403 });
        },
        watch: async () => () => {},
      },
    });
    informer.start();
    await new Promise((resolve) => setTimeout(resolve, 60));
    await informer.stop();
    expect({ synced: informer.hasSynced(), retried: attempts > 3, error: informer.health().lastError }).toEqual({
      synced: false,
      retried: true,
      error: 'forbidden',
    });
  });

  // Issue 45: a 20 s hub outage gave ~30 warnings and left the caches blind up to 19 s after the hub was back.
  it('an outage: one warning, retries at most 4 s apart by default, and one line when the API server answers again', async () => {
    let down = true;
    let attempts = 0;
    const lines: Record<string, unknown>[] = [];
    const informer = new Informer<KubeObject>({
      name: 't',
      logger: createLogger({
        level: 'debug',
        write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
      }),
      listWatch: {
        list: async () => {
          attempts++;
          if (down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
          return { items: [obj('a', '1')], resourceVersion: '1' };
        },
        watch: async () => () => {},
      },
    });
    informer.start();
    // The default backoff: 0.1-0.2, 0.2-0.4, 0.4-0.8 s... this waits for the fourth attempt.
    while (attempts < 4) await new Promise((resolve) => setTimeout(resolve, 20));
    down = false;
    await informer.waitForSync();
    await informer.stop();
    const failed = lines.filter((l) => l.msg === 'list/watch failed; retrying');
    expect({
      warnings: failed.filter((l) => l.level === 'warn').length,
      debug: failed.filter((l) => l.level === 'debug').length >= 3,
      recovered: lines.filter((l) => l.msg === 'list/watch works again').map((l) => [l.level, l.failures]),
      // However long the outage, the longest wait (no jitter drawn) is 4 s.
      longestWaitMs: backoffDelay(1_000, DEFAULT_BACKOFF, () => 0),
    }).toEqual({ warnings: 1, debug: true, recovered: [['info', attempts - 1]], longestWaitMs: 4_000 });
  });
});
