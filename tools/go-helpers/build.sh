#!/usr/bin/env bash
# Build the small Go programs the tests use as real Go peers (every main
# package below this directory: re2check, gotemplate, ...), standard library
# only, so no download is needed.
#
# Prints ONE line on stdout: the directory holding one executable per program.
# Logs go to stderr, and only when something is built.
#
# The cache directory is keyed by a hash of the sources and the Go version:
#   ${MCO_GO_HELPERS_CACHE:-$HOME/.cache/mco-go-helpers}/<hash>/
# A flock makes concurrent runs wait; a temp directory renamed into place
# means an interrupted build is never cached.
set -euo pipefail

tool=go-helpers
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

require_go "the Go test helpers"

go_version="$(GOTOOLCHAIN=local "$go_cmd" env GOVERSION)"
key="$( (printf '%s\n' "$go_version"; cd "$here" && find . -name '*.go' -o -name go.mod | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)"
root="${MCO_GO_HELPERS_CACHE:-$HOME/.cache/mco-go-helpers}"
out="$root/$key"
if [[ -f "$out/.complete" ]]; then
  printf '%s\n' "$out"
  exit 0
fi

lock "$root/.lock"
if [[ ! -f "$out/.complete" ]]; then
  start=$SECONDS
  tmp="$root/.build.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod "$go_cmd" build -trimpath -o "$tmp/" ./...) \
    || { rm -rf "$tmp"; die "go build failed"; }
  touch "$tmp/.complete"
  rm -rf "$out"
  mv "$tmp" "$out"
  log "built $(cd "$out" && ls | tr '\n' ' ')in $((SECONDS - start))s"
fi
printf '%s\n' "$out"
