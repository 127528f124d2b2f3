#!/usr/bin/env bash
# Builds scripts/actart (nektos/act's artifact server, act v0.2.87, pinned in
# scripts/actart/go.mod) and prints the binary's path:
#
#   export PROOFGATE_ACT_ARTIFACTS="$(bash scripts/act-artifacts-up.sh)" PROOFGATE_REQUIRE_ACT=1
#
# The binary goes to $(go env GOPATH)/bin/proofgate-act/actart; it is rebuilt
# when scripts/actart changed. Progress goes to stderr; stdout is the path.
set -euo pipefail
cd "$(dirname "$0")/actart"
dir="$(go env GOPATH)/bin/proofgate-act"
mkdir -p "$dir"
stamp=$(cat go.mod go.sum main.go | sha256sum | cut -c1-16)
if [ -x "$dir/actart" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "act-artifacts-up: actart already in $dir" >&2
else
  echo "act-artifacts-up: building actart into $dir" >&2
  GOFLAGS=-mod=readonly GOWORK=off go build -o "$dir/actart" . >&2
  echo "$stamp" > "$dir/stamp"
fi
echo "$dir/actart"
