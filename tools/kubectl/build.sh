#!/usr/bin/env bash
# Build (or locate) kubectl for the walk-through tests, which run the docs'
# `kubectl` commands as written (docs/testing.md). Built from the Go module
# proxy through the wrapper module beside this script, at the version of the
# test kube-apiserver (tools/k8s-testbin), so CI needs no kubectl package.
#
# Prints ONE line on stdout: the path of the kubectl executable. Logs go to stderr.
#
#   1. If MCO_KUBECTL is set and executable, print it and stop.
#   2. Otherwise build into ${MCO_KUBECTL_CACHE:-$HOME/.cache/mco-kubectl}/<version>/kubectl
#      (once; a flock makes concurrent runs wait, a temp file renamed into place
#      means an interrupted build is never cached).
#
# A kubectl on PATH is not used: its version is unknown (it may be far from the
# test apiserver's), and the walk-through tests must behave the same everywhere.
set -euo pipefail

tool=kubectl-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${MCO_KUBECTL:-}" ]]; then
  [[ -x "$MCO_KUBECTL" ]] || die "MCO_KUBECTL=$MCO_KUBECTL is not executable"
  printf '%s\n' "$MCO_KUBECTL"
  exit 0
fi

version="$(go_mod_version k8s.io/kubectl "$here/go.mod")"
out="${MCO_KUBECTL_CACHE:-$HOME/.cache/mco-kubectl}/$version"
mkdir -p "$out"
if [[ -x "$out/kubectl" ]]; then
  printf '%s\n' "$out/kubectl"
  exit 0
fi

require_go "kubectl" MCO_KUBECTL

lock "$out/.lock"
if [[ ! -x "$out/kubectl" ]]; then
  log "building kubectl $version into $out (first run only)"
  start=$SECONDS
  tmp="$out/.kubectl.tmp.$$"
  # k8s.io/kubectl's version package reads these, as kubernetes' own build sets them.
  minor="$(printf '%s' "$version" | cut -d. -f2)"
  patch="$(printf '%s' "$version" | cut -d. -f3)"
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off "$go_cmd" build -mod=readonly -trimpath \
    -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v1.$minor.$patch \
      -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$tmp" .) || { rm -f "$tmp"; die "go build of kubectl $version failed"; }
  "$tmp" version --client >&2 || { rm -f "$tmp"; die "the built kubectl does not run"; }
  mv "$tmp" "$out/kubectl"
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out/kubectl"
