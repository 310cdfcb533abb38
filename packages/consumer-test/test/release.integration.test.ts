// A user's view of a release: the folder `npm run release` writes (built from
// HEAD by scripts/prepare-tools.mjs into node_modules/.cache/mco-release, or
// $MCO_RELEASE_DIR; never built here), used outside the repository and from
// its artefacts only:
// - `mco` installed globally with docs/install.md's own command (one file that
//   carries everything it runs, no registry), then every subcommand that
//   talks to an API server run against a real kube-apiserver;
// - the packaged chart installed on that kube-apiserver, and its default
//   controller command, args and env run against the image's file system, laid
//   out from release/image as its Dockerfile does (no container runtime here:
//   docs/packaging.md), until the controller is ready;
// - docs/writing-a-provider.md's steps run literally on the release's provider
//   template, its @mco/* dependencies from a registry on 127.0.0.1 that serves
//   the release's tarballs, then run by the installed mco;
// - the changelogs and the version commit the release would push.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  describeWithControlPlane,
  eventually,
  freePort,
  requireTool,
  serviceAccountKubeConfig,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { REPO, run } from './workspaces.js';

const RELEASE = process.env.MCO_RELEASE_DIR ?? join(REPO, 'node_modules', '.cache', 'mco-release');
const inCi = process.env.CI === 'true' || process.env.CI === '1';
const released = existsSync(join(RELEASE, 'release.json'));
if (!released && !inCi) {
  console.warn(
    `[consumer-test] skipping the release suite: no ${RELEASE}/release.json (npm test's prepare step builds it)`,
  );
}
const UPSTREAM_CRDS = join(REPO, 'packages', 'testkit', 'crds', 'upstream');

interface Release {
  readonly version: string;
  readonly packages: readonly { name: string; version: string; tarball: string; dir: string }[];
  readonly cli: string;
  readonly chart: string;
  readonly image: string;
  readonly imageEntrypoint: string;
  readonly providerTemplate: string;
  readonly changelogs: readonly string[];
  readonly versionCommit: string;
}

interface Container {
  name: string;
  command?: string[];
  args: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
}

/** An npm registry for the @mco scope only: the release's tarballs, with their own package.json as metadata. */
async function scopedRegistry(release: Release): Promise<{ url: string; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const packuments = new Map<string, object>();
  const files = new Map<string, Buffer>();
  for (const p of release.packages) {
    const data = readFileSync(join(RELEASE, p.tarball));
    const manifest = JSON.parse(await run('tar', ['-xzOf', join(RELEASE, p.tarball), 'package/package.json'], RELEASE));
    files.set(basename(p.tarball), data);
    const integrity = `sha512-${createHash('sha512').update(data).digest('base64')}`;
    const dist = { tarball: `${url}/-/${basename(p.tarball)}`, integrity };
    packuments.set(p.name, {
      name: p.name,
      'dist-tags': { latest: p.version },
      versions: { [p.version]: { ...manifest, dist } },
    });
  }
  server.on('request', (req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!).replace(/^\//, '');
    const body = path.startsWith('-/') ? files.get(path.slice(2)) : packuments.get(path);
    if (body === undefined) return void res.writeHead(404).end('{}');
    res.writeHead(200, { 'content-type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json' });
    res.end(Buffer.isBuffer(body) ? body : JSON.stringify(body));
  });
  return { url, server };
}

/** Every folder below `dir` (symlinks not followed) that holds the package `name` (`@scope/name` too). */
function copiesOf(dir: string, name: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(d, entry.name);
      if (path.endsWith(`/node_modules/${name}`) && existsSync(join(path, 'package.json'))) found.push(path);
      walk(path);
    }
  };
  walk(dir);
  return found;
}

function bytesBelow(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sum + bytesBelow(path);
    return sum + (entry.isFile() ? statSync(path).size : 0);
  }, 0);
}

/** The fenced blocks of a language in a markdown file. */
const blocks = (file: string, lang: string) =>
  [
    ...readFileSync(join(REPO, 'docs', file), 'utf8').matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g')),
  ].map((m) => m[1]!);

