#!/usr/bin/env bash
# The project's test command (the README names it; .ci/run calls it).
# Brings up what the tests need (a Docker daemon, staticcheck), then runs
# gofmt, go vet, staticcheck, the kernel's tests under the race detector,
# every other package's tests, and the CLI testscript scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step prints the seconds since the start, so a slow stage shows.
t0=$(date +%s)
step() { printf '\n== [%ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
scratch=""
trap 'rc=$?; [ -z "$scratch" ] || rm -rf "$scratch"; printf "\n== [%ss] test.sh ends (status %s)\n" "$(($(date +%s) - t0))" "$rc"' EXIT

step "docker daemon"
bash scripts/docker-up.sh
export PROOFGATE_REQUIRE_DOCKER=1

step "registry mirror (Docker Hub's golang and node, built from this host's toolchains)"
# A real OCI registry on 127.0.0.1 (go-containerregistry's pkg/registry)
# holding library/golang and library/node images made from the host's go
# and node; the daemon uses it as its registry mirror, so `docker pull
# golang:1.26` resolves as on a GitHub runner, never from the internet.
# internal/registrytest.Mirror fails, not skips, the tests that need it.
PROOFGATE_MIRROR="$(bash scripts/mirror-up.sh)"
export PROOFGATE_MIRROR PROOFGATE_REQUIRE_MIRROR=1
echo "registry mirror: $PROOFGATE_MIRROR"

step "cgroup v2 delegation"
# Where this process may create a cgroup v2 child, the process runtime's
# cgroup containment must be in effect: its tests fail instead of falling
# back (the same rule as Docker's: what the host has is tested, not skipped).
cg=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup 2>/dev/null || true)
root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo 2>/dev/null || true)
probe="$root${cg%/}/proofgate-probe-$$"
if [ -n "$root" ] && mkdir "$probe" 2>/dev/null; then
  rmdir "$probe"
  export PROOFGATE_REQUIRE_CGROUP=1
  echo "cgroup v2 at $root$cg is writable: PROOFGATE_REQUIRE_CGROUP=1"
else
  echo "no writable cgroup v2 here: process checks fall back to process groups (and say so)"
fi

step "sigstore services (Fulcio, timestamp authority)"
# Built from their Go modules (pinned versions); the keyless tests start
# them on 127.0.0.1 and fail, not skip, when they are missing.
PROOFGATE_SIGSTORE_BIN="$(bash scripts/sigstore-up.sh)"
export PROOFGATE_SIGSTORE_BIN PROOFGATE_REQUIRE_SIGSTORE=1
echo "fulcio and timestamp-server in $PROOFGATE_SIGSTORE_BIN"

step "nektos/act's artifact server"
# Built from act v0.2.87's own pkg/artifacts (scripts/actart, its own module);
# internal/ci/artifact's TestUploadToActArtifactServer uploads to it on 127.0.0.1 and
# fails, not skips, when it is missing.
PROOFGATE_ACT_ARTIFACTS="$(bash scripts/act-artifacts-up.sh)"
export PROOFGATE_ACT_ARTIFACTS PROOFGATE_REQUIRE_ACT=1
echo "act artifact server: $PROOFGATE_ACT_ARTIFACTS"

step "independent verifiers (cosign v2 and v3, gh, slsa-verifier)"
# Built from their Go modules at pinned versions; cmd/proofgate's
# TestVerifyRecipes runs docs/verify.md's recipes with them, offline, and
# fails, not skips, when they are missing.
PROOFGATE_VERIFIERS="$(bash scripts/verifiers-up.sh)"
export PROOFGATE_VERIFIERS PROOFGATE_REQUIRE_VERIFIERS=1
echo "verifiers in $PROOFGATE_VERIFIERS"

