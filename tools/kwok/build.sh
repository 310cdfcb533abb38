#!/usr/bin/env bash
# Build the kwok controller (sigs.k8s.io/kwok/cmd/kwok) for the member clusters
# that schedule and autoscale (@mco/testkit startMemberCluster): it plays the
# kubelets of fake nodes, so pods bound to them go Running without containers.
#
# Prints ONE line on stdout: a directory holding
#   kwok      the executable
#   stages/   the module's default Stage configs (node and pod lifecycles)
# Logs go to stderr, only when it builds.
#
# Builds once into ${MCO_KWOK_CACHE:-$HOME/.cache/mco-kwok}/<version>/; a flock
# makes concurrent runs wait, and the directory is assembled under a temp name
# and renamed into place, so an interrupted build is never cached.
# Cold build: see docs/testing.md.
set -euo pipefail

tool=kwok-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=sigs.k8s.io/kwok

version="$(go_mod_version "$module" "$here/go.mod")"

cache="${MCO_KWOK_CACHE:-$HOME/.cache/mco-kwok}"
out="$cache/$version"
if [[ -x "$out/kwok" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "kwok"

lock "$cache/.lock-$version"
if [[ ! -x "$out/kwok" ]]; then
  log "building kwok $version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/stages"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$here" && "$go_cmd" build -mod=readonly -trimpath \
    -ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$version" \
    -o "$tmp/kwok" "$module/cmd/kwok") || die "go build of kwok $version failed"
  src="$(cd "$here" && "$go_cmd" list -mod=readonly -m -f '{{.Dir}}' "$module")"
  [[ -d "$src/kustomize/stage" ]] || die "no kustomize/stage in $src"
  cp -R "$src/kustomize/stage/." "$tmp/stages/"
  chmod -R u+w "$tmp/stages"
  "$tmp/kwok" --help >/dev/null 2>&1 || die "the built kwok does not run"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
