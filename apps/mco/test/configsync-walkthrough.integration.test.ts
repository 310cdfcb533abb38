// docs/configsync.md's walk-through, run as written: every code block of the
// doc in order (@mco/testkit's Walkthrough), with the built `mco controller`
// and `mco configsync` against a real hub and two real member kube-apiservers.
// Config Sync's reconcilers cannot run here (they need Git and container
// images): the doc's checks read what mco writes on the members and the hub.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  describeWithControlPlane,
  eventually,
  freePort,
  requireTool,
  startControlPlane,
  thirdPartyCrd,
  Walkthrough,
  type BlockReport,
  type ControlPlane,
  type Substitution,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { builtMco } from './built.js';
import { chartIdentities, clusterProfiles, credentialPlugin, CREDENTIAL_PLUGIN } from './walkthrough-fixtures.js';

vi.setConfig({ testTimeout: 600_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const MEMBERS = ['east', 'west'] as const;
/** mco's identity on the members, as the doc's RoleBindings name it. */
const MEMBER_USER = 'mco@example-project.iam.gserviceaccount.com';

describeWithControlPlane(
  'docs/configsync.md walk-through with the built `mco controller` and `mco configsync`',
  { tools: ['helm', 'kubectl'] },
  () => {
    let plane: ControlPlane;
    let walk: Walkthrough;
    let dir: string;

    beforeAll(async () => {
      const mco = builtMco();
      plane = await startControlPlane({ clusters: [...MEMBERS], users: { [MEMBER_USER]: [] } });
      dir = mkdtempSync(join(tmpdir(), 'mco-configsync-walkthrough-'));
      const user = join(dir, 'user');
      const substitutions: Substitution[] = [
        { kind: 'port', from: '127.0.0.1:8080', to: `127.0.0.1:${await freePort()}` },
        { kind: 'port', from: '127.0.0.1:8084', to: `127.0.0.1:${await freePort()}` },
        ...MEMBERS.map((m): Substitution => ({
          kind: 'address',
          from: `https://${m}.clusters.example:6443`,
          to: plane.members[m]!.server,
        })),
        ...['examples/configsync/placement.yaml', 'packages/configsync/deploy/member-rbac.yaml'].map(
          (path): Substitution => ({ kind: 'path', from: path, to: join(REPO, path) }),
        ),
      ];
      walk = new Walkthrough({
        doc: join(REPO, 'docs', 'configsync.md'),
        dir: user,
        substitutions,
        // Every sample output of the doc is the whole output of its command, not a part of it.
        exactOutput: true,
        commands: {
          mco: [process.execPath, mco],
          kubectl: requireTool('kubectl'),
          [CREDENTIAL_PLUGIN]: credentialPlugin(dir, plane, MEMBER_USER),
        },
        env: { KUBECONFIG: join(user, 'hub.kubeconfig') },
      });

      // "You need": kubectl as the hub's and each member's admin, mco's CRDs,
      // one hub identity per process with the chart's RBAC, the ClusterProfiles,
      // Config Sync on the members.
      writeFileSync(join(user, 'hub.kubeconfig'), plane.hub.adminKubeConfig().exportConfig(), { mode: 0o600 });
      for (const m of MEMBERS) {
        writeFileSync(join(user, `${m}.kubeconfig`), plane.members[m]!.adminKubeConfig().exportConfig(), {
          mode: 0o600,
        });
        await plane.members[m]!.installCrds([thirdPartyCrd('configsync.gke.io_reposyncs.yaml')]);
        await plane.members[m]!.apply([
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'config-management-system' } },
        ]);
      }
      await plane.hub.installCrds([join(REPO, 'apps', 'mco', 'chart', 'crds')]);
      await chartIdentities(
        plane,
        {
          'configsync.enabled': 'true',
          'configsync.providers[0].name': 'google',
          'configsync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
          'configsync.providers[0].execConfig.command': CREDENTIAL_PLUGIN,
          'configsync.providers[0].allowedServers[0]': plane.members.east!.server,
        },
        [
          ['controller.kubeconfig', 'controller'],
          ['configsync.kubeconfig', 'configsync'],
        ],
        user,
      );
      await clusterProfiles(
        plane,
        'fleet',
        MEMBERS.map((m) => ({ name: m, member: plane.members[m]! })),
      );
    }, 300_000);

    afterAll(async () => {
      await walk?.stop();
      await plane?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('runs every code block of docs/configsync.md in order, as written', async () => {
      try {
        await walk.run();
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${walk.logs(30)}`);
      }
      const report = walk.finish();
      for (const r of report.filter((r) => r.outcome === 'skipped')) {
        console.log(`[walkthrough] docs/configsync.md:${r.line} not run: ${r.detail}`);
      }
      const what = (r: BlockReport) =>
        r.outcome === 'file' || r.outcome === 'fragment' ? `${r.outcome} ${r.detail}` : r.outcome;
      expect(report.map(what)).toEqual([
        'fragment examples/configsync/placement.yaml', // the template
        'skipped', // the values of a draining cluster
        'skipped', // a sample condition
        'skipped', // chart values
        'file providers.yaml',
        'ran', // the members' namespace and RBAC
        'background', // the two processes
        'ran', // the placement
        'ran', // the RepoSyncs and RoleBindings on both members
        'expected',
        'ran', // the placement's condition
        'expected',
        'ran', // west leaves
        'ran', // mco's objects per member
        'expected',
      ]);
      // What mco recorded on the hub follows: only east is still delivered. The
      // adapter records a deletion after the member answered it, so the doc's
      // last check can see west's objects gone a moment before the annotation.
      const hub = plane.hub.adminKubeConfig().makeApiClient(CustomObjectsApi);
      await eventually(
        "the placement's delivered annotation to name only fleet/east",
        async () => {
          const placement = (await hub.getNamespacedCustomObject({
            group: 'orchestra.multicluster.x-k8s.io',
            version: 'v1alpha1',
            plural: 'multikubernetesclusterplacements',
            namespace: 'shop',
            name: 'web',
          })) as { metadata: { annotations?: Record<string, string> } };
          return Object.keys(
            JSON.parse(placement.metadata.annotations?.['configsync.mco.x-k8s.io/delivered'] ?? '{}') as object,
          );
        },
        (delivered) => delivered.length === 1 && delivered[0] === 'fleet/east',
      );
    });
  },
);
