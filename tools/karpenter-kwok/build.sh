#!/usr/bin/env bash
# Build Karpenter's kwok cloud provider (sigs.k8s.io/karpenter/kwok): the real
# Karpenter controllers (provisioning, disruption/consolidation, NodePool
# limits) whose "instances" are kwok nodes, for the member clusters that
# autoscale (@mco/testkit startMemberCluster).
#
# Prints ONE line on stdout: a directory holding
#   karpenter-kwok   the executable
#   crds/            the CRDs of the same module version: NodePool, NodeClaim,
#                    NodeOverlay (pkg/apis/crds) and KWOKNodeClass (kwok/apis/crds)
# Logs go to stderr, only when it builds.
#
# Karpenter v1.15.0 declares go 1.26.9, newer than the machine's Go:
# GOTOOLCHAIN=go1.27.0 fetches that toolchain as a module from the Go module
# proxy. Builds once into
# ${MCO_KARPENTER_KWOK_CACHE:-$HOME/.cache/mco-karpenter-kwok}/<version>/; a
# flock makes concurrent runs wait, and the directory is assembled under a temp
# name and renamed into place, so an interrupted build is never cached.
# Cold build: see docs/testing.md.
set -euo pipefail

tool=karpenter-kwok-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=sigs.k8s.io/karpenter

version="$(go_mod_version "$module" "$here/go.mod")"

cache="${MCO_KARPENTER_KWOK_CACHE:-$HOME/.cache/mco-karpenter-kwok}"
out="$cache/$version"
if [[ -x "$out/karpenter-kwok" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "Karpenter's kwok provider"

lock "$cache/.lock-$version"
if [[ ! -x "$out/karpenter-kwok" ]]; then
  log "building Karpenter's kwok provider $version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=go1.27.0 GOWORK=off CGO_ENABLED=0
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/crds"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$here" && "$go_cmd" build -mod=readonly -trimpath -ldflags="-s -w" \
    -o "$tmp/karpenter-kwok" "$module/kwok") || die "go build of $module/kwok $version failed"
  src="$(cd "$here" && "$go_cmd" list -mod=readonly -m -f '{{.Dir}}' "$module")"
  cp "$src"/pkg/apis/crds/karpenter.sh_*.yaml "$src"/kwok/apis/crds/*.yaml "$tmp/crds/"
  chmod u+w "$tmp"/crds/*.yaml
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
