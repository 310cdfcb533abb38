import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PatchStrategy } from '@kubernetes/client-node';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { describeWithControlPlane, type BlockReport } from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  ARGOCD,
  AT_CEILING,
  APPLICATION_SETS,
  applicationOf,
  argoClusterOf,
  ArgoStack,
  IDLE,
  NORMAL,
  PLACEMENTS,
  WORKLOAD_NS,
  type Application,
  type Member,
  type PlacementObject,
} from './stack.js';

// Real processes on a shared 2-core machine: every step waits on a condition,
// with room for Argo CD's 10 s poll and a loaded machine.
vi.setConfig({ testTimeout: 600_000 });

const REFRESH = 'argocd.argoproj.io/application-set-refresh';
/**
 * Scale-in and draining within seconds instead of minutes (mco's `behavior`
 * extension). Each drain step stays in force for 15 s, time enough for Argo CD
 * to regenerate and the test to see it on a loaded machine.
 */
const BEHAVIOR = {
  scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
  drain: { stepIntervalSeconds: 15, stepPercent: 25 },
};

async function until<T>(what: string, probe: () => Promise<T>, accept: (v: T) => boolean, logs: () => string) {
  const deadline = Date.now() + 240_000; // a loaded machine (load average 30) needed over 2 min
  let last: T | undefined;
  for (;;) {
    last = await probe().catch(() => undefined);
    if (last !== undefined && accept(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 2000)}\n${logs()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const helmParameters = (app: Application | undefined) =>
  Object.fromEntries((app?.spec.source.helm?.parameters ?? []).map((p) => [p.name, p.value]));

describeWithControlPlane(
  'Argo CD v3.2.6 applicationset controller with the built `mco controller` and `mco argocd-plugin`',
  { tools: ['argocd', 'helm', 'kubectl'] },
  () => {
    let stack: ArgoStack;

    const wait = <T>(what: string, probe: () => Promise<T>, accept: (v: T) => boolean) =>
      until(what, probe, accept, () => stack.logs());
    const apps = async () => new Map((await stack.applications()).map((a) => [a.metadata!.name!, a]));
    const versions = async () =>
      Object.fromEntries([...(await apps())].map(([name, app]) => [name, app.metadata!.resourceVersion]));
    const listed = (placement: PlacementObject) =>
      (placement.status?.clusters ?? []).map((c) => `${c.name}:${c.state}`).join(',');
    const waitListed = (expected: string) =>
      wait(
        `placement status ${expected}`,
        () => stack.placement(),
        (p) => listed(p) === expected,
      );
    const clusterEntry = (member: Member) => `mco-cluster-${member}`;
    const appSetConditions = async () =>
      Object.fromEntries(
        ((await stack.applicationSet()).status?.conditions ?? []).map((c) => [c.type, `${c.status}: ${c.message}`]),
      );
    // A merge patch, so it cannot race Argo CD or mco's refresher, which add and
    // remove the same annotation: a JSON patch chosen from an earlier read fails
    // with 422 when the key went away in between.
    const setRefresh = async (value: string | null) => {
      await stack.custom.patchNamespacedCustomObject(
        {
          ...APPLICATION_SETS,
          namespace: ARGOCD,
          name: 'hello-world-applicationset',
          body: { metadata: { annotations: { [REFRESH]: value } } },
        },
        requestOptions(stack.plane.hub.adminKubeConfig(), 10_000, PatchStrategy.MergePatch),
      );
    };
    /**
     * Makes Argo CD reconcile now, as a user would: it reacts to the refresh
     * annotation being added, so an annotation left over from a failed
     * reconcile (Argo CD keeps it on error) is removed first.
     */
    const refreshNow = async () => {
      await setRefresh(null);
      await setRefresh('true');
    };
    /** Argo CD removes the annotation once a reconcile succeeded. */
    const refreshed = () =>
      wait(
        'Argo CD to finish a successful reconcile (refresh annotation removed)',
        () => stack.applicationSet(),
        (a) => a.metadata?.annotations?.[REFRESH] === undefined,
      );
    const failedWith = (pattern: RegExp) =>
      wait(
        `ApplicationSet condition ErrorOccurred matching ${pattern}`,
        appSetConditions,
        (c) => c.ErrorOccurred?.startsWith('True') === true && pattern.test(c.ErrorOccurred),
      );

    // Three apiservers and five processes: minutes on a loaded machine.
    beforeAll(async () => {
      stack = await ArgoStack.start({ behavior: BEHAVIOR });
    }, 600_000);
    afterAll(async () => {
      await stack?.stop();
    });

    it('runs every code block of docs/argocd.md in order, as written', () => {
      for (const r of stack.report.filter((r) => r.outcome === 'skipped')) {
        console.log(`[walkthrough] docs/argocd.md:${r.line} not run: ${r.detail}`);
      }
      const what = (r: BlockReport) =>
        r.outcome === 'file' || r.outcome === 'fragment' ? `${r.outcome} ${r.detail}` : r.outcome;
      const example = 'fragment examples/argocd/hello-world/applicationset.yaml';
      expect(stack.report.map(what)).toEqual([
        'skipped', // chart values (Helm install)
        'skipped', // the Helm install's existingSecret commands
        'file providers.yaml',
        'file signals.yaml',
        'ran', // namespaces, AppProject, Argo CD settings
        'ran', // the plugin token, its Secret and ConfigMap
        'background', // the five processes
        'ran', // readiness
        'expected',
        'ran', // kubectl apply -f examples/argocd/hello-world/
        'ran', // the placement's clusters
        'expected',
        'ran', // the cluster Secret
        'expected',
        'ran', // the Application
        'expected',
        example, // the plugin generator
        example, // the templates
      ]);
      expect(stack.walk.background().map((p) => p.command.split(' ').slice(0, 2).join(' '))).toEqual([
        'mco controller',
        'mco argocd-plugin',
        'mco argocd-sync',
        'mco argocd-sync',
        'KUBECONFIG=hub.kubeconfig argocd-applicationset-controller',
      ]);
    });

    it("creates the first cluster's Application with the template's destination, naming the cluster Secret mco wrote", async () => {
      await waitListed(`${clusterEntry('east')}:ACTIVE`);
      const app = await wait('the Application of east', apps, (a) => a.has(applicationOf('east')));
      const east = app.get(applicationOf('east'))!;
      expect({
        names: [...app.keys()],
        destination: east.spec.destination,
        parameters: helmParameters(east),
        owner: east.metadata!.ownerReferences?.map((o) => `${o.kind}/${o.name}`),
      }).toEqual({
        names: [applicationOf('east')],
        destination: { name: argoClusterOf('east'), namespace: WORKLOAD_NS },
        parameters: {},
        owner: ['ApplicationSet/hello-world-applicationset'],
      });
      const secret = await stack.core.readNamespacedSecret({ namespace: ARGOCD, name: argoClusterOf('east') });
      const data = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString();
      expect({
        type: secret.metadata!.labels!['argocd.argoproj.io/secret-type'],
        name: data('name'),
        server: data('server'),
        bearerToken: (JSON.parse(data('config')) as { bearerToken?: string }).bearerToken,
      }).toEqual({
        type: 'cluster',
        name: east.spec.destination.name,
        server: stack.plane.members.east!.server,
        bearerToken: stack.plane.members.east!.token('admin'),
      });
    });

    it('scale-out: the new cluster gets its Application, the first one is untouched', async () => {
      const before = await versions();
      await stack.setHpa('east', AT_CEILING);
      await waitListed(`${clusterEntry('east')}:ACTIVE,${clusterEntry('west')}:ACTIVE`);
      const app = await wait('the Application of west', apps, (a) => a.has(applicationOf('west')));
      const west = app.get(applicationOf('west'))!;
      expect({ destination: west.spec.destination, parameters: helmParameters(west) }).toEqual({
        destination: { name: argoClusterOf('west'), namespace: WORKLOAD_NS },
        parameters: {},
      });
      const secret = await stack.core.readNamespacedSecret({ namespace: ARGOCD, name: argoClusterOf('west') });
      expect(Buffer.from(secret.data!.server!, 'base64').toString()).toBe(stack.plane.members.west!.server);
      expect((await versions())[applicationOf('east')]).toBe(before[applicationOf('east')]);
    });

    it("draining: the Application's Helm parameters carry the stepped-down desiredMaxReplicas", async () => {
      const eastVersion = (await versions())[applicationOf('east')];
      await stack.setHpa('east', NORMAL);
      // west wants scale-in with 4 replicas: SCALING_IN, desiredMaxReplicas 4, then 3 after one drain step.
      await stack.setHpa('west', { minReplicas: 4, maxReplicas: 8, currentReplicas: 4, limited: 'TooFewReplicas' });
      await waitListed(`${clusterEntry('east')}:ACTIVE,${clusterEntry('west')}:SCALING_IN`);
      // Entering SCALING_IN caps the HPA at its observed replicas (4), then one step of 25 % (to 3).
      const westMax = (a: Map<string, Application>) => helmParameters(a.get(applicationOf('west')))['hpa.maxReplicas'];
      await wait('the west Application to carry hpa.maxReplicas 4', apps, (a) => westMax(a) === '4');
      const stepped = await wait('the west Application to carry hpa.maxReplicas 3', apps, (a) => westMax(a) === '3');
      expect(helmParameters(stepped.get(applicationOf('west')))).toEqual({
        'hpa.minReplicas': '1',
        'hpa.maxReplicas': '3',
      });
      const placement = await stack.placement();
      const west = placement.status!.clusters!.find((c) => c.name === clusterEntry('west'))!;
      expect(west.draining?.desiredMaxReplicas).toBeLessThanOrEqual(3);
      expect((await versions())[applicationOf('east')]).toBe(eastVersion);
    });

    it("scale-in: the removed cluster's Application is deleted, the other untouched", async () => {
      const eastVersion = (await versions())[applicationOf('east')];
      await stack.setHpa('west', IDLE);
      await waitListed(`${clusterEntry('east')}:ACTIVE`);
      await wait(
        'Argo CD to delete the west Application',
        apps,
        (a) => a.get(applicationOf('west'))?.metadata?.deletionTimestamp !== undefined || !a.has(applicationOf('west')),
      );
      await stack.finishDeletion(applicationOf('west')).catch(() => undefined);
      const left = await wait('the west Application to be gone', apps, (a) => !a.has(applicationOf('west')));
      expect([...left.keys()]).toEqual([applicationOf('east')]);
      expect(left.get(applicationOf('east'))!.metadata!.resourceVersion).toBe(eastVersion);
    });

    it('a change made while the plugin is down reaches Argo CD once the plugin is ready again (the refresher probes it, `--plugin-url`)', async () => {
      // The plugin is down when the placement scales out: the refresher's refresh
      // makes Argo CD reconcile, which fails; Argo CD keeps the annotation and
      // retries only after 3 minutes. The refresher probes the plugin's /readyz and,
      // once it answers again, refreshes the ApplicationSet, replacing the stale
      // annotation (writing the same value again would not wake Argo CD).
      await stack.stopProcess('plugin', { kill: true });
      await stack.setHpa('east', AT_CEILING);
      await waitListed(`${clusterEntry('east')}:ACTIVE,${clusterEntry('west')}:ACTIVE`);
      await failedWith(/connection refused|connect/i);
      // Argo CD's own poll may fail before the refresher's annotation arrives: wait
      // for the annotation, which the failed reconcile it triggers leaves in place.
      const stale = (
        await wait(
          "the refresher's annotation, left by the failed reconcile",
          () => stack.applicationSet(),
          (a) => a.metadata?.annotations?.[REFRESH] !== undefined,
        )
      ).metadata?.annotations?.[REFRESH];
      const logged = (stack.fullLogs().get('refresher') ?? '').length;
      stack.start('plugin');
      await wait(
        'the plugin to be ready',
        () => fetch(`${stack.pluginUrl()}/readyz`).then((r) => r.status),
        (s) => s === 200,
      );
      const readyAt = Date.now();
      await wait('the Application of west', apps, (a) => a.has(applicationOf('west')));
      const since = (stack.fullLogs().get('refresher') ?? '').slice(logged).split('\n');
      expect(
        {
          staleBeforeThePluginCameBack: stale,
          readyAgainLogged: since.some((l) => l.includes('the plugin is ready again')),
          refreshedForIt: since.some(
            (l) =>
              l.includes('refreshed ApplicationSet') &&
              l.includes('"reason":"plugin ready again"') &&
              l.includes('"replacedStaleAnnotation":true'),
          ),
          // Seconds after the plugin is ready, not Argo CD's retry 3 minutes after the
          // failure (the bench measures the figure: docs/performance.md).
          beforeArgoRetry: Date.now() - readyAt < 170_000,
        },
        `the refresher's log since the plugin was restarted:\n${since.join('\n')}`,
      ).toEqual({
        staleBeforeThePluginCameBack: 'true',
        readyAgainLogged: true,
        refreshedForIt: true,
        beforeArgoRetry: true,
      });
    });

    it('faults never delete or change an Application, and Argo CD follows the placement again afterwards', async () => {
      // Both clusters placed, then every fault while the placement stands still.
      await stack.setHpa('east', AT_CEILING);
      await waitListed(`${clusterEntry('east')}:ACTIVE,${clusterEntry('west')}:ACTIVE`);
      await wait('both Applications', apps, (a) => a.has(applicationOf('west')) && a.has(applicationOf('east')));
      await refreshNow();
      await refreshed();
      const before = await versions();
      const unchanged = async (fault: string) =>
        expect({ fault, versions: await versions() }).toEqual({ fault, versions: before });

      // 1. The plugin process is killed: Argo CD cannot connect.
      await stack.stopProcess('plugin', { kill: true });
      await refreshNow();
      await failedWith(/connection refused|connect/i);
      await unchanged('plugin killed');

      // 2. The plugin answers 503: its caches never sync (the hub answers its start-up checks, then hangs).
      stack.start('plugin', { kubeconfig: await stack.stalledHubKubeconfig() });
      await wait(
        'the plugin to answer 503',
        () => fetch(`${stack.pluginUrl()}/readyz`).then((r) => r.status),
        (s) => s === 503,
      );
      await refreshNow();
      await failedWith(/503/);
      await unchanged('plugin answers 503');
      await stack.stopProcess('plugin');
      stack.start('plugin');
      await wait(
        'the plugin to be ready',
        () => fetch(`${stack.pluginUrl()}/readyz`).then((r) => r.status),
        (s) => s === 200,
      );
      await refreshNow();
      await refreshed();
      await unchanged('plugin back');

      // 3. The hub apiserver crashes and comes back: every process reconnects.
      await stack.plane.hub.restart({ kill: true });
      await refreshNow();
      await refreshed();
      await unchanged('hub apiserver restarted');

      // 4. The placement is made invalid: mco keeps its clusters (Valid=False).
      await stack.custom.patchNamespacedCustomObject({
        ...PLACEMENTS,
        namespace: WORKLOAD_NS,
        name: 'hello-web-placement-autoscale',
        body: [{ op: 'replace', path: '/spec/rules/1/arguments/regex', value: '(' }],
      });
      await wait(
        'the placement to be reported invalid',
        () => stack.placement(),
        (p) => p.status?.conditions?.some((c) => c.type === 'Valid' && c.status === 'False') === true,
      );
      await stack.setHpa('east', NORMAL); // would scale west in, were the placement valid
      await refreshNow();
      await refreshed();
      await unchanged('placement invalid');
      expect(listed(await stack.placement())).toBe(`${clusterEntry('east')}:ACTIVE,${clusterEntry('west')}:ACTIVE`);

      // 5. The token is rotated: the plugin's file first (Argo CD still sends the old one: 403), then Argo CD's Secret.
      const rotated = `${stack.token}-rotated`;
      writeFileSync(join(stack.user, 'token'), `${rotated}\n`);
      const withOldToken = () =>
        fetch(`${stack.pluginUrl()}/api/v1/getparams.execute`, {
          method: 'POST',
          headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ applicationSetName: 'probe', input: { parameters: {} } }),
        }).then((r) => r.status);
      await wait('the plugin to retire the old token', withOldToken, (s) => s === 403);
      await refreshNow();
      await failedWith(/403|forbidden/i);
      await unchanged('token rotated in the plugin only');
      await stack.core.patchNamespacedSecret({
        namespace: ARGOCD,
        name: 'mco-argocd-plugin-token',
        body: [{ op: 'replace', path: '/data/token', value: Buffer.from(rotated).toString('base64') }],
      });
      await refreshNow();
      await refreshed();
      await unchanged('token rotated in both');

      // Afterwards: the placement is fixed and west scales in; Argo CD follows.
      await stack.custom.patchNamespacedCustomObject({
        ...PLACEMENTS,
        namespace: WORKLOAD_NS,
        name: 'hello-web-placement-autoscale',
        body: [
          { op: 'replace', path: '/spec/rules/1/arguments/regex', value: '^fleet-cluster-inventory/mco-cluster-' },
        ],
      });
      await stack.setHpa('west', IDLE);
      await waitListed(`${clusterEntry('east')}:ACTIVE`);
      await wait(
        'Argo CD to delete the west Application after the faults',
        apps,
        (a) => a.get(applicationOf('west'))?.metadata?.deletionTimestamp !== undefined,
      );
      expect((await versions())[applicationOf('east')]).toBe(before[applicationOf('east')]);
    }, 1_200_000); // five faults, each waiting on Argo CD: longer than the others on a loaded machine

    // Issue 19, secret hygiene, on the real processes of everything above (the
    // in-process run with hostile credentials is token-scan.integration.test.ts).
    it('leaves no token (the plugin token, the rotated one, member and hub credentials) in any process log, Event, placement, ClusterProfile or /metrics', async () => {
      const secrets: Record<string, string> = {
        'plugin token': stack.token,
        'rotated plugin token': `${stack.token}-rotated`,
        ...stack.credentials(),
      };
      const pieces = Object.entries(secrets).flatMap(([name, secret]) =>
        Array.from({ length: Math.max(1, secret.length - 15) }, (_, i) => ({ name, piece: secret.slice(i, i + 16) })),
      );
      const list = async (resource: typeof PLACEMENTS | { group: string; version: string; plural: string }) =>
        ((await stack.custom.listClusterCustomObject({ ...resource })) as { items: unknown[] }).items.map((o) =>
          JSON.stringify(o),
        );
      const metrics = async (name: string) => (await fetch(`${stack.httpUrl(name)}/metrics`)).text();
      const collected: Record<string, string[]> = {
        ...Object.fromEntries([...stack.fullLogs()].map(([role, log]) => [`log of ${role}`, log.split('\n')])),
        events: (await stack.core.listEventForAllNamespaces()).items.map((e) => JSON.stringify(e)),
        placements: await list(PLACEMENTS),
        clusterProfiles: await list({ group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' }),
        metrics: [
          await metrics('controller-http'),
          await metrics('refresher-http'),
          await metrics('secret-syncer-http'),
        ],
      };
      const leaks = Object.entries(collected).flatMap(([where, texts]) =>
        texts.flatMap((text) =>
          pieces.filter((p) => text.includes(p.piece)).map((p) => `${where}: ${p.name} in ${text.slice(0, 300)}`),
        ),
      );
      expect({
        leaks: [...new Set(leaks)],
        // Not vacuous: every mco process logged, and the controller's metrics were read.
        logged: ['controller', 'plugin', 'refresher', 'secret-syncer'].filter(
          (role) => !collected[`log of ${role}`]?.join('').trim(),
        ),
        controllerMetrics: collected.metrics![0]!.includes('mco_controller_status_writes_total'),
      }).toEqual({ leaks: [], logged: [], controllerMetrics: true });
    });
  },
);
