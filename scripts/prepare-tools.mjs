#!/usr/bin/env node
// Prepares every external program the tests use (kube-apiserver and etcd,
// helm, Go helper programs, delivery engines), once, before any test starts:
// runs each tools/<name>/build.sh (a cached build is instant and silent) and
// records the paths in a manifest that @mco/testkit's preparedTool() reads;
// then builds the mco bundle from the current sources. Tests never build.
// Outside CI a tool that cannot be built (no Go) is reported in one line and
// its tests skip; under CI=true that is an error.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const MANIFEST = process.env.MCO_TOOLS_MANIFEST ?? join(root, 'node_modules', '.cache', 'mco-tools.json');
const inCi = process.env.CI === 'true' || process.env.CI === '1';

function run(name, script) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('bash', [script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      // Anything on stderr means a build is under way: show its progress live.
      if (!err) console.log(`prepare: building ${name} (first run only; cached afterwards)`);
      err += chunk;
      process.stderr.write(chunk);
    });
    child.on('error', (error) => resolve({ name, ok: false, why: error.message }));
    child.on('close', (code) => {
      const seconds = (Date.now() - started) / 1000;
      const path = out.trim().split('\n').pop() ?? '';
      if (code === 0 && path && existsSync(path)) resolve({ name, ok: true, path, built: err !== '', seconds });
      else resolve({ name, ok: false, why: lastLine(err) || `exit ${code}` });
    });
  });
}

function lastLine(text) {
  return text.trim().split('\n').pop() ?? '';
}

const tools = readdirSync(join(root, 'tools'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, 'tools', entry.name, 'build.sh')))
  .map((entry) => entry.name)
  .sort();

const started = Date.now();
const results = [];
for (const name of tools) results.push(await run(name, join(root, 'tools', name, 'build.sh')));

const manifest = Object.fromEntries(results.filter((r) => r.ok).map((r) => [r.name, r.path]));
mkdirSync(dirname(MANIFEST), { recursive: true });
writeFileSync(`${MANIFEST}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
renameSync(`${MANIFEST}.tmp`, MANIFEST);

const built = results.filter((r) => r.ok && r.built);
const failed = results.filter((r) => !r.ok);
const total = ((Date.now() - started) / 1000).toFixed(1);
if (built.length === 0 && failed.length === 0) {
  console.log(`prepare: nothing to build; ${tools.length} tools cached (${tools.join(', ')}), checked in ${total} s`);
} else {
  for (const r of built) console.log(`prepare: built ${r.name} in ${r.seconds.toFixed(0)} s -> ${r.path}`);
  for (const r of failed) {
    console.log(
      `prepare: ${r.name} is unavailable (${r.why}); ${inCi ? 'required under CI' : 'tests that need it skip'}`,
    );
  }
  console.log(`prepare: done in ${total} s`);
}

// The `mco` bundle (apps/mco/dist), which the tests of the built artefact run
// as users do (`node apps/mco/bin/mco.js ...`): rebuilt from the current
// sources here, so no test builds it and none rebuilds it under another's feet.
const bundleStart = Date.now();
const bundle = spawnSync('npx', ['--no-install', 'tsup'], {
  cwd: join(root, 'apps', 'mco'),
  encoding: 'utf8',
  env: { ...process.env, MCO_BUNDLE_WORKSPACE: '1' }, // @mco/* inlined from their sources (apps/mco/tsup.config.ts)
});
if (bundle.status !== 0) {
  process.stderr.write(`${bundle.stdout ?? ''}${bundle.stderr ?? ''}`);
  console.log('prepare: building the mco bundle (apps/mco/dist) failed');
  process.exit(1);
}
console.log(`prepare: built the mco bundle (apps/mco/dist) in ${((Date.now() - bundleStart) / 1000).toFixed(1)} s`);

// The release artefacts (scripts/release.mjs) that the release consumer test
// installs outside the repository: built from the committed HEAD into
// node_modules/.cache/mco-release, again only when HEAD has moved.
const RELEASE_DIR = join(root, 'node_modules', '.cache', 'mco-release');
const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout?.trim();
const stamp = join(RELEASE_DIR, '.head');
let releaseFailed = false;
if (head && !(existsSync(stamp) && readFileSync(stamp, 'utf8') === head)) {
  const releaseStart = Date.now();
  console.log(
    'prepare: building the release artefacts from HEAD (once per commit; on 2 cores 3 minutes idle, 13 under load, 35 at load average 40-47)',
  );
  const release = spawnSync(process.execPath, [join(root, 'scripts', 'release.mjs'), '--out', RELEASE_DIR], {
    cwd: root,
    encoding: 'utf8',
  });
  if (release.status === 0) {
    writeFileSync(stamp, head);
    console.log(
      `prepare: built the release artefacts in ${((Date.now() - releaseStart) / 1000).toFixed(0)} s -> ${RELEASE_DIR}`,
    );
  } else {
    releaseFailed = true;
    process.stderr.write(`${release.stdout ?? ''}${release.stderr ?? ''}`);
    console.log(
      `prepare: building the release artefacts failed; ${inCi ? 'required under CI' : 'the release test skips'}`,
    );
  }
}

if (inCi && (failed.length > 0 || releaseFailed)) process.exit(1);
