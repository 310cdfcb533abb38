// Runs the fault schedule against the stack: each fault at its time, undone
// after its duration, overlapping with others; every start and end goes into
// the history with its time.
import { AppsV1Api } from '@kubernetes/client-node';
import type { UntimedEvent } from './history.js';
import { slotOf, type Fault } from './schedule.js';
import { PLACEMENT_LABEL } from './observe.js';
import { APPSET_CONTROLLER, WORKLOAD_NS, type SoakStack } from './stack.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface InjectorOptions {
  readonly stack: SoakStack;
  readonly emit: (event: UntimedEvent) => void;
  /** The spec each placement has now (the load's intent), to restore after an invalid edit. */
  readonly specOf: (placement: string) => object;
  /** Held while a placement is edited invalid, so that the load does not write it meanwhile. */
  readonly lock: (placement: string) => () => void;
  /**
   * A deliberately broken delivery, to prove the checkers catch it:
   * `delete-on-doubt` deletes a placement's Deployment from a member when its
   * apiserver comes back, as an adapter that deletes on doubt would.
   */
  readonly broken?: 'delete-on-doubt';
}

/** Restarts a process after a kill -9 or a graceful stop, as its Deployment's pod would be. */
async function bounce(stack: SoakStack, name: string, kill: boolean, downMs: number): Promise<void> {
  await stack.process(name).stop(kill);
  await sleep(downMs);
  await stack.process(name).start();
}

/** Applies and undoes one fault; what it saw, for the history, when there is anything to say. */
async function apply(o: InjectorOptions, fault: Fault): Promise<string | void> {
  const { stack } = o;
  switch (fault.kind) {
    case 'controller-kill':
    case 'controller-restart':
      return bounce(stack, fault.target, fault.kind === 'controller-kill', fault.durationMs);
    case 'flux-kill':
    case 'flux-restart':
      return bounce(stack, 'mco-flux', fault.kind === 'flux-kill', fault.durationMs);
    case 'engine-kill':
      return bounce(stack, fault.target || 'kustomize-controller', true, fault.durationMs);
    case 'plugin-kill':
    case 'plugin-restart':
      return bounce(stack, 'mco-argocd-plugin', fault.kind === 'plugin-kill', fault.durationMs);
    case 'appset-kill':
      return bounce(stack, APPSET_CONTROLLER, true, fault.durationMs);
    case 'configsync-kill':
    case 'configsync-restart':
      return bounce(stack, 'mco-configsync', fault.kind === 'configsync-kill', fault.durationMs);
    case 'argocd-sync-kill':
    case 'argocd-sync-restart':
      return bounce(stack, 'mco-argocd-sync', fault.kind === 'argocd-sync-kill', fault.durationMs);
    case 'hub-restart':
      await stack.plane.hub.stop();
      await sleep(fault.durationMs);
      return stack.plane.hub.start();
    case 'etcd-restart':
      return stack.restartEtcd(fault.durationMs);
    case 'member-down': {
      const member = stack.plane.members[fault.target]!;
      await member.stop();
      await sleep(fault.durationMs);
      await member.start();
      if (o.broken === 'delete-on-doubt') {
        // The broken adapter: the member answered nothing for a while, so it deletes what it delivered there.
        const apps = member.adminKubeConfig().makeApiClient(AppsV1Api);
        const delivered = await apps.listNamespacedDeployment({
          namespace: WORKLOAD_NS,
          labelSelector: PLACEMENT_LABEL,
        });
        const victim = delivered.items[0]?.metadata?.name;
        if (victim) await apps.deleteNamespacedDeployment({ namespace: WORKLOAD_NS, name: victim });
      }
      return;
    }
    case 'member-slow': {
      const proxy = stack.proxies[fault.target]!;
      proxy.setMode(fault.latencyMs ? { kind: 'delay', ms: fault.latencyMs } : { kind: 'refuse' });
      await sleep(fault.durationMs);
      return proxy.setMode({ kind: 'pass' });
    }
    case 'profiles-deleted': {
      const members = fault.target.split(',');
      await stack.deleteProfiles(members);
      await sleep(fault.durationMs);
      return stack.restoreProfiles(members);
    }
    case 'profile-moved': {
      await stack.moveProfile(fault.target);
      await sleep(fault.durationMs);
      // Shown with the fault's end: delivery followed the profile to the other server.
      const there = await stack.onSpare().catch((e: Error) => [`(not listed: ${e.message.split('\n')[0]})`]);
      await stack.restoreProfiles([fault.target]);
      return `on the other server: ${there.join(', ') || 'nothing'}`;
    }
    case 'placement-invalid': {
      const release = o.lock(fault.target);
      try {
        await stack.writePlacement(fault.target, { rules: [{ type: 'no-such-rule' }] });
        await sleep(fault.durationMs);
        await stack.writePlacement(fault.target, o.specOf(fault.target));
      } finally {
        release();
      }
    }
  }
}

/**
 * Schedules every fault relative to `start` (Date.now() of the soak's start)
 * and resolves when all have been undone. A fault whose target is still busy
 * (a restart slower than planned) waits for it.
 */
export async function inject(o: InjectorOptions, faults: readonly Fault[], start: number): Promise<void> {
  const busy = new Map<string, Promise<void>>();
  await Promise.all(
    faults.map(async (fault, id) => {
      await sleep(Math.max(0, start + fault.atMs - Date.now()));
      const key = slotOf(fault);
      const before = busy.get(key);
      let done!: () => void;
      const mine = new Promise<void>((resolve) => (done = resolve));
      busy.set(key, mine);
      await before;
      o.emit({ type: 'fault', id, kind: fault.kind, target: fault.target, phase: 'start' });
      let error: string | undefined;
      let detail: string | void = undefined;
      try {
        detail = await apply(o, fault);
      } catch (e) {
        error = (e as Error).message.split('\n')[0];
      }
      o.emit({
        type: 'fault',
        id,
        kind: fault.kind,
        target: fault.target,
        phase: 'end',
        ...(error ? { error } : {}),
        ...(detail ? { detail } : {}),
      });
      done();
    }),
  );
}
