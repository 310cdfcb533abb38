#!/usr/bin/env bash
# Build (or locate) Flux's kustomize-controller and the CRDs it needs, for the
# @mco/flux end-to-end tests. Built from the Go module proxy through the
# wrapper module in ./kustomize-controller (go.mod pins the version as a `tool`).
#
# Prints ONE line on stdout: a directory holding
#   kustomize-controller   the executable
#   crds/                  its Kustomization CRD and source-controller's source
#                          CRDs (GitRepository, OCIRepository, Bucket,
#                          ExternalArtifact, ...), from the same module versions
#                          the binary is built from, so they never drift apart
# Logs go to stderr, and only when it builds.
#
#   1. If MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR is set, print it and stop.
#   2. Otherwise build into ${MCO_FLUX_CACHE:-$HOME/.cache/mco-flux}/kustomize-controller-<version>/
#      once; a flock makes concurrent runs wait, and the executable is renamed
#      into place last, so an interrupted build is never taken for a finished one.
#
# Cold build: 7 minutes on a quiet 2-core machine, 34 minutes (2,042 s) under load (docs/testing.md).
set -euo pipefail

tool=flux-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/kustomize-controller"

if [[ -n "${MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR:-}" ]]; then
  [[ -x "$MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR/kustomize-controller" ]] ||
    die "MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR=$MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR has no kustomize-controller"
  printf '%s\n' "$MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR"
  exit 0
fi

version="$(go_mod_version github.com/fluxcd/kustomize-controller "$mod/go.mod")"
source_version="$(go_mod_version github.com/fluxcd/source-controller/api "$mod/go.mod")"

out="${MCO_FLUX_CACHE:-$HOME/.cache/mco-flux}/kustomize-controller-$version"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [[ -x "$out/kustomize-controller" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "kustomize-controller" MCO_FLUX_KUSTOMIZE_CONTROLLER_DIR

lock "$out/.lock"
if [[ ! -x "$out/kustomize-controller" ]]; then
  log "building kustomize-controller $version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly
  moddir() { (cd "$mod" && "$go_cmd" mod download -json "$1") | awk -F'"' '$2 == "Dir" { print $4 }'; }
  kc_dir="$(moddir "github.com/fluxcd/kustomize-controller@$version")"
  sc_dir="$(moddir "github.com/fluxcd/source-controller@$source_version")"
  [[ -d "$kc_dir" && -d "$sc_dir" ]] || die "cannot download the kustomize-controller/source-controller modules"
  rm -rf "$out/crds" && mkdir -p "$out/crds"
  cp "$kc_dir"/config/crd/bases/*.yaml "$sc_dir"/config/crd/bases/*.yaml "$out/crds/"
  tmp="$out/.kustomize-controller.tmp.$$"
  (cd "$mod" && CGO_ENABLED=0 "$go_cmd" build -trimpath -ldflags="-s -w" -o "$tmp" github.com/fluxcd/kustomize-controller) ||
    { rm -f "$tmp"; die "go build of kustomize-controller $version failed"; }
  "$tmp" --help >/dev/null 2>&1 || { rm -f "$tmp"; die "the built kustomize-controller does not run"; }
  mv "$tmp" "$out/kustomize-controller"
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
