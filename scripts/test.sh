#!/usr/bin/env bash
# The project's test command (the README names it; .ci/run calls it).
# Brings up what the tests need (a Docker daemon, staticcheck), then runs
# gofmt, go vet, staticcheck, the kernel's tests under the race detector,
# every other package's tests, and the CLI testscript scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "docker daemon"
bash scripts/docker-up.sh
export PROOFGATE_REQUIRE_DOCKER=1

step "staticcheck"
if ! command -v staticcheck >/dev/null 2>&1; then
  export PATH="$(go env GOPATH)/bin:$PATH"
  command -v staticcheck >/dev/null 2>&1 || go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
staticcheck ./...

step "kernel tests (race detector)"
go test -race -count=1 -timeout 15m ./kernel/...

step "other packages and CLI scenarios"
go test -count=1 -timeout 15m $(go list ./... | grep -v '/kernel')

step "end to end: the action image run as GitHub's runner runs it"
bash scripts/e2e.sh
