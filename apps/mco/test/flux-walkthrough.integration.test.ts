// docs/flux.md's walk-through, run as written: every code block of the doc in
// order (@mco/testkit's Walkthrough), with the built `mco controller` and
// `mco flux` against a real hub and two real member kube-apiservers. What the
// doc lists under "You need" is set up here and nothing else: Flux's real
// source-controller and kustomize-controller and the real flux-operator on
// the hub (their CRDs, namespace flux-system), mco's CRDs and the chart's
// RBAC, the ClusterProfiles, and the workload's Git repository
// (examples/flux/web/) on a git HTTP server.
import { readdirSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  describeWithControlPlane,
  fluxControllerCrds,
  fluxControllerTool,
  freePort,
  requireTool,
  startControlPlane,
  startFluxController,
  startGitServer,
  thirdPartyCrd,
  Walkthrough,
  type BlockReport,
  type ControlPlane,
  type FluxController,
  type GitServer,
  type Substitution,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { builtMco } from './built.js';
import { chartIdentities, clusterProfiles, credentialPlugin, CREDENTIAL_PLUGIN } from './walkthrough-fixtures.js';

vi.setConfig({ testTimeout: 600_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const MEMBERS = ['east', 'west'] as const;
const FLUX_NS = 'flux-system';

/** Every file under `dir`, by its path relative to `dir`. */
function filesOf(dir: string, root = dir): Record<string, string> {
  return Object.assign(
    {},
    ...readdirSync(dir, { withFileTypes: true }).map((entry) =>
      entry.isDirectory()
        ? filesOf(join(dir, entry.name), root)
        : { [relative(root, join(dir, entry.name))]: readFileSync(join(dir, entry.name), 'utf8') },
    ),
  ) as Record<string, string>;
}

describeWithControlPlane(
  'docs/flux.md walk-through with the built `mco controller` and `mco flux`, real Flux and flux-operator',
  {
    tools: [
      'helm',
      'kubectl',
      fluxControllerTool('source-controller'),
      fluxControllerTool('kustomize-controller'),
      fluxControllerTool('flux-operator'),
    ],
  },
  () => {
    let plane: ControlPlane;
    let walk: Walkthrough;
    let dir: string;
    let git: GitServer | undefined;
    const controllers: FluxController[] = [];

    beforeAll(async () => {
      const mco = builtMco();
      plane = await startControlPlane({ clusters: [...MEMBERS] });
      dir = mkdtempSync(join(tmpdir(), 'mco-flux-walkthrough-'));
      const user = join(dir, 'user');
      git = await startGitServer();
      git.commit('shop/web', filesOf(join(REPO, 'examples', 'flux', 'web')));
      const substitutions: Substitution[] = [
        { kind: 'port', from: '127.0.0.1:8080', to: `127.0.0.1:${await freePort()}` },
        { kind: 'port', from: '127.0.0.1:8083', to: `127.0.0.1:${await freePort()}` },
        { kind: 'address', from: 'https://git.example.com', to: git.url },
        ...MEMBERS.map((m): Substitution => ({
          kind: 'address',
          from: `https://${m}.clusters.example:6443`,
          to: plane.members[m]!.server,
        })),
        ...['examples/flux/resourceset.yaml', 'examples/flux/placement.yaml'].map((path): Substitution => ({
          kind: 'path',
          from: path,
          to: join(REPO, path),
        })),
      ];
      walk = new Walkthrough({
        doc: join(REPO, 'docs', 'flux.md'),
        dir: user,
        substitutions,
        // Every sample output of the doc is the whole output of its command, not a part of it.
        exactOutput: true,
        commands: {
          mco: [process.execPath, mco],
          kubectl: requireTool('kubectl'),
          // The members' admin: Flux applies the workload with what mco's credential plugin hands out.
          [CREDENTIAL_PLUGIN]: credentialPlugin(dir, plane, 'admin'),
        },
        env: { KUBECONFIG: join(user, 'hub.kubeconfig') },
      });

      // "You need": kubectl as the hub's and each member's admin, Flux and the
      // Flux Operator in flux-system, mco's CRDs, one hub identity per mco
      // process with the chart's RBAC, the ClusterProfiles.
      writeFileSync(join(user, 'hub.kubeconfig'), plane.hub.adminKubeConfig().exportConfig(), { mode: 0o600 });
      for (const m of MEMBERS) {
        writeFileSync(join(user, `${m}.kubeconfig`), plane.members[m]!.adminKubeConfig().exportConfig(), {
          mode: 0o600,
        });
      }
      await plane.hub.installCrds([
        join(REPO, 'apps', 'mco', 'chart', 'crds'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
        ...fluxControllerCrds('source-controller'),
        ...fluxControllerCrds('flux-operator'),
      ]);
      await plane.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: FLUX_NS } }]);
      for (const name of ['source-controller', 'kustomize-controller', 'flux-operator'] as const) {
        controllers.push(
          await startFluxController(name, { kubeconfig: join(user, 'hub.kubeconfig'), namespace: FLUX_NS, dir }),
        );
      }
      await chartIdentities(
        plane,
        {
          'flux.enabled': 'true',
          'flux.inputProviders': 'true',
          'flux.providers[0].name': 'google',
          'flux.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
          'flux.providers[0].execConfig.command': CREDENTIAL_PLUGIN,
          'flux.providers[0].allowedServers[0]': plane.members.east!.server,
        },
        [
          ['controller.kubeconfig', 'controller'],
          ['flux.kubeconfig', 'flux'],
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
      for (const c of controllers.reverse()) await c.stop();
      await git?.stop();
      await plane?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('runs every code block of docs/flux.md in order, as written', async () => {
      try {
        await walk.run();
      } catch (error) {
        const flux = controllers.map((c) => `--- ${c.name}\n${c.tail(15)}`).join('\n');
        throw new Error(`${(error as Error).message}\n${walk.logs(30)}\n${flux}`);
      }
      const report = walk.finish();
      for (const r of report.filter((r) => r.outcome === 'skipped')) {
        console.log(`[walkthrough] docs/flux.md:${r.line} not run: ${r.detail}`);
      }
      const what = (r: BlockReport) =>
        r.outcome === 'file' || r.outcome === 'fragment' ? `${r.outcome} ${r.detail}` : r.outcome;
      expect(report.map(what)).toEqual([
        'skipped', // chart values
        'skipped', // the synopsis
        'fragment examples/flux/resourceset.yaml',
        'file providers.yaml',
        'background', // the two processes
        'file gitrepository.yaml',
        'ran', // the GitRepository and the ResourceSet
        'ran', // the GitRepository ready
        'expected',
        'ran', // the placement
        'ran', // the input providers
        'expected',
        'ran', // the Kustomizations
        'expected',
        'ran', // the workload on the members
        'expected',
        'ran', // west leaves
        'ran', // what is left
        'expected',
        'ran', // readyz and the gauge
        'expected',
        'skipped', // rendering mode
        'fragment examples/flux/web/deploy/web.yaml', // maxReplicas
        'fragment examples/flux/web/deploy/web.yaml', // minReplicas
        'ran', // the orphan condition (none)
        'skipped', // deleting an orphan
      ]);
    });
  },
);
