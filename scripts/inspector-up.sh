#!/usr/bin/env bash
# Installs @modelcontextprotocol/inspector-cli (the MCP inspector's CLI, a
# client ProofGate did not write) from scripts/mcp-inspector/package-lock.json
# with `npm ci`, and prints the path of its binary:
#
#   export PROOFGATE_INSPECTOR="$(bash scripts/inspector-up.sh)" PROOFGATE_REQUIRE_INSPECTOR=1
#
# cmd/proofgate's inspector tests drive `proofgate mcp` with it over stdio
# and fail, not skip, under PROOFGATE_REQUIRE_INSPECTOR=1 when it is missing.
# The packages go to $(go env GOPATH)/bin/proofgate-inspector (outside the
# work tree); they are reinstalled when the lock file changed. Progress goes
# to stderr; stdout is the path.
set -euo pipefail
src="$(cd "$(dirname "$0")/mcp-inspector" && pwd)"
dir="$(go env GOPATH)/bin/proofgate-inspector"
bin="$dir/node_modules/.bin/mcp-inspector-cli"
command -v npm >/dev/null 2>&1 || { echo "inspector-up: npm is not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dir"
stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
if [ -x "$bin" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "inspector-up: inspector-cli already in $dir" >&2
else
  echo "inspector-up: npm ci into $dir" >&2
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  # inspector-cli 1.0.3 reads its own package.json through a path that it
  # tests relative to the working directory (upstream inspector issue #1334,
  # closed unfixed with v1's deprecation): "../package.json" when the
  # working directory's parent has one, else "../../package.json" next to
  # the package, which npm does not create. It then fails from any other
  # directory. A copy of its package.json there makes it work from every
  # directory; the package's own files are unchanged.
  cp "$dir/node_modules/@modelcontextprotocol/inspector-cli/package.json" "$dir/node_modules/@modelcontextprotocol/package.json"
  echo "$stamp" > "$dir/stamp"
fi
echo "$bin"
