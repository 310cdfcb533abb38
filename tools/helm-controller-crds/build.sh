#!/usr/bin/env bash
# Generate (or locate) Flux's HelmRelease CRD for the @mco/flux tests.
# helm-controller's root module is not served by the Go module proxy, but its
# api module is: controller-gen (sigs.k8s.io/controller-tools, pinned as a
# `tool` in the wrapper go.mod beside this script) generates the CRD from the
# pinned github.com/fluxcd/helm-controller/api, as helm-controller's own
# `make manifests` does (crd paths=./api/...).
#
# Prints ONE line on stdout: a directory holding
#   crds/helm.toolkit.fluxcd.io_helmreleases.yaml
# Logs go to stderr, only when it builds.
#
# Builds once into ${MCO_HELM_CONTROLLER_CRDS_CACHE:-$HOME/.cache/mco-helm-controller-crds}/<api>-<controller-tools>/;
# a flock makes concurrent runs wait, and the directory is assembled under a
# temp name and renamed into place, so an interrupted build is never cached.
set -euo pipefail

tool=helm-controller-crds-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
api=github.com/fluxcd/helm-controller/api
gen=sigs.k8s.io/controller-tools

api_version="$(go_mod_version "$api" "$here/go.mod")"
gen_version="$(go_mod_version "$gen" "$here/go.mod")"

cache="${MCO_HELM_CONTROLLER_CRDS_CACHE:-$HOME/.cache/mco-helm-controller-crds}"
version="$api_version-$gen_version"
out="$cache/$version"
crd=crds/helm.toolkit.fluxcd.io_helmreleases.yaml
if [[ -s "$out/$crd" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

require_go "the HelmRelease CRD"

lock "$cache/.lock-$version"
if [[ ! -s "$out/$crd" ]]; then
  log "generating the HelmRelease CRD of $api $api_version with controller-gen $gen_version into $out (first run only)"
  start=$SECONDS
  export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
  tmp="$cache/.$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/crds"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$here" && "$go_cmd" build -mod=readonly -trimpath -o "$tmp/controller-gen" "$gen/cmd/controller-gen") ||
    die "go build of controller-gen $gen_version failed"
  # Package paths, not directories: the api module is loaded from the module
  # cache through the wrapper module's requirements.
  (cd "$here" && "$tmp/controller-gen" crd paths="$api/..." output:crd:dir="$tmp/crds") ||
    die "controller-gen failed on $api $api_version"
  [[ -s "$tmp/$crd" ]] || die "controller-gen wrote no $crd"
  rm -f "$tmp/controller-gen"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  log "generated in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
