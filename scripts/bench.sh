#!/usr/bin/env bash
# bench.sh: the figures in docs/performance.md, each a ratio
# against the obvious baseline measured in the same run, interleaved:
#   1. events verify on a 100 000-event log   vs sha256sum of the same file
#   2. event appends with fsync                 (events/s, go test -bench)
#   3. process runtime, per trivial check       vs running /bin/true directly
#   4. docker runtime, per trivial check        vs docker run --rm --network none
#   5. 20 docker checks --jobs 2                vs --jobs 1
#   6. bundle export / verify of 100 MiB output vs sha256sum of the same bytes
#   7. (warm only) this repository's vet, test and build as three sandboxed
#      checks with warm caches vs the same commands bare on the host with a
#      warm GOCACHE/GOMODCACHE; cold vs cold; the cache mount cost per check
#   8. (agent only, scripts/bench-agent.sh) a governed tool call vs the same
#      argv run directly; the manifest dedup ratio of a 28-turn session
#   9. (shards only) merge of 10 shards at 50/100/200 trivial checks (linear
#      in checks); bundle verify of 200 checks merged from 10 shards vs the
#      same 200 checks run on one machine, interleaved (ratio, goal <= 1.2)
#  10. (segments only, scripts/bench-segments.sh) events verify of 1 000 000
#      events in 100 segments vs sha256sum; append latency at 1M vs 1k
# Usage: bash scripts/bench.sh [ROUNDS]        (default 5; needs root for Docker)
#        bash scripts/bench.sh warm [ROUNDS]   (only 7; COLD_ROUNDS, default 1,
#        sets its cold rounds: each takes minutes)
#        bash scripts/bench.sh agent [COUNT]  (only 8; no Docker)
#        bash scripts/bench.sh shards [COUNT] (only 9; no Docker; COUNT runs)
#        bash scripts/bench.sh segments [ROUNDS] (only 10; no Docker)
#        bash scripts/bench.sh firstday       (only 11: TestFirstDay's figures)
#        bash scripts/bench.sh products [COUNT] (only 12; COUNT runs of 5)
#  11. (firstday only) init to a green run on spf13/cobra and fastq, and a
#      warm sandboxed run vs the same commands bare with warm caches and vs
#      the same commands as plain docker runs (medians of
#      PROOFGATE_FIRSTDAY_ROUNDS interleaved rounds, default 3; needs
#      the registry mirror: scripts/mirror-up.sh, and the network of the Go
#      module proxy and npm registry)
#  12. (products only) what reading a 64 MiB product out of a copy-mode
#      sandbox adds to a check vs what `docker cp | sha256sum` adds to the
#      same steps through the CLI (BenchmarkProducts)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = agent ]; then
	shift
	exec bash scripts/bench-agent.sh "$@"
fi
if [ "${1:-}" = shards ]; then
	count=${2:-3}
	go test -run '^$' -bench 'BenchmarkMerge' -benchtime 5x -count "$count" ./internal/shard | grep -E '^Benchmark'
	go test -run '^$' -bench 'BenchmarkVerifyMergedVsSingle200' -benchtime 30x -count "$count" ./bundle | grep -E '^Benchmark'
	exit 0
fi
if [ "${1:-}" = products ]; then
	count=${2:-3}
	go test -run '^$' -bench 'BenchmarkProducts$' -benchtime 5x -count "$count" ./internal/docker | grep -E '^Benchmark'
	exit 0
fi
if [ "${1:-}" = firstday ]; then
	PROOFGATE_MIRROR="${PROOFGATE_MIRROR:-$(bash scripts/mirror-up.sh)}" PROOFGATE_FIRSTDAY_WARM=1 \
		go test -count=1 -run '^TestFirstDay$' -v -timeout 30m ./cmd/proofgate | grep -E 'FIRSTDAY|^(ok|FAIL|---)'
	exit 0
