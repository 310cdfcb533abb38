#!/usr/bin/env node
// `npm run release -- [--dry-run] [--out <dir>]`: every artefact of a release,
// built from the committed HEAD in a temporary git worktree (this checkout is
// never touched, so `git status` stays clean), into one folder:
//
//   <out>/npm/*.tgz           every publishable workspace, `mco` included (npm pack)
//   <out>/cli/mco-<v>.tgz     `mco` with everything it runs bundled: `npm install -g` of
//                             this one file works before (or without) the npm registry
//   <out>/chart/mco-<v>.tgz   the Helm chart, version and appVersion = mco's version
//   <out>/image/              the image build context: Dockerfile, package.json,
//                             package-lock.json (every dependency pinned), npm/*.tgz
//   <out>/provider-template/  templates/provider-template, its @mco/* ranges = this release
//   <out>/changelogs/<dir>/CHANGELOG.md   per package, as `changeset version` wrote it
//   <out>/version-commit.patch  the commit the release pushes (versions, changelogs,
//                             lockfile, template ranges): `git am` it on the commit it names
//   <out>/release.json        versions and file names
//   <out>/SHA256SUMS          `sha256sum -c SHA256SUMS` checks every file above
//
// Versions come from `changeset version` (the pending .changeset/*.md files),
// run in the temporary worktree and committed there. Nothing is published or
// pushed: the publish workflow (.github/workflows/release.yml) runs this, then
// publishes each tarball with `npm publish --provenance`, pushes the image
// and the chart, and pushes the version commit. --dry-run also runs
// `npm publish --dry-run` on every tarball, which shows what npm would upload.
// See docs/packaging.md.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const repo = resolve(new URL('..', import.meta.url).pathname);
const { values } = parseArgs({
  options: { 'dry-run': { type: 'boolean', default: false }, out: { type: 'string', default: join(repo, 'release') } },
  strict: true,
});
const out = resolve(values.out);

function run(command, args, cwd, options = {}) {
  console.error(`release: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status ?? result.signal}`);
  return result.stdout;
}

/**
 * helm: $HELM, else the one scripts/prepare-tools.mjs built (node_modules/.cache/mco-tools.json),
 * else tools/helm/build.sh (helm on PATH, or built once from the Go module proxy and cached).
 */
function helm() {
  if (process.env.HELM) return process.env.HELM;
  const manifest = join(repo, 'node_modules', '.cache', 'mco-tools.json');
  const prepared = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).helm : undefined;
  if (prepared && existsSync(prepared)) return prepared;
  return run('bash', [join(repo, 'tools', 'helm', 'build.sh')], repo).trim();
}

/** The publishable workspaces (package.json without "private": true), as packages/consumer-test finds them. */
function publishable(root) {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces.flatMap((glob) => {
    const parent = glob.replace(/\/\*$/, '');
    return readdirSync(join(root, parent))
      .sort()
      .map((name) => join(parent, name))
      .filter((dir) => existsSync(join(root, dir, 'package.json')))
      .filter((dir) => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')).private !== true);
  });
}

/** Dependencies before their dependents, so they can be published in this order. */
function dependencyOrder(root, dirs) {
  const manifests = new Map(
    dirs.map((dir) => [dir, JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))]),
  );
  const dirOf = new Map([...manifests].map(([dir, m]) => [m.name, dir]));
  const ordered = [];
  const visit = (dir) => {
    if (ordered.includes(dir)) return;
    for (const dep of Object.keys(manifests.get(dir).dependencies ?? {})) if (dirOf.has(dep)) visit(dirOf.get(dep));
    ordered.push(dir);
  };
  dirs.forEach(visit);
  return ordered;
}

function manifestOf(root, dir) {
  return JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
}

const TEMPLATE = join('templates', 'provider-template');

/** The template's @mco/* ranges become `^<released version>`, so a provider made from it installs this release. */
function followRelease(manifestFile, versions) {
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  for (const field of ['dependencies', 'peerDependencies', 'devDependencies']) {
    for (const name of Object.keys(manifest[field] ?? {})) {
      if (versions.has(name)) manifest[field][name] = `^${versions.get(name)}`;
    }
  }
  writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
}

