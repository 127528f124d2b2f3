#!/usr/bin/env bash
# Builds the Sigstore services the tests run on 127.0.0.1 (internal/sigstoretest):
# Fulcio v1.8.8 and timestamp-authority v2.1.3's timestamp-server, from the
# Go module proxy, into a cache directory, and prints that directory.
#
#   dir=$(bash scripts/sigstore-up.sh)
#   export PROOFGATE_SIGSTORE_BIN="$dir" PROOFGATE_REQUIRE_SIGSTORE=1
#
# The directory is $PROOFGATE_SIGSTORE_BIN when set, else
# "$(go env GOPATH)/bin/proofgate-sigstore". A binary already there and built
# from the pinned module version (go version -m) is kept; each build takes
# about a minute. Progress goes to stderr; stdout is only the directory.
set -euo pipefail

FULCIO_VERSION=v1.8.8
TSA_VERSION=v2.1.3

dir=${PROOFGATE_SIGSTORE_BIN:-"$(go env GOPATH)/bin/proofgate-sigstore"}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# built BIN MODULE VERSION: whether BIN was built from MODULE@VERSION.
built() {
  [ -x "$1" ] || return 1
  go version -m "$1" 2>/dev/null | awk -v m="$2" -v v="$3" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

# install NAME MODULE PACKAGE VERSION
install() {
  if built "$dir/$1" "$2" "$4"; then
    echo "sigstore-up: $1 $4 already in $dir" >&2
    return
  fi
  echo "sigstore-up: building $1 $4 into $dir" >&2
  # The services' own go.mod decides their dependencies; this module's
  # go.mod, GOFLAGS and workspace must not.
  (cd "$dir" && GOBIN="$dir" GOFLAGS= GOWORK=off go install "$3@$4") >&2
  built "$dir/$1" "$2" "$4" || { echo "sigstore-up: $dir/$1 is not $2@$4" >&2; exit 1; }
}

install fulcio github.com/sigstore/fulcio github.com/sigstore/fulcio "$FULCIO_VERSION"
install timestamp-server github.com/sigstore/timestamp-authority/v2 \
  github.com/sigstore/timestamp-authority/v2/cmd/timestamp-server "$TSA_VERSION"

echo "$dir"
