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

. "$(dirname "$0")/pinned-install.sh"

pinned_install "$dir" cosign2 github.com/sigstore/cosign/v2 github.com/sigstore/cosign/v2/cmd/cosign "$COSIGN2_VERSION"
pinned_install "$dir" cosign3 github.com/sigstore/cosign/v3 github.com/sigstore/cosign/v3/cmd/cosign "$COSIGN3_VERSION"
pinned_install "$dir" gh github.com/cli/cli/v2 github.com/cli/cli/v2/cmd/gh "$GH_VERSION"
pinned_install "$dir" slsa-verifier github.com/slsa-framework/slsa-verifier/v2 \
  github.com/slsa-framework/slsa-verifier/v2/cli/slsa-verifier "$SLSA_VERIFIER_VERSION"
pinned_install "$dir" sigstore-go-verification github.com/sigstore/sigstore-go \
  github.com/sigstore/sigstore-go/examples/sigstore-go-verification "$SIGSTORE_GO_VERSION"

echo "$dir"
