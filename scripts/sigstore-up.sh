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

. "$(dirname "$0")/pinned-install.sh"

pinned_install "$dir" fulcio github.com/sigstore/fulcio github.com/sigstore/fulcio "$FULCIO_VERSION"
pinned_install "$dir" timestamp-server github.com/sigstore/timestamp-authority/v2 \
  github.com/sigstore/timestamp-authority/v2/cmd/timestamp-server "$TSA_VERSION"

echo "$dir"
