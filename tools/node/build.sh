#!/usr/bin/env bash
# Install (or locate) the Node.js releases the tests run on: the current LTS
# (24, the image's runtime: every test runs on it) and the oldest supported
# release (the `engines` minimum: the unit tests run on it too). Both come from
# the npm registry as ordinary packages (node-linux-<arch>@<version>), so no
# other download is needed.
#
# Prints ONE line on stdout: a directory holding
#   24/bin/node    Node.js 24 LTS
#   min/bin/node   the oldest supported Node.js
# Logs go to stderr, only when it installs.
#
# Installs once into ${MCO_NODE_CACHE:-$HOME/.cache/mco-node}/<versions>/; a
# flock makes concurrent runs wait, and the directory is assembled under a temp
# name and renamed into place, so an interrupted install is never cached.
set -euo pipefail

CURRENT=24.21.0
MINIMUM=22.19.0

tool=node
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  *) die "no Node.js package for $(uname -s)-$(uname -m)" ;;
esac

cache="${MCO_NODE_CACHE:-$HOME/.cache/mco-node}"
out="$cache/$CURRENT-$MINIMUM-$platform"
if [[ -x "$out/24/bin/node" && -x "$out/min/bin/node" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

command -v npm >/dev/null || die "npm is needed to fetch Node.js from the npm registry"
lock "$cache/.lock"
if [[ ! -x "$out/24/bin/node" || ! -x "$out/min/bin/node" ]]; then
  start=$SECONDS
  tmp="$cache/.install.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  for pair in "24:$CURRENT" "min:$MINIMUM"; do
    name="${pair%%:*}" version="${pair#*:}"
    log "fetching node-$platform@$version from the npm registry (first run only)"
    # npm pack checks the tarball against the registry's integrity hash.
    tarball="$(cd "$tmp" && npm pack --silent --prefer-offline "node-$platform@$version" 2>/dev/null | tail -n 1)" \
      || { rm -rf "$tmp"; die "npm pack node-$platform@$version failed"; }
    mkdir -p "$tmp/$name"
    tar -xzf "$tmp/$tarball" -C "$tmp/$name" --strip-components=1 package/bin/node \
      || { rm -rf "$tmp"; die "no bin/node in $tarball"; }
    rm -f "$tmp/$tarball"
    [[ "$("$tmp/$name/bin/node" --version)" == "v$version" ]] || { rm -rf "$tmp"; die "node-$platform@$version does not run"; }
  done
  rm -rf "$out"
  mv "$tmp" "$out"
  log "installed Node.js $CURRENT and $MINIMUM in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
