#!/usr/bin/env bash
# Pins a release's actions (docs/release.md "What a release rewrites").
#
#   scripts/release-pin.sh action IMAGE:TAG sha256:DIGEST [ROOT]
#       action.yml and verify/action.yml: `image: Dockerfile` and
#       `image: ../Dockerfile` become `image: docker://IMAGE:TAG@sha256:DIGEST`.
#   scripts/release-pin.sh workflow OWNER/REPO COMMIT [ROOT]
#       .github/workflows/proofgate.yml: the action step `uses: ./` becomes
#       `uses: OWNER/REPO@COMMIT` (the commit whose action.yml pins the image).
#
# ROOT defaults to the repository root. Refuses (exit 2) an image that is not
# a lowercase registry reference with a tag, a digest that is not
# sha256:<64 lowercase hex>, a commit that is not 40 lowercase hex; refuses
# (exit 1) a file whose line is not exactly the development value, so that a
# release never ships a file it did not pin (nor pins one twice).
set -euo pipefail

usage() { echo "usage: $0 action IMAGE:TAG sha256:DIGEST [ROOT] | workflow OWNER/REPO COMMIT [ROOT]" >&2; exit 2; }
refuse() { echo "release-pin: $*" >&2; exit 2; }
[ $# -ge 3 ] && [ $# -le 4 ] || usage
mode=$1
root=${4:-$(cd "$(dirname "$0")/.." && pwd)}

# rewrite FILE OLD NEW: OLD must be the whole of exactly one line.
rewrite() {
  local file=$1 old=$2 new=$3 n
  [ -f "$file" ] || { echo "release-pin: $file: not found" >&2; exit 1; }
  n=$(grep -cxF -- "$old" "$file" || true)
  if [ "$n" != 1 ]; then
    echo "release-pin: $file: expected exactly one line '$old', found $n (already pinned, or changed?)" >&2
    exit 1
  fi
  local tmp; tmp=$(mktemp "$file.XXXXXX")
  OLD=$old NEW=$new awk '$0 == ENVIRON["OLD"] { print ENVIRON["NEW"]; next } { print }' "$file" >"$tmp"
  chmod --reference="$file" "$tmp" 2>/dev/null || true
  mv "$tmp" "$file"
  grep -qxF -- "$new" "$file" || { echo "release-pin: $file: rewrite did not take" >&2; exit 1; }
  echo "pinned $file: $new"
}

case $mode in
action)
  image=$2 digest=$3
  # registry host / path components, lowercase (GHCR and the distribution
  # reference grammar), then a tag.
  [[ $image =~ ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] ||
    refuse "image '$image' is not a lowercase REGISTRY/OWNER/NAME:TAG reference"
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || refuse "'$digest' is not a digest (sha256:<64 lowercase hex>)"
  ref="docker://$image@$digest"
  # Both files are checked before either is written.
  for f in action.yml:Dockerfile verify/action.yml:../Dockerfile; do
    n=$(grep -cxF -- "  image: ${f#*:}" "$root/${f%%:*}" 2>/dev/null || true)
    [ "$n" = 1 ] || { echo "release-pin: $root/${f%%:*}: expected exactly one line '  image: ${f#*:}', found ${n:-0} (already pinned, or changed?)" >&2; exit 1; }
  done
  rewrite "$root/action.yml" "  image: Dockerfile" "  image: $ref"
  rewrite "$root/verify/action.yml" "  image: ../Dockerfile" "  image: $ref"
  ;;
workflow)
  repo=$2 commit=$3
  [[ $repo =~ ^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$ ]] || refuse "'$repo' is not OWNER/REPO"
  [[ $commit =~ ^[0-9a-f]{40}$ ]] || refuse "'$commit' is not a full commit SHA (40 lowercase hex)"
  rewrite "$root/.github/workflows/proofgate.yml" "        uses: ./" "        uses: $repo@$commit"
  ;;
*) usage ;;
esac