/** A long-running process, its log kept; `ready` polls an HTTP path until it answers 200. */
function serve(command: string, args: readonly string[], cwd: string, env: Record<string, string> = {}) {
  let log = '';
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    log: () => log,
    ready: (url: string) =>
      eventually(
        `${args[0]} to answer ${url} (log: ${log.slice(-2000)})`,
        async () => (child.exitCode === null ? (await fetch(url)).status : -1),
        (status) => status === 200 || status === -1,
        120_000,
        200,
      ).then((status) => {
        if (status === -1) throw new Error(`${args.join(' ')} exited ${child.exitCode}:\n${log}`);
      }),
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describeWithControlPlane('a release, used outside the repository from its artefacts only', { tools: ['helm'] }, () => {
  let release: Release;
  let work: string;
  let prefix: string;
  let mcoBin: string;
  let cp: ControlPlane;
  let kubeconfig: string;
  let registry: Server | undefined;
  let npmrc: string;
  const running: ChildProcess[] = [];

  beforeAll(async () => {
    if (!released) throw new Error(`no ${RELEASE}/release.json (required under CI): npm test's prepare step builds it`);
    release = JSON.parse(readFileSync(join(RELEASE, 'release.json'), 'utf8')) as Release;
    work = mkdtempSync(join(tmpdir(), 'mco-release-user-'));
    symlinkSync(RELEASE, join(work, 'release'));
    // No registry for @mco/*: the global install must bring its libraries itself.
    writeFileSync(join(work, 'empty.npmrc'), '');
    const scoped = await scopedRegistry(release);
    registry = scoped.server;
    npmrc = join(work, 'scoped.npmrc');
    writeFileSync(npmrc, `@mco:registry=${scoped.url}\n`);

    // docs/install.md's command, with <version> filled in and a temporary prefix.
    const documented = readFileSync(join(REPO, 'docs', 'install.md'), 'utf8').match(
      /npm install -g (\.\/release\/cli\/mco-<version>\.tgz)/,
    );
    if (!documented)
      throw new Error('docs/install.md no longer documents `npm install -g ./release/cli/mco-<version>.tgz`');
    const command = documented[1]!.replace('<version>', release.version);
    expect(command).toBe(`./release/${release.cli}`);
    prefix = join(work, 'prefix');
    await run(
      'npm',
      ['install', '-g', command, '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund'],
      work,
      { npm_config_userconfig: join(work, 'empty.npmrc') },
    );
    mcoBin = join(prefix, 'bin', 'mco');

    cp = await startControlPlane();
    kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, cp.hub.adminKubeConfig().exportConfig(), { mode: 0o600 });
    // The packaged chart, really installed: its CRDs, ServiceAccounts and RBAC are what the tests below use.
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'mco-system' } } });
    const installed = await run(
      requireTool('helm'),
      ['install', 'mco', join(RELEASE, release.chart), '-n', 'mco-system', '--kubeconfig', kubeconfig],
      work,
    );
    expect(installed).toContain('STATUS: deployed');
  }, 900_000);
  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    registry?.close();
    await cp?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("installs globally from one file with docs/install.md's command: its libraries inside, one zod", async () => {
    const installed = join(prefix, 'lib', 'node_modules', 'mco');
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version).toBe(release.version);
    expect(existsSync(join(installed, 'LICENSE'))).toBe(true);
    // Not inlined: the runtime mco runs is the @mco/runtime package, bundled in the tarball.
    expect(existsSync(join(installed, 'node_modules', '@mco', 'runtime', 'package.json'))).toBe(true);
    const zods = copiesOf(prefix, 'zod');
    const clientNodes = copiesOf(prefix, '@kubernetes/client-node');
    console.log(
      `[consumer-test] global install of ${release.cli}: zod copies on disk: ${zods.length}, ` +
        `@kubernetes/client-node copies: ${clientNodes.length}, ${(bytesBelow(prefix) / 2 ** 20).toFixed(0)} MiB`,
    );
    expect({ zod: zods.length, clientNode: clientNodes.length }).toEqual({ zod: 1, clientNode: 1 });
    // @mco/kube-runtime resolves the client-node it loads lazily.
    await run(
      process.execPath,
      ['--input-type=module', '-e', "await import('@kubernetes/client-node')"],
      join(installed, 'node_modules', '@mco', 'kube-runtime'),
    );
    expect(await run(mcoBin, ['--version'], work)).toBe(`${release.version}\n`);
    expect(await run(mcoBin, ['demo'], work)).toMatch(/stockout/i);
  });

  it('runs every subcommand that talks to an API server against a real one', async () => {
    const file = (name: string, content: string) => {
      writeFileSync(join(work, name), content);
      return join(work, name);
    };
    const mco = (...args: string[]) => run(mcoBin, [...args, '--kubeconfig', kubeconfig], work);
    const admin = cp.hub.adminKubeConfig();
    for (const name of ['fleet', 'argocd', 'flux-system']) {
      await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    }
    await cp.hub.installCrds(
      [
        'kustomize.toolkit.fluxcd.io_kustomizations.yaml',
        'helm.toolkit.fluxcd.io_helmreleases.yaml',
        'fluxcd.controlplane.io_resourcesets.yaml',
        'fluxcd.controlplane.io_resourcesetinputproviders.yaml',
      ].map((name) => join(UPSTREAM_CRDS, name)),
    );

    // One-shot commands.
    const clusters = file(
      'clusters.yaml',
      'clusters:\n  - {name: eu-1, labels: {region: eu}, server: "https://eu-1.example:6443"}\n',
    );
    await mco('clusters', 'apply', '-f', clusters, '--manager', 'lab', '-n', 'fleet');
    await mco(
      'clusters',
      'from-kubeconfig',
      '--context',
      admin.getCurrentContext(),
      '--source',
      kubeconfig,
      '--name',
      'hub',
      '-n',
      'fleet',
    );
    expect(await mco('clusters', 'list')).toMatch(/eu-1[\s\S]*hub|hub[\s\S]*eu-1/);
    await mco('clusters', 'taint', 'eu-1', 'maintenance=true:PreferNoSelect', '-n', 'fleet');
    await mco('clusters', 'cordon', 'eu-1', '-n', 'fleet');
    await mco('clusters', 'drain', 'eu-1', '-n', 'fleet');
    await mco('clusters', 'uncordon', 'eu-1', '-n', 'fleet');
    await mco('clusters', 'confirm-removal', '--controller-namespace', 'mco-system');
    await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'orchestra.multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace: 'fleet',
      plural: 'multikubernetesclusterplacements',
      body: {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name: 'web', namespace: 'fleet' },
        spec: { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/' } }] },
      },
    });
    expect(await mco('explain', 'web', '-n', 'fleet')).toContain('eu-1');

    // Long-running commands, each until it is ready, then stopped by SIGTERM (exit 0).
    const token = file('token', 'a-token-of-32-characters-or-more-0123456789\n');
    const providers = file(
      'access-providers.yaml',
      'providers: [{name: p, execConfig: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}, allowedServers: [https://eu-1.example:6443]}]\n',
    );
    const inventory = file(
      'providers.yaml',
      `providers:\n  - {name: lab, plugin: manual, config: {file: ${clusters}, namespace: fleet, managerName: lab}}\n`,
    );
    const servers: [string, (port: number) => string[], string][] = [
      [
        'controller',
        (port) => ['controller', `--listen=127.0.0.1:${port}`, '--leader-election-namespace=mco-system'],
        '/readyz',
      ],
      ['dashboard', (port) => ['dashboard', '--listen', `127.0.0.1:${port}`], '/'],
      ['inventory', (port) => ['inventory', '--config', inventory, '--listen', `127.0.0.1:${port}`], '/readyz'],
      ['argocd-plugin', (port) => ['argocd-plugin', '--token-file', token, '--listen', `127.0.0.1:${port}`], '/readyz'],
      [
        'argocd-sync',
        (port) => [
          'argocd-sync',
          '--sync-cluster-secrets',
          '--provider-file',
          providers,
          '--listen',
          `127.0.0.1:${port}`,
        ],
        '/readyz',
      ],
      [
        'flux',
        (port) => ['flux', '--provider-file', providers, '--input-providers', '--listen', `127.0.0.1:${port}`],
        '/readyz',
      ],
    ];
    for (const [name, args, path] of servers) {
      const port = await freePort();
      const server = serve(mcoBin, [...args(port), '--kubeconfig', kubeconfig], work);
      running.push(server.child);
      await server.ready(`http://127.0.0.1:${port}${path}`);
      expect({ name, code: await server.stop() }, server.log()).toEqual({ name, code: 0 });
    }
    // configsync serves no probe: it is ready when it says it started.
    const configsync = serve(mcoBin, ['configsync', '--kubeconfig', kubeconfig], work);
    running.push(configsync.child);
    await eventually(
      'mco configsync to start',
      async () => configsync.log(),
      (log) => log.includes('config sync delivery started') || configsync.child.exitCode !== null,
      120_000,
      200,
    );
    expect({ name: 'configsync', code: await configsync.stop() }, configsync.log()).toEqual({
      name: 'configsync',
      code: 0,
    });
  });

  it("runs the chart's default controller command, args and env on the image's file system until ready", async () => {
    // The Dockerfile's steps, in order, with its WORKDIR at <root>/app.
    const dockerfile = readFileSync(join(RELEASE, release.image, 'Dockerfile'), 'utf8');
    const app = join(work, 'image-root', 'app');
    mkdirSync(app, { recursive: true });
    for (const [, sources, target] of dockerfile.matchAll(/^COPY (.+) (\S+)$/gm)) {
      for (const source of sources!.split(' '))
        cpSync(join(RELEASE, release.image, source), join(app, target!, source.endsWith('/') ? '' : source), {
          recursive: true,
        });
    }
    expect(existsSync(join(app, 'package-lock.json'))).toBe(true);
    const install = /^RUN (npm ci[^&\n]*)/m.exec(dockerfile)![1]!.trim().split(/\s+/);
    await run(install[0]!, [...install.slice(1), '--prefer-offline'], app);
    const entrypoint = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)![1]!) as string[];
    expect(entrypoint).toEqual(['node', release.imageEntrypoint]);

    const helm = requireTool('helm');
    const rendered = parseAllDocuments(
      await run(helm, ['template', 'mco', join(RELEASE, release.chart), '-n', 'mco-system'], work),
    ).map(
      (d) =>
        d.toJSON() as {
          kind?: string;
          metadata?: { name?: string };
          spec?: {
            template?: { spec?: { serviceAccountName?: string; containers?: (Container & { image: string })[] } };
          };
        },
    );
    const deployment = rendered.find((d) => d?.kind === 'Deployment' && d.metadata?.name === 'mco-controller')!;
    const pod = deployment.spec!.template!.spec!;
    const container = pod.containers!.find((c) => c.name === 'controller')!;
    expect(container.image).toBe(`ghcr.io/mco-project/mco:${release.version}`);
    // The command replaces the entrypoint: it must name the same program.
    const command = container.command ?? entrypoint;
    expect(command[0]).toBe('node');
    expect(command.at(-1)).toBe(release.imageEntrypoint);

    // The pod's identity: a token of the chart's ServiceAccount (in a pod, the mounted one).
    const identity = await serviceAccountKubeConfig(cp.hub, 'mco-system', pod.serviceAccountName!);
    const podKubeconfig = join(work, 'pod-kubeconfig');
    writeFileSync(podKubeconfig, identity.exportConfig(), { mode: 0o600 });
    const port = await freePort();
    const args = container.args.map((arg) => (arg.startsWith('--listen=') ? `--listen=127.0.0.1:${port}` : arg));
    const env = Object.fromEntries(
      (container.env ?? []).map((e) => [
        e.name,
        e.value ?? (e.name === 'POD_NAMESPACE' ? 'mco-system' : 'mco-controller-0'),
      ]),
    );
    const controller = serve(
      process.execPath,
      [...command.slice(1, -1), join(app, relativeToApp(command.at(-1)!)), ...args],
      app,
      { ...env, KUBECONFIG: podKubeconfig },
    );
    running.push(controller.child);
    await controller.ready(`http://127.0.0.1:${port}/readyz`);
    expect(await controller.stop(), controller.log()).toBe(0);
  });

  it("docs/writing-a-provider.md's steps, run literally on the release's template, give a publishable provider that the installed mco runs", async () => {
    // The clone the doc copies from: the release's template is the one at the version commit.
    mkdirSync(join(work, 'docs-steps', 'mco', 'templates'), { recursive: true });
    cpSync(join(RELEASE, release.providerTemplate), join(work, 'docs-steps', 'mco', 'templates', 'provider-template'), {
      recursive: true,
    });
    const shell = blocks('writing-a-provider.md', 'sh');
    const copy = shell.find((b) => b.includes('cp -r mco/templates/provider-template'))!.trim();
    const steps = shell.find((b) => b.includes('npm install') && b.includes('npm run build'))!;
    const providers = parse(blocks('writing-a-provider.md', 'yaml').find((y) => /^providers:/m.test(y))!) as {
      providers: { name: string; module: string; config: Record<string, unknown> }[];
    };
    const entry = providers.providers[0]!;
    // Step 1's renames: the package and `name` as the providers file names them.
    const project = join(work, 'docs-steps', entry.module);
    await run('sh', ['-c', `${copy} && pwd`], join(work, 'docs-steps'));
    const manifestFile = join(project, 'package.json');
    writeFileSync(
      manifestFile,
      JSON.stringify({ ...JSON.parse(readFileSync(manifestFile, 'utf8')), name: entry.module }, null, 2),
    );
    const source = join(project, 'src', 'index.ts');
    writeFileSync(
      source,
      readFileSync(source, 'utf8').replace(
        "export const name = 'my-inventory';",
        `export const name = '${entry.name}';`,
      ),
    );
    // Step 6, as written; only @mco/* come from the release's registry.
    await run('sh', ['-ec', steps], project, { npm_config_userconfig: npmrc });
    const template = JSON.parse(readFileSync(manifestFile, 'utf8')) as { dependencies: Record<string, string> };
    for (const [name, range] of Object.entries(template.dependencies)) {
      expect(range, name).toBe(`^${release.packages.find((p) => p.name === name)!.version}`);
    }
    // Publishable: what `npm pack` would upload names registry ranges, never file: paths.
    const [packed] = JSON.parse(await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], project)) as {
      files: { path: string }[];
    }[];
    expect(packed!.files.map((f) => f.path)).toContain('dist/index.js');
    expect(readFileSync(manifestFile, 'utf8')).not.toContain('file:');

    // Run by the installed mco, from a deploy folder with the package installed.
    const deploy = join(work, 'deploy');
    cpSync(project, join(deploy, 'node_modules', entry.module), { recursive: true });
    writeFileSync(join(deploy, 'providers.yaml'), JSON.stringify(providers));
    const namespace = String(entry.config.namespace);
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } })
      .catch(() => undefined);
    // The global-install test declared fleet/eu-1 under another manager; a provider never takes over a
    // profile another manager owns, so start from an inventory without it, as a new user's hub is.
    await cp.hub.adminKubeConfig().makeApiClient(CustomObjectsApi).deleteCollectionNamespacedCustomObject({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace,
      plural: 'clusterprofiles',
    });
    const port = await freePort();
    const provider = serve(
      mcoBin,
      [
        'inventory',
        '--config',
        join(deploy, 'providers.yaml'),
        '--kubeconfig',
        kubeconfig,
        '--listen',
        `127.0.0.1:${port}`,
      ],
      work,
    );
    running.push(provider.child);
    const api = cp.hub.adminKubeConfig().makeApiClient(CustomObjectsApi);
    const wanted = (entry.config.clusters as { name: string }[]).map((c) => c.name).sort();
    const names = await eventually(
      `the provider's ClusterProfiles`,
      async () =>
        (
          (await api.listNamespacedCustomObject({
            group: 'multicluster.x-k8s.io',
            version: 'v1alpha1',
            namespace,
            plural: 'clusterprofiles',
          })) as {
            items: { metadata: { name: string; labels?: Record<string, string> } }[];
          }
        ).items
          .filter((p) => p.metadata.labels?.['x-k8s.io/cluster-manager'] === entry.config.managerName)
          .map((p) => p.metadata.name)
          .sort(),
      (found) => found.length === wanted.length,
      120_000,
      200,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nprovider log:\n${provider.log().slice(-4000)}`);
    });
    expect(names).toEqual(wanted);
    expect(await provider.stop(), provider.log()).toBe(0);
  }, 600_000);

  it('leaves a CHANGELOG.md per released package and the version commit it would push', async () => {
    expect(release.changelogs.length).toBeGreaterThan(0);
    for (const changelog of release.changelogs) {
      const dir = changelog.replace(/^changelogs\//, '').replace(/\/CHANGELOG\.md$/, '');
      const p = release.packages.find((q) => q.dir === dir)!;
      const text = readFileSync(join(RELEASE, changelog), 'utf8');
      expect(text, changelog).toMatch(new RegExp(`^# ${p.name.replace('/', '\\/')}\\n`));
      expect(text, changelog).toContain(`\n## ${p.version}\n`);
    }
    // The commit applies on the commit it names, and gives the released versions, changelogs and template.
    const patch = join(RELEASE, release.versionCommit);
    const base = /^base-commit: ([0-9a-f]{40})$/m.exec(readFileSync(patch, 'utf8'))![1]!;
    const clone = join(work, 'clone');
    await run('git', ['clone', '--quiet', '--shared', '--no-checkout', REPO, clone], work);
    await run('git', ['checkout', '--quiet', base], clone);
    await run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'am', '--quiet', patch], clone);
    for (const p of release.packages) {
      expect(JSON.parse(readFileSync(join(clone, p.dir, 'package.json'), 'utf8')).version, p.name).toBe(p.version);
    }
    for (const changelog of release.changelogs) {
      const inClone = join(clone, changelog.replace(/^changelogs\//, ''));
      expect(readFileSync(inClone, 'utf8')).toBe(readFileSync(join(RELEASE, changelog), 'utf8'));
    }
    expect(readFileSync(join(clone, 'templates', 'provider-template', 'package.json'), 'utf8')).toBe(
      readFileSync(join(RELEASE, release.providerTemplate, 'package.json'), 'utf8'),
    );
    expect(readdirSync(join(clone, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md')).toEqual([]);
  });
});

/** `/app/x` -> `x`: the image's absolute paths, below the laid-out root's app folder. */
function relativeToApp(path: string): string {
  if (!path.startsWith('/app/')) throw new Error(`${path} is outside the image's /app`);
  return path.slice('/app/'.length);
}
