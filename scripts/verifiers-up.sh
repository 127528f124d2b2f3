#!/usr/bin/env bash
# Builds the independent verifiers that docs/verify.md's recipes run
# (bundle/recipe's TestVerifyRecipes executes each recipe with them):
# cosign v2 and v3, the GitHub CLI (gh attestation verify), slsa-verifier
# and sigstore-go's example verifier, from the Go module proxy at pinned versions, into a cache
# directory, and prints that directory.
#
#   dir=$(bash scripts/verifiers-up.sh)
#   export PROOFGATE_VERIFIERS="$dir" PROOFGATE_REQUIRE_VERIFIERS=1
#
# The directory is $PROOFGATE_VERIFIERS when set, else
# "$(go env GOPATH)/bin/proofgate-verifiers". A binary already there and
# built from the pinned module version (go version -m) is kept; each build
# takes one to three minutes. Progress goes to stderr; stdout is only the
# directory. The binaries are cosign2, cosign3, gh, slsa-verifier and
# sigstore-go-verification (sigstore-go's example verifier).
set -euo pipefail

COSIGN2_VERSION=v2.6.5
COSIGN3_VERSION=v3.1.3
GH_VERSION=v2.83.1
SLSA_VERIFIER_VERSION=v2.7.1
SIGSTORE_GO_VERSION=v1.2.2 # its example verifier, the version go.mod uses

dir=${PROOFGATE_VERIFIERS:-"$(go env GOPATH)/bin/proofgate-verifiers"}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# built BIN MODULE VERSION: whether BIN was built from MODULE@VERSION (as
# its main module, or as the one requirement of a scratch module).
built() {
  [ -x "$1" ] || return 1
  go version -m "$1" 2>/dev/null | awk -v m="$2" -v v="$3" '($1 == "mod" || $1 == "dep") && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

# install NAME MODULE PACKAGE VERSION: builds PACKAGE@VERSION as $dir/NAME.
install() {
  if built "$dir/$1" "$2" "$4"; then
    echo "verifiers-up: $1 $4 already in $dir" >&2
    return
  fi
  echo "verifiers-up: building $1 $4 into $dir" >&2
  tmp=$(mktemp -d)
  # The tools' own go.mod decides their dependencies; this module's
  # go.mod, GOFLAGS and workspace must not.
  # `go install PKG@VERSION` also asks the proxy for the module's version
  # list (deprecations), which the proxy refuses for some modules (gh);
  # then a scratch module requiring exactly that version builds it, with
  # the same requirements (no replace directives in these modules).
  if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS= GOWORK=off go install "$3@$4") >&2; then
    (cd "$tmp" && export GOFLAGS= GOWORK=off && go mod init proofgate-verifiers-build && go get "$3@$4" &&
      go build -o "$(basename "$3")" "$3") >&2
  fi
  mv "$tmp/$(basename "$3")" "$dir/$1"
  rm -rf "$tmp"
  built "$dir/$1" "$2" "$4" || { echo "verifiers-up: $dir/$1 is not $2@$4" >&2; exit 1; }
}

install cosign2 github.com/sigstore/cosign/v2 github.com/sigstore/cosign/v2/cmd/cosign "$COSIGN2_VERSION"
install cosign3 github.com/sigstore/cosign/v3 github.com/sigstore/cosign/v3/cmd/cosign "$COSIGN3_VERSION"
install gh github.com/cli/cli/v2 github.com/cli/cli/v2/cmd/gh "$GH_VERSION"
install slsa-verifier github.com/slsa-framework/slsa-verifier/v2 \
  github.com/slsa-framework/slsa-verifier/v2/cli/slsa-verifier "$SLSA_VERIFIER_VERSION"
install sigstore-go-verification github.com/sigstore/sigstore-go \
  github.com/sigstore/sigstore-go/examples/sigstore-go-verification "$SIGSTORE_GO_VERSION"

echo "$dir"
