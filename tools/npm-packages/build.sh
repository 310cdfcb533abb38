#!/usr/bin/env bash
# Pack every publishable workspace (each package.json without "private": true)
# into a tarball, as `npm publish` would: build it (turbo, cached by its
# inputs), then `npm pack`. The packages' `prepack` script runs the same build
# on a real publish; here turbo builds them in dependency order instead, and
# `npm pack --ignore-scripts` keeps the build's output out of the JSON report.
# The consumer test (packages/consumer-test) installs these tarballs into a
# scratch project outside the repository; it never builds.
#
# Prints ONE line on stdout: the directory holding the tarballs and
# packages.json ([{name, version, tarball, dir}], one entry per package).
# Logs go to stderr, and only when something is packed.
#
# The cache directory is keyed by a hash of everything a tarball is made from:
# the workspaces' files outside node_modules, dist, test and bench; apps/mco's
# sources, build config and bin, and examples/providers (bundled into mco);
# the shared tsconfig and LICENSE. Not the lockfile: it changes with every new
# private workspace, while a changed dependency shows in a package.json.
#   ${MCO_NPM_PACKAGES_CACHE:-$HOME/.cache/mco-npm-packages}/<hash>/
# A flock makes concurrent runs wait; a temp directory renamed into place
# means an interrupted pack is never cached. Directories unused for a week
# are removed.
set -euo pipefail

tool=npm-packages
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

# Workspace folders from the root package.json's "workspaces" globs (dir/*).
mapfile -t publishable < <(node -e '
  const { existsSync, readFileSync, readdirSync } = require("node:fs");
  const { join } = require("node:path");
  for (const glob of require("./package.json").workspaces) {
    const parent = glob.replace(/\/\*$/, "");
    for (const name of readdirSync(parent).sort()) {
      const manifest = join(parent, name, "package.json");
      if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).private !== true) console.log(join(parent, name));
    }
  }')
[[ ${#publishable[@]} -gt 0 ]] || die "no publishable workspace found"

# apps/mco is built too (not packed: it is private): the consumer test runs
# the provider template under its `mco inventory`.
key="$( (find "${publishable[@]}" apps/mco/src apps/mco/bin examples/providers \( -name node_modules -o -name dist -o -name test -o -name bench -o -name reports -o -name .turbo \) -prune -o -type f -print; \
  printf '%s\n' apps/mco/package.json apps/mco/tsup.config.ts tsconfig.base.json LICENSE) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
root="${MCO_NPM_PACKAGES_CACHE:-$HOME/.cache/mco-npm-packages}"
out="$root/$key"
if [[ -f "$out/packages.json" ]]; then
  touch "$out"
  printf '%s\n' "$out"
  exit 0
fi

lock "$root/.lock"
if [[ ! -f "$out/packages.json" ]]; then
  start=$SECONDS
  tmp="$root/.pack.$$"
  trap 'rm -rf "$tmp"' EXIT
  rm -rf "$tmp"
  mkdir -p "$tmp"
  workspaces=()
  filters=()
  for dir in "${publishable[@]}"; do
    workspaces+=(--workspace "$dir")
    filters+=(--filter "./$dir")
  done
  filters+=(--filter ./apps/mco)
  log "building and packing ${publishable[*]}"
  npx --no-install turbo run build "${filters[@]}" --output-logs=errors-only >&2 || die "build failed"
  npm pack --ignore-scripts --json --pack-destination "$tmp" "${workspaces[@]}" >"$tmp/pack.json" \
    2> >(grep -v -e '^npm notice' -e '^npm warn Unknown user config' >&2) || die "npm pack failed"
  node -e '
    const { readFileSync, writeFileSync } = require("node:fs");
    const [tmp, ...dirs] = process.argv.slice(1);
    const packed = JSON.parse(readFileSync(`${tmp}/pack.json`, "utf8"));
    if (packed.length !== dirs.length) throw new Error(`packed ${packed.length} of ${dirs.length} workspaces`);
    const list = packed.map((p, i) => ({ name: p.name, version: p.version, tarball: p.filename, dir: dirs[i] }));
    writeFileSync(`${tmp}/packages.json`, JSON.stringify(list, null, 2) + "\n");
  ' "$tmp" "${publishable[@]}" || die "cannot read npm pack's report"
  rm -f "$tmp/pack.json"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  find "$root" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -mtime +7 -exec rm -rf {} +
  log "packed ${#publishable[@]} packages in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