step "MCP inspector CLI (npm)"
# @modelcontextprotocol/inspector-cli from scripts/mcp-inspector's lock file
# (npm ci); cmd/proofgate's inspector tests drive `proofgate mcp` with it and
# fail, not skip, when it is missing.
PROOFGATE_INSPECTOR="$(bash scripts/inspector-up.sh)"
export PROOFGATE_INSPECTOR PROOFGATE_REQUIRE_INSPECTOR=1
echo "inspector-cli: $PROOFGATE_INSPECTOR"

step "install staticcheck"
if ! command -v staticcheck >/dev/null 2>&1; then
  export PATH="$(go env GOPATH)/bin:$PATH"
  command -v staticcheck >/dev/null 2>&1 || go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi

step "install actionlint"
# internal/ci/action's TestWorkflowsActionlint lints .github/workflows and
# examples/workflows with it; required here, skipped where it is missing.
export PATH="$(go env GOPATH)/bin:$PATH"
command -v actionlint >/dev/null 2>&1 || go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
export PROOFGATE_REQUIRE_ACTIONLINT=1

step "install nektos/act"
# internal/ci/action's TestE2EFirstDayAct (run by scripts/e2e.sh below) runs the
# workflows `proofgate init --workflow` generates with act v0.2.87, as a
# maintainer would; it fails, not skips, without it (PROOFGATE_REQUIRE_ACT=1).
PROOFGATE_ACT="$(go env GOPATH)/bin/act"
"$PROOFGATE_ACT" --version 2>/dev/null | grep -qx 'act version 0.2.87' || go install github.com/nektos/act@v0.2.87
export PROOFGATE_ACT

step "scratch space"
# After the services above are up (their state stays where it was): the
# tests' temporary directories (t.TempDir, go test's build directory)
# go to a tmpfs where the host has one: the suite fsyncs event logs tens
# of thousands of times, which a journaled disk makes the slowest part of
# the crash tests. Set TMPDIR yourself to keep them elsewhere.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && scratch=$(mktemp -d /dev/shm/proofgate-test.XXXXXX); then
  chmod 0755 "$scratch"
  export TMPDIR="$scratch"
fi
echo "TMPDIR=${TMPDIR:-/tmp}"

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
staticcheck ./...

# The kernel: the public model and verifier (kernel/) and the writer,
# features, helpers and runtimes that moved to internal/ (ADR 0044); they
# all ran under the race detector when they lived in kernel/.
kernel_internal="run retention lock cache session shard tool trace blob provider policy source beneath strictjson durable bounded printable pathglob canon docker process bench cleanup evidence docbridge"
raced="./kernel/..."
for p in $kernel_internal; do raced="$raced ./internal/$p/..."; done
raced_pkgs=$(go list $raced)

step "cross-platform vet (darwin, windows)"
# The CLI's verification verbs must build and vet on macOS and Windows
# (the runtime: process provider exists on Unix only and says so on
# Windows). Everything vets for darwin; for windows, all but the test
# packages that start Unix processes (cmd/proofgate, bundle/sigstore,
# internal/ci/action, through internal/sigstoretest), whose non-test code the
# release snapshot below builds for windows.
GOOS=darwin go vet ./...
GOOS=windows go vet $(GOOS=windows go list ./bundle/... ./internal/ci/... ./internal/mcp/... ./internal/record/... ./internal/keytest/... $raced | grep -v -e '/bundle/sigstore$' -e '/internal/ci/action$')
GOOS=windows go build -o /dev/null ./cmd/proofgate

step "kernel tests (race detector)"
go test -race -count=1 -timeout 15m $raced

step "other packages and CLI scenarios"
go test -count=1 -timeout 25m $(go list ./... | grep -vxF "$raced_pkgs")

step "end to end: the action image run as GitHub's runner runs it"
bash scripts/e2e.sh

step "release snapshot (goreleaser check + six targets, no network)"
# .goreleaser.yaml checked and built as a release builds it, into a
# temporary directory: binaries, archives, checksums, SBOMs; the host
# binary's `proofgate version` names the build. The image and publishing
# are skipped (no registry here). Installs goreleaser when missing.
bash scripts/release-snapshot.sh
