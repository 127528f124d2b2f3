# bench-warm.sh: measurement 7 of bench.sh, sourced by `bash scripts/bench.sh
# warm` (it uses bench.sh's $work, $PG, elapsed_ms, median, row, ROUNDS).
#
# This repository (a clone of HEAD) is the workload: `go vet` and `go test
# -count=1` of two kernel packages and `go build ./cmd/proofgate`, as three
# checks through `proofgate run --jobs 1` in the Go toolchain image
# (testimage.EnsureGo: network none, read-only root and workspace), against
# the same three commands run bare on the host, one after another, with the
# same GOFLAGS. Warm: the sandbox's go-build cache and the host's GOCACHE
# already hold the build (both after the cold round), modules present on
# both sides (the sandbox's go-mod cache is filled once, before any round,
# by `go mod download` from the host's module cache: no network). Cold: an
# emptied go-build cache / GOCACHE on each side, modules still present, as
# on a CI runner that restored only its module cache. Tests always run
# (-count=1): a cached test result would not be a test.
#
# The cache mount cost per check is (a run of 3 trivial checks that mount
# both caches, now warm - the same run without caches) / 3: locks, tree
# digest and stamp, bind mounts.

GOIMAGE=$(go run ./internal/testimage/cmd/ensure -go)
repo="$work/repo"
git clone -q --no-hardlinks . "$repo"
root="$work/cache-root"
gobuild="$root/local/go-build" gomod="$root/local/go-mod"
mkdir -p "$gobuild" "$gomod"
chmod 0777 "$gobuild" "$gomod"
hostmod=$(go env GOMODCACHE)
(cd "$repo" && GOMODCACHE="$gomod" GOPROXY="file://$hostmod/cache/download" GOSUMDB=off GOFLAGS=-mod=mod \
	go mod download) >/dev/null
chmod -R a+rX "$gomod"
export PROOFGATE_CACHE_ROOT="$root"

goenv='{HOME: /home/sandbox, GOCACHE: /cache/go-build, GOMODCACHE: /cache/go-mod, GOFLAGS: "-mod=readonly -buildvcs=false", GOPROXY: "off", GOTOOLCHAIN: local, CGO_ENABLED: "0"}'
VET=(go vet ./internal/canon ./kernel/eventlog)
TEST=(go test -count=1 ./internal/canon ./kernel/eventlog)
yamlargv() { local IFS=,; echo "[$*]"; }
warmcontract() { # warmcontract CHECKS-YAML [CACHES-YAML]
	printf 'version: 1\nname: warm\n%sdefaults: {runtime: docker, image: "%s", workspace: readonly, network: none, timeout: 20m, output_limit: 4MiB, resources: {memory: 4GiB, cpus: %d, pids: 1024}, tmpfs: 1GiB, env: %s}\nchecks:\n%s\n' \
		"${2:-}" "$GOIMAGE" "$(nproc)" "$goenv" "$1"
}
declared='caches: {go-build: {mount: /cache/go-build}, go-mod: {mount: /cache/go-mod}}\n'
uses='caches: [go-build, {name: go-mod, readonly: true}]'
printf -v declared "$declared"
cat >"$repo/.proofgate-warm.yaml" <<EOF
$(warmcontract "  - {id: vet, run: $(yamlargv "${VET[@]}"), $uses}
  - {id: test, run: $(yamlargv "${TEST[@]}"), $uses}
  - {id: build, run: [go, build, -o, /tmp/proofgate, ./cmd/proofgate], $uses}" "$declared")
EOF
cat >"$repo/.proofgate-trivial-caches.yaml" <<EOF
$(warmcontract "$(for i in 1 2 3; do printf '  - {id: t%d, run: [/bin/helper, "true"], %s}\n' "$i" "$uses"; done)" "$declared")
EOF
cat >"$repo/.proofgate-trivial.yaml" <<EOF
$(warmcontract "$(for i in 1 2 3; do printf '  - {id: t%d, run: [/bin/helper, "true"]}\n' "$i"; done)")
EOF
printf '.proofgate/runs/\n' >>"$repo/.git/info/exclude"
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@x.invalid commit -q -m "bench contracts"

hostcache="$work/host-gocache"
# The bare build writes a new binary each round, as on a fresh runner: an
# existing output with the right build ID would let go build skip the link
# (the sandbox's /tmp is always new).
bare() { # the three commands on the host
	rm -f "$work/bare-proofgate"
	(cd "$repo" && export GOCACHE="$hostcache" GOMODCACHE="$hostmod" GOFLAGS="-mod=readonly -buildvcs=false" GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 &&
		"${VET[@]}" && "${TEST[@]}" && go build -o "$work/bare-proofgate" ./cmd/proofgate)
}
sandboxed() { (cd "$repo" && "$PG" run --quiet --jobs 1 --contract "${1:-.proofgate-warm.yaml}"); }
empty() { find "$1" -mindepth 1 -delete 2>/dev/null || true; }

a="" b=""
for _ in $(seq "$COLD_ROUNDS"); do
	empty "$hostcache"
	b="$b $(elapsed_ms bare)"
	empty "$gobuild"
	a="$a $(elapsed_ms sandboxed)"
done
cold_a=$(echo $a | median) cold_b=$(echo $b | median)
row "repo vet+test+build, cold build cache vs bare host, cold" "$cold_a" "$cold_b"

a="" b=""
for _ in $(seq "$ROUNDS"); do
	b="$b $(elapsed_ms bare)"
	a="$a $(elapsed_ms sandboxed)"
done
warm_a=$(echo $a | median) warm_b=$(echo $b | median)
row "repo vet+test+build, warm caches vs bare host, warm" "$warm_a" "$warm_b"

a="" b=""
for _ in $(seq "$ROUNDS"); do
	a="$a $(elapsed_ms sandboxed .proofgate-trivial-caches.yaml)"
	b="$b $(elapsed_ms sandboxed .proofgate-trivial.yaml)"
done
mount_ms=$((($(echo $a | median) - $(echo $b | median)) / 3))
echo
echo "cache mount cost per check: $mount_ms ms ($(find "$gobuild" | wc -l) go-build entries, $(find "$gomod" | wc -l) go-mod entries)"
echo "cold sandbox ratio: $(ratio "$cold_a" "$cold_b")"
echo "warm sandbox ratio: $(ratio "$warm_a" "$warm_b")"
