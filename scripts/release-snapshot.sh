#!/usr/bin/env bash
# A release without the network: `goreleaser check`, then a snapshot of
# .goreleaser.yaml into a temporary directory (publishing, the image and
# signing skipped: no registry and no base images here), then asserts what
# a release must contain — the six binaries, archives whose SHA-256 sums
# checksums.txt lists and that match, one CycloneDX SBOM per binary — and
# runs the host's binary: `proofgate version` must name the snapshot
# version and the commit built.
#
# Installs goreleaser and cyclonedx-gomod (Go modules, pinned) when missing.
# Prints each phase's wall time. Usage: scripts/release-snapshot.sh
set -euo pipefail
cd "$(dirname "$0")/.."

GORELEASER_VERSION=v2.15.1
CYCLONEDX_GOMOD_VERSION=v1.10.0
export PATH="$(go env GOPATH)/bin:$PATH"

now() { date +%s; }
t0=$(now)
if ! command -v goreleaser >/dev/null 2>&1; then
  echo "installing goreleaser $GORELEASER_VERSION (go install; a few minutes)"
  go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
fi
if ! command -v cyclonedx-gomod >/dev/null 2>&1; then
  go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
fi
t1=$(now)
echo "tools: $(goreleaser --version 2>/dev/null | awk '/^GitVersion:/ {print $2}') and cyclonedx-gomod ready in $((t1 - t0))s"

goreleaser check

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dist="$tmp/dist"
# The real configuration, with dist/ moved out of the work tree.
{ cat .goreleaser.yaml; printf '\ndist: %s\n' "$dist"; } >"$tmp/goreleaser.yaml"
# GoReleaser reads the commit, its date and the remote's URL from git and
# falls back to "none" for all of them when any is missing; a checkout
# without a remote (a worktree, a local clone) gets a placeholder URL
# through git's environment, not its config.
if ! git remote get-url origin >/dev/null 2>&1; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/OWNER/proofgate.git
fi
goreleaser release --config "$tmp/goreleaser.yaml" --snapshot --clean \
  --skip=publish,docker,sign >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
t2=$(now)
echo "snapshot build (6 targets, archives, checksums, SBOMs) in $((t2 - t1))s"

fail() { echo "release snapshot: $*" >&2; exit 1; }
targets="linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64"
for t in $targets; do
  exe=proofgate; case $t in windows_*) exe=proofgate.exe ;; esac
  bin=$(find "$dist" -path "*_${t}*/$exe" -type f | head -n1)
  [ -n "$bin" ] || fail "no binary for $t in $dist"
  ext=tar.gz; case $t in windows_*) ext=zip ;; esac
  archive=$(find "$dist" -maxdepth 1 -name "proofgate_*_${t}.$ext" | head -n1)
  [ -n "$archive" ] || fail "no archive for $t"
  grep -q "  $(basename "$archive")\$" "$dist/checksums.txt" || fail "checksums.txt does not list $(basename "$archive")"
  sbom=$(find "$dist" -maxdepth 1 -name "proofgate_*_${t%_*}_${t#*_}.cdx.json" | head -n1)
  [ -n "$sbom" ] || fail "no SBOM for $t"
  python3 - "$sbom" <<'PY' || fail "SBOM $sbom is not a CycloneDX document with components"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bomFormat"] == "CycloneDX" and d["specVersion"].startswith("1.")
names = {c.get("name") for c in d.get("components", [])}
assert "github.com/spf13/cobra" in names, names
PY
  echo "ok $t: $(basename "$bin") $(basename "$archive") $(basename "$sbom")"
done
(cd "$dist" && sha256sum --quiet -c checksums.txt) || fail "checksums.txt does not match the files"
[ "$(grep -c . "$dist/checksums.txt")" -ge 6 ] || fail "checksums.txt lists fewer than 6 files"

host="$(go env GOOS)_$(go env GOARCH)"
hostbin=$(find "$dist" -path "*_${host}*/proofgate" -type f | head -n1)
want_commit=$(git rev-parse HEAD)
out=$("$hostbin" version --json)
echo "$out"
python3 - "$want_commit" "$out" <<'PY' || fail "proofgate version does not name the snapshot build"
import json, sys
v = json.loads(sys.argv[2])
assert "-snapshot+" in v["version"], v
assert v["commit"] == sys.argv[1], (v["commit"], sys.argv[1])
assert v["date"] not in ("", "unknown"), v
PY
"$hostbin" --version
t3=$(now)
echo "release snapshot: ok in $((t3 - t0))s (tools $((t1 - t0))s, build $((t2 - t1))s, asserts $((t3 - t2))s)"
echo "skipped here: publishing (no network), the image (--skip=docker: no registry, no base images), signing"
