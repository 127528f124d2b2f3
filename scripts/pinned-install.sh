# pinned-install.sh: sourced by the scripts that build tools the tests run
# (sigstore-up.sh, verifiers-up.sh). Defines
#
#   pinned_install DIR NAME MODULE PACKAGE VERSION
#
# which builds PACKAGE of MODULE@VERSION as DIR/NAME, unless DIR/NAME is
# already a build of MODULE@VERSION (go version -m). Progress goes to
# stderr; a build that does not come out as MODULE@VERSION exits 1.

# pinned_built BIN MODULE VERSION: whether BIN was built from
# MODULE@VERSION (as its main module, or as the one requirement of a
# scratch module).
pinned_built() {
  [ -x "$1" ] || return 1
  go version -m "$1" 2>/dev/null | awk -v m="$2" -v v="$3" '($1 == "mod" || $1 == "dep") && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

pinned_install() {
  local dir=$1 name=$2 module=$3 pkg=$4 version=$5 me tmp
  me=$(basename "$0" .sh)
  if pinned_built "$dir/$name" "$module" "$version"; then
    echo "$me: $name $version already in $dir" >&2
    return
  fi
  echo "$me: building $name $version into $dir" >&2
  tmp=$(mktemp -d)
  # The tool's own go.mod decides its dependencies; this module's go.mod,
  # GOFLAGS and workspace must not. `go install PKG@VERSION` also asks
  # the proxy for the module's version list (deprecations), which the
  # proxy refuses for some modules (gh); then a scratch module requiring
  # exactly that version builds it, with the same requirements (none of
  # these modules has replace directives).
  if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS= GOWORK=off go install "$pkg@$version") >&2; then
    (cd "$tmp" && export GOFLAGS= GOWORK=off && go mod init proofgate-tool-build && go get "$pkg@$version" &&
      go build -o "$(basename "$pkg")" "$pkg") >&2
  fi
  mv "$tmp/$(basename "$pkg")" "$dir/$name"
  rm -rf "$tmp"
  pinned_built "$dir/$name" "$module" "$version" || { echo "$me: $dir/$name is not $module@$version" >&2; exit 1; }
}