/**
 * `mco` with everything it runs inside (`bundleDependencies: true`), for
 * `npm install -g <file>`: one tree, installed here with npm's dedupe (one
 * copy of zod and of every other package), that npm only unpacks. A global
 * install of every tarball instead gives each package its own tree (a zod per
 * package, and @mco/kube-runtime beside mco rather than under it); and npm
 * expects the dependencies of bundled packages to be bundled too.
 */
function standaloneCli(packages, dir, tarball) {
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'package');
  mkdirSync(root, { recursive: true });
  const mco = packages.find((p) => p.name === 'mco');
  run('tar', ['-xzf', join(out, mco.tarball), '-C', root, '--strip-components=1'], dir);
  const manifest = manifestOf(root, '.');
  const optional = manifest.peerDependenciesMeta ?? {};
  const peers = Object.entries(manifest.peerDependencies ?? {}).filter(([name]) => !optional[name]?.optional);
  const dependencies = { ...Object.fromEntries(peers), ...manifest.dependencies };
  // Installed from the release's tarballs: mco's @mco/* dependencies (overrides: theirs on each other too).
  const local = Object.fromEntries(
    packages.filter((p) => p.name !== 'mco').map((p) => [p.name, `file:${join(out, p.tarball)}`]),
  );
  const fromTarballs = Object.fromEntries(Object.keys(dependencies).flatMap((n) => (local[n] ? [[n, local[n]]] : [])));
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({
      name: 'mco-cli',
      private: true,
      dependencies: { ...dependencies, ...fromTarballs },
      overrides: local,
    }),
  );
  const install = ['install', '--omit=dev', '--ignore-scripts', '--no-package-lock', '--prefer-offline'];
  run('npm', [...install, '--no-audit', '--no-fund'], root);
  delete manifest.peerDependencies;
  delete manifest.peerDependenciesMeta;
  manifest.dependencies = Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b)));
  manifest.bundleDependencies = true;
  writeFileSync(join(root, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  mkdirSync(dirname(tarball), { recursive: true });
  // tar, not `npm pack`: npm pack leaves out what the bundled packages take as peers (zod, client-node...).
  rmSync(join(root, 'node_modules', '.package-lock.json'), { force: true });
  run('tar', ['--owner=0', '--group=0', '--numeric-owner', '-czf', tarball, 'package'], dir);
}

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** The image's entrypoint: where `npm ci` in /app puts mco (the chart's `controller.nodeFlags` command names it too). */
const IMAGE_MCO = '/app/node_modules/mco/bin/mco.js';

const IMAGE_DOCKERFILE = (version) => `# syntax=docker/dockerfile:1
# The mco ${version} image, built from the release's npm tarballs (npm/), every
# dependency pinned by package-lock.json:
#   docker build -t mco:${version} .
# \`mco controller\` by default; every other \`mco\` subcommand works as well.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
FROM \${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY npm/ npm/
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
# The chart runs it as 65532 with a read-only root file system.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "${IMAGE_MCO}"]
CMD ["controller"]
`;