fi
if [ "${1:-}" = segments ]; then
	shift
	exec bash scripts/bench-segments.sh "$@"
fi
MODE=all
if [ "${1:-}" = warm ]; then
	MODE=warm
	shift
fi
ROUNDS=${1:-5}
COLD_ROUNDS=${COLD_ROUNDS:-1}

bash scripts/docker-up.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/proofgate" ./cmd/proofgate
go build -o "$work/benchgen" ./internal/benchgen
PG="$work/proofgate"
IMAGE=$(go run ./internal/testimage/cmd/ensure)

now() { date +%s%N; }
# elapsed_ms CMD...: run once, print wall milliseconds (output discarded;
# exit codes 0 and 3 — awaiting approval — are expected).
elapsed_ms() {
	local t0 t1 rc=0
	t0=$(now)
	"$@" >/dev/null 2>&1 || rc=$?
	t1=$(now)
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then echo "bench: '$*' exited $rc" >&2; exit 1; fi
	echo $(((t1 - t0) / 1000000))
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
row() { printf '| %-58s | %10s | %10s | %6s× |\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }

mkrepo() { # mkrepo DIR CONTRACT
	mkdir -p "$1/.proofgate"
	printf '%s\n' "$2" >"$1/.proofgate/contract.yaml"
	printf '.proofgate/runs/\n' >"$1/.gitignore"
	chmod 755 "$1"
	git -C "$1" init -q .
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@x.invalid commit -q -m init
}
checks() { # checks N ARGV-YAML
	for i in $(seq 1 "$1"); do printf '  - {id: c%d, run: %s}\n' "$i" "$2"; done
}
pgrun() { (cd "$1" && shift && "$PG" run --quiet "$@"); }

echo "ProofGate benchmarks: $(nproc) cores, $ROUNDS rounds each, medians in ms"
echo
printf '| %-58s | %10s | %10s | %7s |\n' "measurement" "ProofGate" "baseline" "ratio"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "------------" "------------" "---------"

if [ "$MODE" = warm ]; then
	# shellcheck source=scripts/bench-warm.sh
	. scripts/bench-warm.sh
	exit 0
fi

# 1. events verify vs sha256sum
state="$work/events"
id=$("$work/benchgen" -state "$state" -events 100000)
# every file of the log: the sealed segments (events.0000000N.ndjson, at
# the default 10 MiB threshold) in order, then the active events.ndjson
logs=$(ls "$state/runs/$id"/events.*.ndjson 2>/dev/null | sort; echo "$state/runs/$id/events.ndjson")
a="" b=""
for _ in $(seq "$ROUNDS"); do
	a="$a $(elapsed_ms "$PG" --state "$state" events verify "$id")"
	# shellcheck disable=SC2086 # one word per file
	b="$b $(elapsed_ms sha256sum $logs)"
done
# shellcheck disable=SC2086
size=$(cat $logs | wc -c)
row "events verify, 100 000 events ($((size / 1048576)) MiB, $(echo "$logs" | wc -l) files) vs sha256sum" "$(echo $a | median)" "$(echo $b | median)"

# 3. process runtime per check: (run of 21 checks - run of 1) / 20 vs /bin/true
p1="$work/p1" p21="$work/p21"
mkrepo "$p1" "$(printf 'version: 1\nname: b\ndefaults: {runtime: process}\nchecks:\n%s' "$(checks 1 '[/bin/true]')")"
mkrepo "$p21" "$(printf 'version: 1\nname: b\ndefaults: {runtime: process}\nchecks:\n%s' "$(checks 21 '[/bin/true]')")"
a="" b=""
for _ in $(seq "$ROUNDS"); do
	t1=$(elapsed_ms pgrun "$p1" --jobs 1)
	t21=$(elapsed_ms pgrun "$p21" --jobs 1)
	a="$a $(awk -v d=$((t21 - t1)) 'BEGIN {printf "%.1f", d / 20}')" # not truncated to whole ms
	b="$b $(elapsed_ms sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /bin/true; done')"
done
row "process runtime, per trivial check vs /bin/true (×20 each)" "$(echo $a | median)" "$(awk -v x="$(echo $b | median)" 'BEGIN {printf "%.1f", x / 20}')"

# 4. docker runtime per check vs docker run --rm --network none
d1="$work/d1" d21="$work/d21"
dc="version: 1\nname: b\ndefaults: {runtime: docker, image: \"$IMAGE\", workspace: none, resources: {memory: 64MiB, cpus: 1, pids: 32}}\nchecks:\n"
mkrepo "$d1" "$(printf "$dc%s" "$(checks 1 '[/bin/helper, "true"]')")"
mkrepo "$d21" "$(printf "$dc%s" "$(checks 21 '[/bin/helper, "true"]')")"
a="" b=""
for _ in $(seq "$ROUNDS"); do
	t1=$(elapsed_ms pgrun "$d1" --jobs 1)
	t21=$(elapsed_ms pgrun "$d21" --jobs 1)
	a="$a $(awk -v d=$((t21 - t1)) 'BEGIN {printf "%.1f", d / 20}')" # not truncated to whole ms
	b="$b $(elapsed_ms docker run --rm --network none "$IMAGE" /bin/helper true)"
done
row "docker runtime, per trivial check vs docker run --rm" "$(echo $a | median)" "$(echo $b | median)"

# 5. 20 docker checks, --jobs 2 vs --jobs 1
d20="$work/d20"
mkrepo "$d20" "$(printf "$dc%s" "$(checks 20 '[/bin/helper, "true"]')")"
a="" b=""
for _ in $(seq "$ROUNDS"); do
	a="$a $(elapsed_ms pgrun "$d20" --jobs 2)"
	b="$b $(elapsed_ms pgrun "$d20" --jobs 1)"
done
row "20 docker checks, --jobs 2 vs --jobs 1" "$(echo $a | median)" "$(echo $b | median)"

# 6. bundle export / verify of 100 MiB of check output vs sha256sum
big="$work/big"
mkrepo "$big" "$(printf 'version: 1\nname: b\ndefaults: {runtime: process, output_limit: 128MiB, timeout: 5m}\nchecks:\n  - {id: big, run: [head, -c, "104857600", /dev/urandom]}\n')"
pgrun "$big" >/dev/null 2>&1 || true
(cd "$big" && "$PG" approve latest --actor bench >/dev/null)
"$PG" keygen -o "$work/key.pem" >/dev/null
"$PG" trust add --store "$work/trust.json" --public-key "$work/key.pub.pem" >/dev/null
blob=$(find "$big/.proofgate/runs" -path '*blobs/sha256/*' -size +50M | head -n 1)
a="" b="" c="" d=""
for i in $(seq "$ROUNDS"); do
	a="$a $(elapsed_ms sh -c "cd '$big' && '$PG' bundle export latest --key '$work/key.pem' -o '$work/b$i.tar.gz'")"
	b="$b $(elapsed_ms sha256sum "$blob")"
	c="$c $(elapsed_ms "$PG" bundle verify "$work/b$i.tar.gz" --trust "$work/trust.json" \
		--commit "$(git -C "$big" rev-parse HEAD)" --contract "$big/.proofgate/contract.yaml")"
	d="$d $(elapsed_ms sha256sum "$work/b$i.tar.gz")"
	rm -f "$work/b$i.tar.gz"
done
row "bundle export, 100 MiB of output vs sha256sum of it" "$(echo $a | median)" "$(echo $b | median)"
row "bundle verify, 100 MiB bundle vs sha256sum of it" "$(echo $c | median)" "$(echo $d | median)"

echo
echo "event appends with fsync (go test -bench):"
go test -run '^$' -bench 'BenchmarkAppend$' -benchtime 2000x ./kernel/eventlog | grep -E '^Benchmark' || true
