#!/usr/bin/env node
// `npm test`: prepares every external program the tests use (once, cached by
// version; see scripts/prepare-tools.mjs), then runs every package's tests
// through turbo, every test on Node.js 24 and the unit tests again on the oldest
// supported Node.js (tools/node), and prints one closing line ("N passed,
// N failed, N skipped") summed over all packages' vitest reports.
// Killing it kills what it started: see run() below.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { countReports, format } from './test-report.mjs';

const root = new URL('..', import.meta.url).pathname;
const workspaces = ['packages', 'apps'].flatMap((dir) =>
  existsSync(join(root, dir)) ? readdirSync(join(root, dir)).map((name) => join(root, dir, name)) : [],
);
for (const ws of workspaces) {
  for (const report of ['vitest.json', 'vitest-min.json', 'vitest-errors.json', 'vitest-min-errors.json'])
    rmSync(join(ws, 'reports', report), { force: true });
}

// Each child runs in a session of its own, which every process it starts
// (turbo puts each task in a process group of its own) stays in unless it
// leaves it: the testkit's servers do, and the testkit stops them when their
// test process dies. SIGINT, SIGTERM and SIGHUP to this process go to the
// whole session; once it has ended, this process exits with 128 + the signal's
// number. SIGKILL cannot be caught: a detached watchdog shell kills the
// session within about a second of this process dying.
const WATCHDOG = `
parent="$1"; child="$2"
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done
kill -0 "$parent" 2>/dev/null && exit 0
kill -s KILL -- "-$child" 2>/dev/null
for stat in /proc/[0-9]*/stat; do
  fields=$(cat "$stat" 2>/dev/null) || continue
  set -- \${fields##*) }
  [ "$4" = "$child" ] && pid=\${stat#/proc/} && kill -s KILL "\${pid%/stat}" 2>/dev/null
done
`;
let stopping;
const running = new Set();
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopping ??= signal;
    if (running.size === 0) process.exit(128 + constants.signals[signal]);
    for (const pid of running) signalSession(pid, signal);
  });
}

