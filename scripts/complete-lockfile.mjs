#!/usr/bin/env node
// Adds lockfile entries for optional platform packages (rollup, turbo, ...) that
// the registry mirror of these machines does not serve at the locked version:
// npm then leaves them out of package-lock.json and `npm ci` refuses the lock
// ("Missing: @rollup/rollup-android-arm-eabi@ from lock file"). Run it after
// any `npm install` that changes package-lock.json.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const pkgs = lock.packages;
let added = 0;
for (const [path, entry] of Object.entries(pkgs)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (pkgs[nested] || pkgs[hoisted]) continue;
    const meta = JSON.parse(
      execFileSync('npm', ['view', name, 'os', 'cpu', 'libc', 'license', '--json'], { encoding: 'utf8' }) || '{}',
    );
    pkgs[hoisted] = {
      version: spec,
      ...(meta.cpu ? { cpu: meta.cpu } : {}),
      ...(entry.dev ? { dev: true } : {}),
      ...(meta.libc ? { libc: meta.libc } : {}),
      ...(meta.license ? { license: meta.license } : {}),
      optional: true,
      ...(meta.os ? { os: meta.os } : {}),
    };
    added++;
    console.log('added', hoisted, spec, JSON.stringify(meta));
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`${added} entries added`);
