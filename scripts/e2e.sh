#!/usr/bin/env bash
# End-to-end test of the GitHub Action, run the way the runner runs a
# container action. Builds the proofgate binary (static) and an offline action
# image (Dockerfile.offline: FROM scratch + the binary + the host's CA bundle
# + the host's git and its libraries; no registry needed), then runs the Go
# driver internal/ci/action/e2e_test.go, which starts the fake GitHub on 127.0.0.1 and
# `docker run`s the image with the runner's mounts and environment (host
# networking, only so that loopback reaches the fake).
# Prints the image size and the wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

bash scripts/docker-up.sh >&2

ctx=$(mktemp -d)
tag=""
cleanup() {
  rm -rf "$ctx"
  # The image is rebuilt on every run; keep it only when asked to.
  if [ -n "$tag" ] && [ "${PROOFGATE_E2E_KEEP:-0}" != 1 ]; then docker rmi "$tag" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
root="$ctx/rootfs"
mkdir -p "$root/tmp" "$root/etc/ssl/certs" "$root/github/workspace"
chmod 1777 "$root/tmp"

echo "== build proofgate (static)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$root/proofgate" ./cmd/proofgate

echo "== stage git and CA certificates from the host" >&2
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
git_bin=$(command -v git)
copy() { mkdir -p "$root$(dirname "$1")"; cp -L "$1" "$root$1"; }
copy "$git_bin"
# Every absolute path ldd prints: the libraries and the dynamic loader.
for lib in $(ldd "$git_bin" | grep -o '/[^ ]*'); do
  if [ -e "$lib" ]; then copy "$lib"; fi
done
# git only runs builtins here (rev-parse, status, diff, ls-files, cat-file,
# show); the workspace is owned by another user, so trust it (protected
# system config, as the real Dockerfile does).
printf '[safe]\n\tdirectory = *\n' >"$root/etc/gitconfig"
printf 'root:x:0:0:root:/root:/sbin/nologin\n' >"$root/etc/passwd"
cp Dockerfile.offline "$ctx/Dockerfile"

tag="proofgate-e2e/action:$(sha256sum "$root/proofgate" | cut -c1-16)"
echo "== docker build $tag (FROM scratch, offline)" >&2
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$tag")

echo "== e2e scenario" >&2
# The keyless case (internal/ci/action/e2e_keyless_test.go) starts the real Fulcio
# and TSA on 127.0.0.1 (internal/sigstoretest), which skips without their
# binaries unless PROOFGATE_REQUIRE_SIGSTORE=1 (scripts/test.sh sets it).
# TestE2EReviewFastPath prints the review-to-bundle figure (line FASTPATH):
# the pull_request_review job imports the pull_request job's run hand-off
# instead of re-running a 6 s check (goal ≤ 10 s).
# TestE2EShardMatrix prints line SHARDS (20 checks, 3 shard containers);
# TestE2EShardMatrix200 prints line SHARDS200 (issue 17's scale: 200
# sandboxed checks as a plan job, 10 shard containers at once and a merge).
# TestE2EFirstDayAct runs the workflows `proofgate init --workflow`
# writes for spf13/cobra under nektos/act (PROOFGATE_ACT, else act on PATH
# or in GOPATH/bin; required under PROOFGATE_REQUIRE_ACT=1) against the fake
# GitHub, with this image as the released action and the CLI built above
# for init; it prints line ACT-FIRSTDAY (act's wall times).
PROOFGATE_E2E_IMAGE="$tag" PROOFGATE_E2E_CLI="$root/proofgate" go test -count=1 -timeout 25m -run '^TestE2E' -v ./internal/ci/action | tee "$ctx/e2e.log"
grep -h -e 'FASTPATH' -e 'SHARDS' "$ctx/e2e.log" | sed 's/^ *//' >&2 || true
# TestE2ERulesActionImage (approval rules by path, team and CODEOWNERS
# through the image) prints its review-to-bundle figure on line RULES-E2E.
grep -h 'RULES-E2E' "$ctx/e2e.log" | sed 's/^ *//' >&2 || true
grep -h 'ACT-FIRSTDAY' "$ctx/e2e.log" | sed 's/^ *//' >&2 || true

end=$(date +%s)
mib=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }')
printf 'e2e: image %s size %d bytes (%s MiB); wall time %ds\n' "$tag" "$size" "$mib" "$((end - start))"