const work = mkdtempSync(join(tmpdir(), 'mco-release-'));
const tree = join(work, 'tree');
try {
  run('git', ['worktree', 'add', '--detach', tree, 'HEAD'], repo);
  // --ignore-scripts: the root `prepare` builds the repository's own bundle, not the published one.
  run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], tree);
  run('npx', ['--no-install', 'changeset', 'version'], tree);
  const dirs = dependencyOrder(tree, publishable(tree));
  const versions = new Map(dirs.map((dir) => [manifestOf(tree, dir).name, manifestOf(tree, dir).version]));
  followRelease(join(tree, TEMPLATE, 'package.json'), versions);
  // The lockfile records the workspaces' versions and ranges: `npm ci` on the version commit needs them.
  run(
    'npm',
    ['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
    tree,
  );
  run(process.execPath, [join(tree, 'scripts', 'complete-lockfile.mjs')], tree);
  run('git', ['add', '-A'], tree);
  const identity = ['-c', 'user.name=mco release', '-c', 'user.email=release@mco-project.invalid'];
  run('git', [...identity, 'commit', '--quiet', '--allow-empty', '-m', `release: ${versions.get('mco')}`], tree);
  const versionCommit = run('git', ['format-patch', '-1', '--stdout', '--base=HEAD~1', 'HEAD'], tree);
  // turbo builds in dependency order; the published mco keeps @mco/* external (apps/mco/tsup.config.ts).
  run('npx', ['--no-install', 'turbo', 'run', 'build', ...dirs.flatMap((d) => ['--filter', `./${d}`])], tree, {
    stdio: ['ignore', 'ignore', 'inherit'],
  });

  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'npm'), { recursive: true });
  writeFileSync(join(out, 'version-commit.patch'), versionCommit);
  const changelogs = dirs
    .filter((dir) => existsSync(join(tree, dir, 'CHANGELOG.md')))
    .map((dir) => {
      mkdirSync(join(out, 'changelogs', dir), { recursive: true });
      cpSync(join(tree, dir, 'CHANGELOG.md'), join(out, 'changelogs', dir, 'CHANGELOG.md'));
      return `changelogs/${dir}/CHANGELOG.md`;
    });
  cpSync(join(tree, TEMPLATE), join(out, 'provider-template'), {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|dist|reports)$/.test(src),
  });
  const report = JSON.parse(
    run(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', join(out, 'npm'), ...dirs.flatMap((d) => ['-w', d])],
      tree,
    ),
  );
  if (report.length !== dirs.length) throw new Error(`packed ${report.length} of ${dirs.length} workspaces`);
  // npm reports in its own order: list them in dependency order.
  const packed = new Map(report.map((p) => [p.name, p]));
  const packages = dirs.map((dir) => {
    const p = packed.get(JSON.parse(readFileSync(join(tree, dir, 'package.json'), 'utf8')).name);
    return { name: p.name, version: p.version, tarball: `npm/${p.filename}`, dir };
  });
  const version = packages.find((p) => p.name === 'mco').version;
  const cli = `cli/mco-${version}.tgz`;
  standaloneCli(packages, join(work, 'cli'), join(out, cli));

  const chart = join(work, 'chart');
  cpSync(join(tree, 'apps', 'mco', 'chart'), chart, { recursive: true, filter: (src) => !src.endsWith('/hack') });
  run(
    helm(),
    ['package', chart, '--version', version, '--app-version', version, '--destination', join(out, 'chart')],
    tree,
  );

  const image = join(out, 'image');
  mkdirSync(join(image, 'npm'), { recursive: true });
  for (const p of packages) cpSync(join(out, p.tarball), join(image, p.tarball));
  writeFileSync(join(image, 'Dockerfile'), IMAGE_DOCKERFILE(version));
  writeFileSync(
    join(image, 'package.json'),
    `${JSON.stringify(
      {
        name: 'mco-image',
        private: true,
        // Every @mco/* package from its tarball here (the overrides point mco's
        // dependencies at them), never from the registry.
        dependencies: Object.fromEntries(packages.map((p) => [p.name, `file:${p.tarball}`])),
        overrides: Object.fromEntries(packages.map((p) => [p.name, `$${p.name}`])),
      },
      null,
      2,
    )}\n`,
  );
  // The lockfile pins every third-party dependency (and SHA256SUMS covers it): `npm ci` in the Dockerfile.
  run(
    'npm',
    ['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
    image,
  );

  writeFileSync(
    join(out, 'release.json'),
    `${JSON.stringify(
      {
        version,
        packages,
        cli,
        chart: `chart/mco-${version}.tgz`,
        image: 'image',
        imageEntrypoint: IMAGE_MCO,
        providerTemplate: 'provider-template',
        changelogs,
        versionCommit: 'version-commit.patch',
      },
      null,
      2,
    )}\n`,
  );
  const sums = files(out)
    .map((file) => relative(out, file))
    .filter((file) => file !== 'SHA256SUMS')
    .sort()
    .map(
      (file) =>
        `${createHash('sha256')
          .update(readFileSync(join(out, file)))
          .digest('hex')}  ${file}\n`,
    );
  writeFileSync(join(out, 'SHA256SUMS'), sums.join(''));

  if (values['dry-run']) {
    for (const p of packages) run('npm', ['publish', '--dry-run', '--ignore-scripts', join(out, p.tarball)], out);
  }
  console.log(`release ${version}: ${packages.length} npm packages, chart, image context -> ${out}`);
} finally {
  spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: repo, stdio: 'inherit' });
  rmSync(work, { recursive: true, force: true });
}