/** Runs a command with inherited output; resolves to its exit status (1 if it died by a signal or did not start). */
async function run(command, commandArgs, options) {
  const child = spawn(command, commandArgs, { ...options, stdio: 'inherit', detached: true });
  const watchdog = spawn('sh', ['-c', WATCHDOG, 'mco-test-watchdog', String(process.pid), String(child.pid)], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  running.add(child.pid);
  const status = await new Promise((resolve) => {
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });
  running.delete(child.pid);
  if (stopping) {
    // Every session this script started has had the signal: wait for all of them, not only this one.
    for (const pid of [child.pid, ...running]) await ended(pid);
    process.exit(128 + constants.signals[stopping]);
  }
  return status;
}

/** The processes of session `sid` (Linux's /proc; elsewhere none are found, and only the child's group is signalled). */
function sessionOf(sid) {
  if (!existsSync('/proc')) return [];
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop().split(' ');
        return Number(fields[3]) === sid;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

function signalSession(sid, signal) {
  for (const pid of [-sid, ...sessionOf(sid)]) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
}

/** Waits until session `sid` has no process left; SIGKILLs what is still there after 10 s. */
async function ended(sid) {
  for (const deadline = Date.now() + 10_000; sessionOf(sid).length > 0;) {
    if (Date.now() > deadline) signalSession(sid, 'SIGKILL');
    await sleep(100);
  }
}

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(0);
const prepareStart = Date.now();
const prepared = await run(process.execPath, [join(root, 'scripts', 'prepare-tools.mjs')], { cwd: root });
if (prepared !== 0) {
  console.log('\nprepare failed: no test was started\n0 passed, 1 failed, 0 skipped');
  process.exit(prepared);
}
const testStart = Date.now();

// The Node.js releases to test on (tools/node): every test on Node 24 LTS, the
// image's runtime; the unit tests on the oldest release `engines` allows.
const manifestFile = process.env.MCO_TOOLS_MANIFEST ?? join(root, 'node_modules', '.cache', 'mco-tools.json');
const nodeDir = existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')).node : undefined;
const passes = nodeDir
  ? [
      { bin: join(nodeDir, '24', 'bin'), covers: 'every test', env: {}, report: 'reports/vitest.json' },
      {
        bin: join(nodeDir, 'min', 'bin'),
        covers: 'unit tests only; the integration suites ran on Node.js 24',
        env: { MCO_UNIT_ONLY: '1' },
        report: 'reports/vitest-min.json',
      },
    ]
  : [{ bin: undefined, covers: "every test, on this machine's Node.js only", env: {}, report: 'reports/vitest.json' }];

// Two packages at a time: the integration suites mostly wait on real servers
// (one measured file kept the 2 cores 19% busy), so two lanes took the Node.js
// 24 pass from 2,013 s to 1,274 s on 2 cores with every test passing
// (docs/testing.md). Within a package, integration files still run one at a time.
// Longest first: the packages with the most test files that start real servers
// (or a browser) start first, so the long ones (apps/mco, @mco/flux) run side by
// side from the start and the short ones fill the gaps. In turbo's own order
// @mco/flux once started late and ran its last 5 minutes alone.
const LANES = 2;
const SERVER_TEST = /(\.integration|\.int|\.browser)\.test\.ts$|(^|\/)integration\//;
const packages = workspaces
  .filter((ws) => existsSync(join(ws, 'package.json')))
  .map((ws) => ({ ws, manifest: JSON.parse(readFileSync(join(ws, 'package.json'), 'utf8')) }))
  .filter(({ manifest }) => manifest.scripts?.test)
  .map(({ ws, manifest }) => ({
    name: manifest.name,
    weight: ['test', 'src']
      .filter((dir) => existsSync(join(ws, dir)))
      .flatMap((dir) => readdirSync(join(ws, dir), { recursive: true }).map((file) => `${dir}/${file}`))
      .filter((file) => SERVER_TEST.test(file)).length,
  }))
  .sort((a, b) => b.weight - a.weight || a.name.localeCompare(b.name))
  .map((p) => p.name);

/** One pass: every package's tests through turbo, `LANES` at a time; resolves to the first non-zero exit status. */
async function testPass(env) {
  const extra = process.argv.slice(2); // e.g. `npm test -- --filter=@mco/core`: turbo's own scheduling
  if (extra.length)
    return run('npx', ['turbo', 'run', 'test', '--continue', `--concurrency=${LANES}`, ...extra], { cwd: root, env });
  const queue = [...packages];
  let status = 0;
  const lane = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const s = await run('npx', ['turbo', 'run', 'test', '--continue', `--filter=${name}`], { cwd: root, env });
      if (s !== 0 && status === 0) status = s;
    }
  };
  await Promise.all(Array.from({ length: LANES }, lane));
  return status;
}

const summaries = [];
let code = 0;
for (const pass of passes) {
  const env = { ...process.env, ...pass.env, MCO_VITEST_REPORT: pass.report };
  // Every process the tests start (npm, vitest, the CLI under test) finds this node first.
  if (pass.bin) env.PATH = `${pass.bin}${delimiter}${env.PATH ?? ''}`;
  const version = spawnSync('node', ['--version'], { env, encoding: 'utf8' }).stdout.trim();
  console.log(`\ntests on Node.js ${version}: ${pass.covers}\n`);
  const started = Date.now();
  const status = await testPass(env);
  const totals = countReports(workspaces, pass.report, root);
  if (status !== 0 && totals.failed === 0) totals.failed = 1; // a crash outside any test still fails
  if (status !== 0) code = status;
  summaries.push({
    ...totals,
    line: `Node.js ${version} (${pass.covers}): ${format(totals)} in ${seconds(started)} s`,
  });
}

console.log(`\nwall time: prepare ${((testStart - prepareStart) / 1000).toFixed(0)} s, tests ${seconds(testStart)} s`);
for (const summary of summaries) {
  console.log(summary.line);
  for (const failure of summary.failures) console.log(failure);
}
// The closing line: skips of the unit pass are by design, so only the first pass's skips count.
console.log(
  `\n${format({
    passed: summaries.reduce((n, s) => n + s.passed, 0),
    failed: summaries.reduce((n, s) => n + s.failed, 0),
    skipped: summaries[0].skipped,
  })}`,
);
process.exit(code);
