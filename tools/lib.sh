# Sourced by every tools/<name>/build.sh, after it sets `tool` (its log
# prefix): the steps the builds share. A build prints one line on stdout
# (where its tool is) and logs to stderr, only when it builds.

log() { printf '%s: %s\n' "$tool" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# go_mod_version MODULE GO_MOD: the version GO_MOD requires of MODULE (in a
# require block or on a require line); dies if none.
go_mod_version() {
  local version
  version="$(awk -v m="$1" '$1 == "require" { $0 = substr($0, 9) } $1 == m && $2 ~ /^v/ { print $2; exit }' "$2")"
  [[ -n "$version" ]] || die "cannot read the $1 version from $2"
  printf '%s\n' "$version"
}

# require_go WHAT [ALTERNATIVE]: sets go_cmd to the Go that builds WHAT, or dies
# naming GO (and ALTERNATIVE, an environment variable that gives the tool itself).
require_go() {
  go_cmd="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
  [[ -x "$go_cmd" ]] || die "Go is needed to build $1 (set GO${2:+ or $2})"
}

# lock FILE: waits while another run holds FILE (concurrent runs build once);
# held on descriptor 9 until the build script exits.
lock() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1"
  flock 9
}
