#!/usr/bin/env bash
# Build (or locate) Flux's source-controller, for the tests that run the Flux
# walk-through end to end: it fetches a GitRepository from the test's local git
# HTTP server (@mco/testkit's startGitServer) and serves the artifact that
# kustomize-controller (tools/flux) applies. Built from the Go module proxy
# through the wrapper module beside this script (go.mod pins the version as a
# `tool`, paired with kustomize-controller's source API).
#
# Prints ONE line on stdout: a directory holding
#   source-controller   the executable
#   crds/               source-controller's CRDs of the same module version
# Logs go to stderr, and only when it builds.
#
#   1. If MCO_FLUX_SOURCE_CONTROLLER_DIR is set, print it and stop.
#   2. Otherwise build into ${MCO_FLUX_CACHE:-$HOME/.cache/mco-flux}/source-controller-<version>/
#      once (the version is the cache key); a flock makes concurrent runs wait,
#      and the executable is renamed into place last, so an interrupted build
#      is never taken for a finished one.
#
# Cold build: 15 minutes on 2 cores under load (docs/testing.md).
set -euo pipefail

tool=flux-source-controller-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mod="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/fluxcd/source-controller

if [[ -n "${MCO_FLUX_SOURCE_CONTROLLER_DIR:-}" ]]; then
  [[ -x "$MCO_FLUX_SOURCE_CONTROLLER_DIR/source-controller" ]] ||
    die "MCO_FLUX_SOURCE_CONTROLLER_DIR=$MCO_FLUX_SOURCE_CONTROLLER_DIR has no source-controller"
  printf '%s\n' "$MCO_FLUX_SOURCE_CONTROLLER_DIR"
  exit 0
fi

version="$(go_mod_version "$module" "$mod/go.mod")"

out="${MCO_FLUX_CACHE:-$HOME/.cache/mco-flux}/source-controller-$version"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [[ -x "$out/source-controller" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "source-controller" MCO_FLUX_SOURCE_CONTROLLER_DIR

lock "$out/.lock"
if [[ ! -x "$out/source-controller" ]]; then
  log "building source-controller $version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly
  src="$(cd "$mod" && "$go_cmd" mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
  [[ -d "$src" ]] || die "cannot download $module@$version"
  rm -rf "$out/crds" && mkdir -p "$out/crds"
  cp "$src"/config/crd/bases/*.yaml "$out/crds/"
  chmod u+w "$out"/crds/*.yaml
  tmp="$out/.source-controller.tmp.$$"
  (cd "$mod" && CGO_ENABLED=0 "$go_cmd" build -trimpath -ldflags="-s -w" -o "$tmp" "$module") ||
    { rm -f "$tmp"; die "go build of source-controller $version failed"; }
  "$tmp" --help >/dev/null 2>&1 || { rm -f "$tmp"; die "the built source-controller does not run"; }
  mv "$tmp" "$out/source-controller"
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
