#!/usr/bin/env bash
# Build kube-scheduler and kube-controller-manager for the member clusters that
# schedule and autoscale (@mco/testkit startMemberCluster), from the SAME
# wrapper module as ../k8s-testbin (its go.mod lists them as tools), so they are
# always the version of the kube-apiserver they talk to.
#
# Prints ONE line on stdout: a directory holding both executables. Logs go to
# stderr, only when it builds.
#
# Builds once into ${MCO_K8S_CONTROLPLANE_CACHE:-$HOME/.cache/mco-k8s-controlplane}/<k8s-version>/;
# a flock makes concurrent runs wait, and the directory is assembled under a
# temp name and renamed into place, so an interrupted build is never cached.
# Cold build: see docs/testing.md.
set -euo pipefail

tool=k8s-controlplane
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wrapper="$here/../k8s-testbin"

version="$(go_mod_version k8s.io/kubernetes "$wrapper/go.mod")"

cache="${MCO_K8S_CONTROLPLANE_CACHE:-$HOME/.cache/mco-k8s-controlplane}"
out="$cache/$version"
if [[ -x "$out/kube-scheduler" && -x "$out/kube-controller-manager" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "kube-scheduler and kube-controller-manager"

lock "$cache/.lock-$version"
if [[ ! -x "$out/kube-scheduler" || ! -x "$out/kube-controller-manager" ]]; then
  log "building kube-scheduler and kube-controller-manager $version into $out (first run only)"
  start=$SECONDS
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  # Stamp the real version so /version and the logs report it, as upstream's release build does.
  minor="${version#v1.}"; minor="${minor%%.*}"
  kv="k8s.io/component-base/version"
  for name in kube-scheduler kube-controller-manager; do
    (cd "$wrapper" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off "$go_cmd" build -mod=readonly -trimpath \
      -ldflags="-s -w -X $kv.gitVersion=$version -X $kv.gitMajor=1 -X $kv.gitMinor=$minor -X $kv.gitTreeState=clean" \
      -o "$tmp/$name" "k8s.io/kubernetes/cmd/$name") || die "go build of $name $version failed"
    "$tmp/$name" --version >&2 || die "the built $name does not run"
  done
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
