#!/usr/bin/env bash
# Build (or locate) Argo CD for the end-to-end tests of @mco/argocd: the real
# argocd-applicationset-controller and the Argo CD CRDs of the same version.
# Argo CD ships one multi-call binary that picks its role from the name it is
# run under, so the wrapper module beside this script (go.mod pins
# github.com/argoproj/argo-cd/v3 as a `tool`, with Argo CD's replace block)
# builds `argocd` and the cache holds a symlink named after the controller.
#
# Prints ONE line on stdout: a directory holding
#   argocd-applicationset-controller   (symlink to the multi-call binary)
#   crds/                              (manifests/crds of the same module version:
#                                       Application, ApplicationSet, AppProject)
# Logs go to stderr, only when it builds.
#
# Builds once into ${MCO_ARGOCD_CACHE:-$HOME/.cache/mco-argocd}/<version>/; a
# flock makes concurrent runs wait, and the directory is assembled under a temp
# name and renamed into place, so an interrupted build is never cached.
# Cold build: 9 minutes on a quiet 2-core machine, 39 minutes (2,338 s) under load (docs/testing.md).
set -euo pipefail

tool=argocd-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/argoproj/argo-cd/v3

version="$(go_mod_version "$module" "$here/go.mod")"

cache="${MCO_ARGOCD_CACHE:-$HOME/.cache/mco-argocd}"
out="$cache/$version"
if [[ -x "$out/argocd-applicationset-controller" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "Argo CD"

lock "$cache/.lock-$version"
if [[ ! -x "$out/argocd-applicationset-controller" ]]; then
  log "building Argo CD $version into $out (first run only)"
  start=$SECONDS
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/crds"
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off "$go_cmd" build -mod=readonly -trimpath \
    -ldflags="-s -w -X $module/common.version=${version#v}" \
    -o "$tmp/argocd" "$module/cmd") || { rm -rf "$tmp"; die "go build of Argo CD $version failed"; }
  src="$(cd "$here" && GOWORK=off "$go_cmd" list -m -f '{{.Dir}}' "$module")"
  cp "$src"/manifests/crds/*-crd.yaml "$tmp/crds/" || { rm -rf "$tmp"; die "no CRDs in $src/manifests/crds"; }
  chmod u+w "$tmp"/crds/*.yaml
  ln -s argocd "$tmp/argocd-applicationset-controller"
  "$tmp/argocd-applicationset-controller" --help >/dev/null || { rm -rf "$tmp"; die "the built controller does not run"; }
  rm -rf "$out"
  mv "$tmp" "$out"
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
