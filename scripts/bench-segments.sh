#!/usr/bin/env bash
# bench-segments.sh (bash scripts/bench.sh segments [ROUNDS]): the segmented
# log figures of docs/performance.md (ADR 0022), each against its baseline in the
# same run, interleaved:
#   1. events verify of a 1 000 000-event log in 100 segments vs sha256sum
#      of the same files (wall and CPU medians)
#   2. open + append of one event (fsynced) + close at 1 000 000 events vs
#      at 1 000 (BenchmarkAppendLatency1Mvs1k, kernel/eventlog)
# No Docker. EVENTS overrides the 1 000 000.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
EVENTS=${EVENTS:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/proofgate" ./cmd/proofgate
go build -o "$work/benchgen" ./internal/benchgen
state="$work/state"
id=$("$work/benchgen" -state "$state" -events "$EVENTS" -segments 100)
dir="$state/runs/$id"
files=$(ls "$dir"/events.*.ndjson "$dir"/events.ndjson | grep -v head)
nseg=$(ls "$dir"/events.[0-9]*.ndjson | wc -l)
mib=$(($(cat $files | wc -c) / 1048576))
sync
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# measure CMD...: print "wall_ms cpu_ms" of one run (output discarded).
measure() {
	/usr/bin/time -f '%e %U %S' -o "$work/t" "$@" >/dev/null 2>&1
	awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$work/t"
}
vw="" vc="" sw="" sc=""
for _ in $(seq "$ROUNDS"); do
	read -r w c < <(measure "$work/proofgate" --state "$state" events verify "$id")
	vw="$vw $w" vc="$vc $c"
	# shellcheck disable=SC2086
	read -r w c < <(measure sha256sum $files)
	sw="$sw $w" sc="$sc $c"
done
echo "Segmented logs: $(nproc) cores, $ROUNDS rounds, medians in ms"
echo
printf '| %-70s | %9s | %9s | %6s |\n' measurement ProofGate baseline ratio
printf '| %-70s | %9s | %9s | %5s× |\n' "events verify, $EVENTS events in $nseg segments ($mib MiB) vs sha256sum, wall" "$(echo $vw | median)" "$(echo $sw | median)" "$(ratio "$(echo $vw | median)" "$(echo $sw | median)")"
printf '| %-70s | %9s | %9s | %5s× |\n' "the same, CPU (user + system)" "$(echo $vc | median)" "$(echo $sc | median)" "$(ratio "$(echo $vc | median)" "$(echo $sc | median)")"
rm -rf "$state"
PG_BENCH_EVENTS=$EVENTS go test -run '^$' -bench 'AppendLatency1Mvs1k' -benchtime "${ROUNDS}x" -timeout 30m ./kernel/eventlog/ |
	awk '/^BenchmarkAppendLatency/ {for (i = 1; i <= NF; i++) {if ($(i+1) == "1M-us") b = $i; if ($(i+1) == "1k-us") s = $i}
		printf "| %-70s | %9s | %9s | %5.2f× |\n", "open + append one event + close at 1M events vs at 1k (µs, 30 rounds/iter)", b, s, b / s}'
