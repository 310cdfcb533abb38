// A user's view of a release: the folder `npm run release` writes (built from
// HEAD by scripts/prepare-tools.mjs into node_modules/.cache/mco-release, or
// $MCO_RELEASE_DIR; never built here), used outside the
// repository and from its artefacts only. `mco` is installed globally from its
// tarball into a temporary prefix; its @mco/* dependencies come from a scoped
// registry on 127.0.0.1 that serves the release's tarballs (`npm install` of an
// unpublished package otherwise gives E404), everything else from the npm
// registry. Then `mco demo`, the packaged chart (`helm template`, then a
// server-side dry-run install on a real kube-apiserver), the image's entrypoint
// run from its build context with plain node, and a provider made from the
// template with docs/writing-a-provider.md's own config, run by the installed mco.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  describeWithControlPlane,
  requireTool,
  thirdPartyCrd,
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

interface Release {
  readonly version: string;
  readonly packages: readonly { name: string; version: string; tarball: string }[];
  readonly chart: string;
  readonly image: string;
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

/** The first providers file of the doc that names a `module:` (the doc's own config). */
function docProvidersFile(): { providers: { name: string; module: string; config: Record<string, unknown> }[] } {
  const doc = readFileSync(join(REPO, 'docs', 'writing-a-provider.md'), 'utf8');
  const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((y) => /^providers:/m.test(y));
  if (!block) throw new Error('docs/writing-a-provider.md has no providers file: update this test');
  return parse(block);
}

describeWithControlPlane('a release, used outside the repository from its artefacts only', { tools: ['helm'] }, () => {
  let release: Release;
  let work: string;
  let prefix: string;
  let mcoBin: string;
  let cp: ControlPlane;
  let kubeconfig: string;
  let registry: Server | undefined;
  let provider: ChildProcess | undefined;

  beforeAll(async () => {
    if (!released) throw new Error(`no ${RELEASE}/release.json (required under CI): npm test's prepare step builds it`);
    release = JSON.parse(readFileSync(join(RELEASE, 'release.json'), 'utf8')) as Release;
    work = mkdtempSync(join(tmpdir(), 'mco-release-user-'));
    const scoped = await scopedRegistry(release);
    registry = scoped.server;
    prefix = join(work, 'prefix');
    const mcoTarball = release.packages.find((p) => p.name === 'mco')!.tarball;
    await run(
      'npm',
      ['install', '-g', '--prefix', prefix, join(RELEASE, mcoTarball), `--@mco:registry=${scoped.url}`].concat([
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ]),
      work,
    );
    mcoBin = join(prefix, 'bin', 'mco');
    cp = await startControlPlane();
    const admin = cp.hub.adminKubeConfig();
    kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, admin.exportConfig(), { mode: 0o600 });
  }, 900_000);
  afterAll(async () => {
    provider?.kill('SIGTERM');
    registry?.close();
    await cp?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('mco, installed globally from its tarball, runs its demo with its own @mco/* dependencies', async () => {
    const installed = join(prefix, 'lib', 'node_modules', 'mco');
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version).toBe(release.version);
    expect(existsSync(join(installed, 'LICENSE'))).toBe(true);
    expect(existsSync(join(installed, 'README.md'))).toBe(true);
    // Not inlined: the runtime mco runs is the installed @mco/runtime package.
    expect(existsSync(join(installed, 'node_modules', '@mco', 'runtime', 'package.json'))).toBe(true);
    const out = await run(mcoBin, ['demo'], work);
    expect(out).toMatch(/stockout/i);
  });

  it('the packaged chart renders with the release version and installs (server-side dry run)', async () => {
    const helm = requireTool('helm');
    const chart = join(RELEASE, release.chart);
    const rendered = parseAllDocuments(await run(helm, ['template', 'mco', chart, '-n', 'mco-system'], work)).map(
      (d) => d.toJSON() as { kind?: string; spec?: { template?: { spec?: { containers?: { image?: string }[] } } } },
    );
    const deployment = rendered.find((d) => d?.kind === 'Deployment');
    expect(deployment?.spec?.template?.spec?.containers?.[0]?.image).toMatch(new RegExp(`:${release.version}$`));
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'mco-system' } } });
    const out = await run(
      helm,
      ['install', 'mco', chart, '-n', 'mco-system', '--dry-run=server', '--kubeconfig', kubeconfig],
      work,
    );
    expect(out).toContain('STATUS: pending-install');
  });

  it("runs the image's entrypoint from its build context with plain node", async () => {
    const context = join(work, 'image');
    cpSync(join(RELEASE, release.image), context, { recursive: true });
    const dockerfile = readFileSync(join(context, 'Dockerfile'), 'utf8');
    const install = /^RUN (npm install[^&\n]*)/m.exec(dockerfile)![1]!.trim().split(/\s+/);
    await run(install[0]!, [...install.slice(1), '--prefer-offline'], context);
    const entrypoint = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)![1]!) as string[];
    expect(entrypoint[0]).toBe('node');
    const script = entrypoint[1]!.replace(/^\/app\//, `${context}/`);
    expect(await run(process.execPath, [script, '--help'], context)).toContain('Usage: mco <command>');
  });

  it("a provider made from the template runs with the doc's own config under the installed mco", async () => {
    const project = join(work, 'provider');
    cpSync(join(REPO, 'templates', 'provider-template'), project, {
      recursive: true,
      filter: (src) => !/[/\\](node_modules|dist|reports)$/.test(src),
    });
    const providers = docProvidersFile();
    const entry = providers.providers[0]!;
    const manifestFile = join(project, 'package.json');
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { dependencies: Record<string, string> };
    // Its @mco/* dependencies from the release's tarballs (overrides: their own dependencies too).
    const tarball = (name: string) => `file:${join(RELEASE, release.packages.find((p) => p.name === name)!.tarball)}`;
    const mcoDeps = release.packages.filter((p) => p.name.startsWith('@mco/'));
    writeFileSync(
      manifestFile,
      JSON.stringify({
        ...manifest,
        name: entry.module,
        dependencies: Object.fromEntries(Object.keys(manifest.dependencies).map((name) => [name, tarball(name)])),
        overrides: Object.fromEntries(mcoDeps.map((p) => [p.name, tarball(p.name)])),
      }),
    );
    const source = join(project, 'src', 'index.ts');
    writeFileSync(
      source,
      readFileSync(source, 'utf8').replace(
        "export const name = 'my-inventory';",
        `export const name = '${entry.name}';`,
      ),
    );
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], project);
    await run('npm', ['run', 'build'], project);
    // The providers file beside the package, which resolves `module:` from its folder upwards.
    const root = join(work, 'deploy');
    cpSync(project, join(root, 'node_modules', entry.module), { recursive: true });
    writeFileSync(join(root, 'providers.yaml'), JSON.stringify(providers));

    const admin = cp.hub.adminKubeConfig();
    await cp.hub.installCrds([thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
    const namespace = String(entry.config.namespace);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    let log = '';
    provider = spawn(
      mcoBin,
      ['inventory', '--config', join(root, 'providers.yaml'), '--kubeconfig', kubeconfig, '--http-port', '0'],
      { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    provider.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    const api = admin.makeApiClient(CustomObjectsApi);
    const wanted = (entry.config.clusters as { name: string }[]).map((c) => c.name).sort();
    const deadline = Date.now() + 120_000;
    let names: string[] = [];
    while (Date.now() < deadline) {
      const list = (await api.listNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        namespace,
        plural: 'clusterprofiles',
      })) as { items: { metadata: { name: string } }[] };
      names = list.items.map((p) => p.metadata.name).sort();
      // Every write is logged: wait for the creations' lines too.
      const logged = wanted.every(
        (name) => log.includes(`${namespace}/${name}`) && log.includes('ClusterProfile created'),
      );
      if (names.length === wanted.length && logged) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(names, log).toEqual(wanted);
    expect(log).toContain('ClusterProfile created');
  });
});
