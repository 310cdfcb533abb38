// Issue 45: after a 20 s hub crash the controller stayed blind up to 19 s once
// the hub answered again (the informer's backoff grew to 30 s). With a real
// kube-apiserver: crash it, keep it down 20 s (the scenario, not a wait for a
// condition), start it again, and time how long after it answers the
// informer's list/watch works again and a change made then reaches its cache.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createInformer, KubeClient, loadKubeConfig, resourcePath, type KubeObject } from '../src/index.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps' };
const NS = 'reconnect-test';
const DOWN_MS = Number(process.env.MCO_HUB_DOWN_MS ?? 20_000);

describeWithControlPlane('an informer and a hub that crashes for 20 s (real kube-apiserver)', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let dir: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = mkdtempSync(join(tmpdir(), 'mco-reconnect-'));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, cp.hub.adminKubeConfig().exportConfig());
    client = new KubeClient(loadKubeConfig({ path: file }), { timeoutMs: 5_000 });
    await client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  });
  afterAll(async () => {
    client?.close();
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('works again within 5 s of the hub answering, with one warning for the whole outage', async () => {
    const lines: { at: number; level: string; msg: string }[] = [];
    const logger = createLogger({
      level: 'debug',
      write: (line) => lines.push({ at: Date.now(), ...(JSON.parse(line) as { level: string; msg: string }) }),
    });
    const informer = createInformer<KubeObject>(client, CONFIGMAPS, { logger, scope: { namespace: NS } });
    informer.start();
    await informer.waitForSync();

    const stoppingAt = Date.now();
    await cp.hub.stop({ kill: true });
    await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
    const startingAt = Date.now();
    await cp.hub.start(); // resolves once the apiserver reports ready; it answers requests a little before
    const answersAt = Date.now();
    await client.create(resourcePath(CONFIGMAPS, NS), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'after-outage' },
    });
    const deadline = Date.now() + 30_000;
    while (!informer.get(`${NS}/after-outage`) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seenAt = Date.now();
    await informer.stop();

    const recovered = lines.find((l) => l.msg === 'list/watch works again' && l.at >= startingAt);
    const failures = lines.filter((l) => l.msg === 'list/watch failed; retrying' && l.at >= stoppingAt);
    console.log(
      `hub down ${((startingAt - stoppingAt) / 1000).toFixed(1)} s, ready ${answersAt - startingAt} ms after its start: ` +
        `list/watch worked again ${recovered ? recovered.at - startingAt : '-'} ms after the start ` +
        `(${recovered ? recovered.at - answersAt : '-'} ms after ready); ` +
        `a ConfigMap created once ready reached the cache after ${seenAt - answersAt} ms; ` +
        `${failures.length} failed attempts, ${failures.filter((l) => l.level === 'warn').length} logged as warnings`,
    );
    expect(recovered).toBeDefined();
    // Within 5 s of the hub answering (it answers before it reports ready, so this bound is generous).
    expect(recovered!.at - answersAt).toBeLessThanOrEqual(5_000);
    expect(informer.get(`${NS}/after-outage`)).toBeDefined();
    expect(failures.filter((l) => l.level === 'warn').length).toBe(1);
  });
});
