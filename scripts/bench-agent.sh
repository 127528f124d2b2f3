#!/usr/bin/env bash
# bench-agent.sh: the agent-session figures, run by `bash scripts/bench.sh
# agent [COUNT]` (COUNT: go test -count, default 5; the median is reported).
#
#   governed call ratio: a governed tool call (policy gate, receipts with
#     their fsyncs, process runtime) over executing the same argv directly,
#     both interleaved call by call in one run so that a shared machine's
#     load hits both alike: internal/session's BenchmarkGovernedVsDirect
#     (medians; the fsyncs per call and the time spent in them, and the
#     ratio without that time, whose goal is ≤ 2: ADR 0020); the fsyncs one
#     call costs measured by strace too (TestFsyncsPerCall);
#   growth: the mean governed call over calls 1-10 and 191-200 of one
#     session (BenchmarkGovernedCallGrowth): flat, since each lock hold
#     re-reads only the events appended since the last (run.Reopen);
#   manifest dedup ratio: bytes a 28-turn conversation writes as whole
#     inputs over what it writes with message manifests: kernel/input's
#     BenchmarkStoreTurn/whole and /manifest (written-B/turn).
#
# BENCH_TMPDIR puts the benchmarks' state directories (their TMPDIR; Go's
# build directory goes there too: the testing package's TempDir follows
# GOTMPDIR when it is set, so it must not be) on another file system: the
# creates a governed call cannot avoid (its new input and output blobs)
# cost what the file system makes them cost, and ext4 without a journal
# makes a create pay for every inode freed near it in the last minutes
# (ADR 0028). For a journaled ext4 beside an unjournaled root, as root:
#   truncate -s 2G /tmp/j.img && mkfs.ext4 -q /tmp/j.img
#   mkdir -p /mnt/jext4 && mount -o loop /tmp/j.img /mnt/jext4
#   BENCH_TMPDIR=/mnt/jext4 bash scripts/bench.sh agent
#
# Both benchmarks belong to their packages; this script only runs and
# reads them, and fails naming the one it cannot find.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-5}
if [ -n "${BENCH_TMPDIR:-}" ]; then
	unset GOTMPDIR
	export TMPDIR=$BENCH_TMPDIR
	echo "state directories in $TMPDIR ($(df -T "$TMPDIR" | awk 'NR==2 {print $2}'))"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# bench PKG PATTERN: go test -bench output of PKG's benchmarks, into $out.
bench() {
	if ! go test -run '^$' -bench "$2" -benchtime "${BENCHTIME:-1x}" -count "$COUNT" "$1" >>"$out" 2>&1; then
		cat "$out" >&2
		echo "bench agent: go test -bench '$2' $1 failed" >&2
		exit 1
	fi
}
# metric NAME-REGEX UNIT: the median of UNIT over the benchmark lines whose
# name matches NAME-REGEX; empty when there is none.
metric() {
	awk -v re="$1" -v unit="$2" '$1 ~ re { for (i = 2; i < NF; i++) if ($(i+1) == unit) print $i }' "$out" |
		sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'
}
need() { # need VALUE WHAT
	if [ -z "$1" ]; then
		echo "bench agent: no $2 in the benchmark output (see above); the benchmark is missing or was renamed" >&2
		cat "$out" >&2
		exit 1
	fi
}

BENCHTIME=${BENCHTIME:-200x} bench ./internal/session '^BenchmarkGovernedVsDirect$'
g='^BenchmarkGovernedVsDirect(-[0-9]+)?$'
governed=$(metric "$g" µs/governed)
direct=$(metric "$g" µs/direct)
insync=$(metric "$g" µs-in-fsync/call)
net=$(metric "$g" ratio-wo-fsync)
need "$governed" "internal/session BenchmarkGovernedVsDirect (µs/governed)"
need "$direct" "internal/session BenchmarkGovernedVsDirect (µs/direct)"
fsyncs=$(go test -run '^TestFsyncsPerCall$' -count 1 -v ./internal/session 2>&1 | sed -n 's/.*: \([0-9.]*\) per call$/\1/p' | head -1)

BENCHTIME=1x bench ./internal/session '^BenchmarkGovernedCallGrowth$'
early=$(metric '^BenchmarkGovernedCallGrowth(-[0-9]+)?$' ns/call@1-10)
late=$(metric '^BenchmarkGovernedCallGrowth(-[0-9]+)?$' ns/call@191-200)
need "$early" "internal/session BenchmarkGovernedCallGrowth (ns/call@1-10)"
need "$late" "internal/session BenchmarkGovernedCallGrowth (ns/call@191-200)"

BENCHTIME=${BENCHTIME:-3x} bench ./kernel/input 'StoreTurn'
whole=$(metric 'StoreTurn/whole(-[0-9]+)?$' written-B/turn)
manifest=$(metric 'StoreTurn/manifest(-[0-9]+)?$' written-B/turn)
need "$whole" "kernel/input BenchmarkStoreTurn/whole (written-B/turn)"
need "$manifest" "kernel/input BenchmarkStoreTurn/manifest (written-B/turn)"

awk -v g="$governed" -v d="$direct" 'BEGIN {printf "governed call: %.2f ms, direct: %.2f ms (medians, interleaved)\n", g / 1e3, d / 1e3}'
awk -v g="$governed" -v d="$direct" 'BEGIN {printf "governed call ratio: %.2f\n", g / d}'
awk -v y="$insync" -v n="$net" 'BEGIN {printf "of which in fsync: %.2f ms; ratio without it: %.2f (goal ≤ 2)\n", y / 1e3, n}'
awk -v e="$early" -v l="$late" 'BEGIN {printf "governed call over one session: %.2f ms at calls 1-10, %.2f ms at calls 191-200\n", e / 1e6, l / 1e6}'
if [ -n "$fsyncs" ]; then
	echo "fsyncs per governed call: $fsyncs"
else
	echo "fsyncs per governed call: not measured (TestFsyncsPerCall needs strace)"
fi
awk -v w="$whole" -v m="$manifest" 'BEGIN {printf "bytes per turn: %.0f whole, %.0f with manifests\n", w, m}'
awk -v w="$whole" -v m="$manifest" 'BEGIN {printf "manifest dedup ratio: %.1f\n", w / m}'
