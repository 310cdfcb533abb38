#!/usr/bin/env bash
# Build (or locate) the helm CLI used by the chart tests (`helm lint`,
# `helm template`). Debian ships no helm package and the machines reach only
# package registries, so helm is built from the Go module proxy through the
# wrapper module beside this script (go.mod pins helm.sh/helm/v3 as a `tool`).
#
# Prints ONE line on stdout: the path of the helm executable. Logs go to stderr.
#
#   1. If MCO_HELM is set and executable, print it and stop.
#   2. If `helm` on PATH reports v3.x, print its path and stop.
#   3. Otherwise build into ${MCO_HELM_CACHE:-$HOME/.cache/mco-helm}/<version>/helm
#      (once; a flock makes concurrent runs wait, a temp file renamed into place
#      means an interrupted build is never cached).
#
# Cold build: a few minutes on 2 cores (docs/install.md has the figure).
set -euo pipefail

tool=helm-build
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${MCO_HELM:-}" ]]; then
  [[ -x "$MCO_HELM" ]] || die "MCO_HELM=$MCO_HELM is not executable"
  printf '%s\n' "$MCO_HELM"
  exit 0
fi
if command -v helm >/dev/null 2>&1 && helm version --short 2>/dev/null | grep -q '^v3\.'; then
  command -v helm
  exit 0
fi

version="$(go_mod_version helm.sh/helm/v3 "$here/go.mod")"
# helm's default Kubernetes version (for `helm template` and lint) comes from
# link-time flags, as in helm's own Makefile: take it from client-go's version.
client_go="$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v0\./ { print $2; exit }' "$here/go.mod")"
k8s_minor="$(printf '%s' "$client_go" | cut -d. -f2)"
[[ -n "$k8s_minor" ]] || die "cannot read the k8s.io/client-go version from $here/go.mod"

out="${MCO_HELM_CACHE:-$HOME/.cache/mco-helm}/$version-k8s1.$k8s_minor"
mkdir -p "$out"
if [[ -x "$out/helm" ]]; then
  printf '%s\n' "$out/helm"
  exit 0
fi

require_go "helm" MCO_HELM

lock "$out/.lock"
if [[ ! -x "$out/helm" ]]; then
  log "building helm $version into $out (first run only)"
  start=$SECONDS
  tmp="$out/.helm.tmp.$$"
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off "$go_cmd" build -mod=readonly -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version \
      -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$k8s_minor \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor" \
    -o "$tmp" helm.sh/helm/v3/cmd/helm) || { rm -f "$tmp"; die "go build of helm $version failed"; }
  "$tmp" version --short >&2 || { rm -f "$tmp"; die "the built helm does not run"; }
  mv "$tmp" "$out/helm"
  log "built in $((SECONDS - start))s"
fi
printf '%s\n' "$out/helm"
