#!/usr/bin/env bash
# Build (or locate) a real kube-apiserver and etcd for integration tests.
#
# Prints ONE line on stdout: the directory that contains both `kube-apiserver`
# and `etcd` (the envtest / KUBEBUILDER_ASSETS layout). Everything else goes to
# stderr.
#
#   1. If KUBEBUILDER_ASSETS is set and holds both executables, print it and stop.
#   2. Otherwise build them from the Go module proxy via the wrapper module next
#      to this script into
#        ${MCO_TESTBIN_CACHE:-$HOME/.cache/mco-testbin}/<k8s-version>/
#      skipping binaries that are already there. Builds go to a temp file that
#      is renamed into place only after it runs, so an interrupted build is
#      never cached. A flock on <cache>/<k8s-version>/.lock makes concurrent
#      runs safe (the second waits, then finds the binaries).
#
# Environment:
#   KUBEBUILDER_ASSETS   use prebuilt binaries from this directory
#   MCO_TESTBIN_CACHE    cache root (default $HOME/.cache/mco-testbin)
#   GO                   go command (default: go on PATH, else /usr/local/go/bin/go)
#
# Cold build: 3.5 minutes on a quiet 2-core machine, 16 minutes under load (figures in docs/testing.md); later runs are instant.
set -euo pipefail

tool=k8s-testbin
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- 1. KUBEBUILDER_ASSETS -------------------------------------------------
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    printf '%s\n' "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver and/or etcd; building instead"
fi

# --- versions, read from the committed go.mod -------------------------------
k8s_version="$(go_mod_version k8s.io/kubernetes "$here/go.mod")"
etcd_version="$(go_mod_version go.etcd.io/etcd/server/v3 "$here/go.mod")"

cache_root="${MCO_TESTBIN_CACHE:-$HOME/.cache/mco-testbin}"
out="$cache_root/$k8s_version"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

have_both() { [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; }

# Fast path without the lock: binaries only ever appear via rename.
if have_both; then
  printf '%s\n' "$out"
  exit 0
fi

# --- 2. build under a lock ---------------------------------------------------
exec 9>"$out/.lock"
if ! flock -n 9; then
  log "another build holds $out/.lock; waiting"
  flock 9
fi

tmpfiles=()
child=""
cleanup() {
  # `go build` runs in its own process group (setsid): stop the whole group
  # (go, compile, link) so nothing can write the temp file after we delete it.
  if [[ -n "$child" ]]; then
    kill -TERM -- "-$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  ((${#tmpfiles[@]})) && rm -rf "${tmpfiles[@]}"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# We hold the lock, so temp files here are leftovers of a killed run.
rm -rf "$out"/.*.tmp.* "$out"/.gotmp.*

if [[ -n "${GO:-}" ]]; then
  go_cmd="$GO"
elif command -v go >/dev/null 2>&1; then
  go_cmd="go"
elif [[ -x /usr/local/go/bin/go ]]; then
  go_cmd="/usr/local/go/bin/go"
else
  go_cmd=""
fi

build() { # name package [extra ldflags]
  local name="$1" pkg="$2" extra="${3:-}"
  if [[ -x "$out/$name" ]]; then
    log "$name already built in $out"
    return 0
  fi
  [[ -n "$go_cmd" ]] || die "go not found (need Go >= 1.26; set GO=/path/to/go)"
  local tmp="$out/.$name.tmp.$$" gotmp="$out/.gotmp.$$"
  tmpfiles+=("$tmp" "$gotmp")
  mkdir -p "$gotmp"
  log "building $name ($pkg) -> $out/$name; a cold build takes 4-16 min on 2 cores (944 s under load)"
  local start=$SECONDS
  # In the background + `wait` so INT/TERM traps fire at once; GOTMPDIR so an
  # interrupted build leaves no go-build* work dir behind.
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOTMPDIR="$gotmp" \
    exec setsid -w "$go_cmd" build -mod=readonly -trimpath -ldflags="-s -w $extra" -o "$tmp" "$pkg") >&2 &
  child=$!
  wait "$child" || die "go build $pkg failed"
  child=""
  rm -rf "$gotmp"
  "$tmp" --version >&2 || die "freshly built $name does not run"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$out/$name"
  log "built $name in $((SECONDS - start))s"
}

# Stamp the real version so /version reports it (as upstream's release build does).
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
kv="k8s.io/component-base/version"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $kv.gitVersion=$k8s_version -X $kv.gitMajor=1 -X $kv.gitMinor=$minor -X $kv.gitTreeState=clean"
build etcd go.etcd.io/etcd/server/v3

printf 'kubernetes %s\netcd %s\n' "$k8s_version" "$etcd_version" >"$out/VERSIONS"
have_both || die "binaries missing in $out after build"
printf '%s\n' "$out"
