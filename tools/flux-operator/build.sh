#!/usr/bin/env bash
# Build (or locate) flux-operator for the Operator-mode tests of @mco/flux: the
# real operator (its ResourceSet and ResourceSetInputProvider controllers turn
# mco's input providers into Flux objects) and its CRDs of the same version.
# AGPL-3.0: a test tool only, never shipped.
#
# Prints ONE line on stdout: a directory holding
#   flux-operator   the executable (cmd/operator)
#   crds/           config/crd/bases of the same module version (ResourceSet,
#                   ResourceSetInputProvider, FluxInstance, FluxReport)
# Logs go to stderr, only when it builds.
#
# Builds once into ${MCO_FLUX_OPERATOR_CACHE:-$HOME/.cache/mco-flux-operator}/<version>/;
# a flock makes concurrent runs wait, and the directory is assembled under a
# temp name and renamed into place, so an interrupted build is never cached.
#
# What a plain `go build` lacks here (../../docs/testing.md):
#   - flux-operator needs go 1.27.0: GOTOOLCHAIN=go1.27.0 fetches that
#     toolchain as a module from the Go module proxy;
#   - it refuses to start outside FIPS 140-3 mode: built with GOFIPS140=latest,
#     as its own Dockerfile does, so FIPS mode is on by default;
#   - its pinned go-containerregistry/pkg/authn/kubernetes pseudo-version is
#     refused by the proxy: the wrapper go.mod replaces it with one it serves;
#   - the module zip lacks the web UI assets that web/embed.go embeds
#     (`//go:embed dist/*`): the module is copied out of the module cache, gets
#     a placeholder web/dist/index.html, and the wrapper go.mod points to it.
# Cold build: 5.5 min on a quiet 2-core machine, 44 min at load average 20-33
# (docs/testing.md); 87 MB.
set -euo pipefail

tool=flux-operator-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/controlplaneio-fluxcd/flux-operator

version="$(go_mod_version "$module" "$here/go.mod")"

cache="${MCO_FLUX_OPERATOR_CACHE:-$HOME/.cache/mco-flux-operator}"
out="$cache/$version"
if [[ -x "$out/flux-operator" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "flux-operator"

lock "$cache/.lock-$version"
if [[ ! -x "$out/flux-operator" ]]; then
  log "building flux-operator $version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=go1.27.0 GOFIPS140=latest GOWORK=off CGO_ENABLED=0
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/build" "$tmp/crds"
  trap 'rm -rf "$tmp"' EXIT
  src="$(cd "$here" && "$go_cmd" mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
  [[ -d "$src" ]] || die "cannot download $module@$version"
  cp -R "$src" "$tmp/build/flux-operator"
  chmod -R u+w "$tmp/build/flux-operator"
  mkdir -p "$tmp/build/flux-operator/web/dist"
  printf '<!doctype html><title>flux-operator (web UI not built)</title>\n' >"$tmp/build/flux-operator/web/dist/index.html"
  cp "$here/go.mod" "$here/go.sum" "$tmp/build/"
  (cd "$tmp/build" && "$go_cmd" build -mod=readonly -trimpath \
    -ldflags="-s -w -X main.VERSION=${version#v}" \
    -o "$tmp/flux-operator" "$module/cmd/operator") || die "go build of flux-operator $version failed"
  cp "$src"/config/crd/bases/*.yaml "$tmp/crds/"
  chmod u+w "$tmp"/crds/*.yaml
  "$tmp/flux-operator" --help >/dev/null 2>&1 || die "the built flux-operator does not run"
  rm -rf "$tmp/build"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
