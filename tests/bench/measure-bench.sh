#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# measure-bench.sh - what the measurement columns cost on a process with
# many mappings (issue 4, SPEC §9).
#
# Usage: tests/bench/measure-bench.sh [BUILD_DIR]
#
# BUILD_DIR is a built tree (default: the repository root) holding
# ./pmadvise and tests/helpers/maptarget (`make && make tests/helpers/maptarget`);
# this script builds nothing. It starts `maptarget many=N` (N=60000 unless
# the environment sets N; vm.max_map_count must allow it) and times, in
# alternation, REPS times each (default 7):
#
#   A  pmadvise -p PID --select all cold -o +RSS,RSS-AFTER >/dev/null
#   B  cat /proc/PID/smaps >/dev/null; cat /proc/PID/smaps >/dev/null
#      (how a user measures before and after today)
# and, for reference only (to tell measuring from printing a 60 000-row table):
#   C  pmadvise -p PID --select all cold >/dev/null          (no measurement)
#   D  pmadvise -p PID --select all cold -r -o +RSS,RSS-AFTER >/dev/null  (raw table)
#   E  pmadvise -p PID --select all cold -q --summary 2>/dev/null  (measured, no table)
#
# and prints a markdown table (median, min-max, in ms) and the ratio of the
# medians A/B; the target is A/B < 1. A is run once more first to check that
# it succeeds and prints one row per mapping. Each timing is wall-clock time
# of the whole command, taken with date +%s%N. Run by hand, or by
# `make bench`. Root is not needed, but the fallback path
# (PMADVISE_PAGEMAP=read, set it in the environment to time that one) needs
# root to see huge pages.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../..}" && pwd)
N=${N:-60000}
REPS=${REPS:-7}
pmadvise=$build/pmadvise
maptarget=$build/tests/helpers/maptarget

die() { echo "measure-bench: $*" >&2; exit 1; }

[ -x "$pmadvise" ] || die "$pmadvise is not built (run make in $build)"
[ -x "$maptarget" ] || die "$maptarget is not built (run make tests/helpers/maptarget in $build)"

# maptarget's own mappings (program, libc, stack, guards...) need room too
max_maps=$(cat /proc/sys/vm/max_map_count)
[ "$max_maps" -ge $((N + 200)) ] ||
	die "vm.max_map_count is $max_maps, too small for $N mappings: sysctl -w vm.max_map_count=$((N + 1000))"

workdir=$(mktemp -d "${TMPDIR:-/tmp}/measure-bench.XXXXXX")
target_pid=
cleanup() {
	if [ -n "$target_pid" ]; then
		kill -TERM "$target_pid" 2>/dev/null || true
		wait "$target_pid" 2>/dev/null || true
	fi
	rm -rf "$workdir"
}
trap cleanup EXIT

: >"$workdir/target.out"	# before the target: grep must find it
"$maptarget" -d "$workdir" "many=$N" >"$workdir/target.out" 2>"$workdir/target.err" &
target_pid=$!
for ((i = 0; i < 600; i++)); do
	grep -qx ready "$workdir/target.out" && break
	kill -0 "$target_pid" 2>/dev/null || die "maptarget failed: $(cat "$workdir/target.err")"
	sleep 0.05
done
grep -qx ready "$workdir/target.out" || die "maptarget many=$N not ready after 30 s"
nmaps=$(wc -l <"/proc/$target_pid/maps")

run_a() { "$pmadvise" -p "$target_pid" --select all cold -o +RSS,RSS-AFTER >/dev/null; }
run_b() { cat "/proc/$target_pid/smaps" >/dev/null; cat "/proc/$target_pid/smaps" >/dev/null; }
run_c() { "$pmadvise" -p "$target_pid" --select all cold >/dev/null; }
run_d() { "$pmadvise" -p "$target_pid" --select all cold -r -o +RSS,RSS-AFTER >/dev/null; }
run_e() { "$pmadvise" -p "$target_pid" --select all cold -q --summary 2>/dev/null; }

# A must work, and measure every mapping, before its time means anything
rows=$("$pmadvise" -p "$target_pid" --select all cold -r -n -o RSS,RSS-AFTER | wc -l)
[ "$rows" -ge "$N" ] || die "pmadvise printed $rows rows for $nmaps mappings"
measured=$("$pmadvise" -p "$target_pid" --select all cold -r -n -o RSS,RSS-AFTER |
	awk '$1 != "" && $2 != ""' | wc -l)
[ "$measured" -eq "$rows" ] || die "only $measured of $rows rows have RSS and RSS-AFTER"

# time_ns FUNCTION: wall-clock nanoseconds of one call
time_ns() {
	local t0 t1
	t0=$(date +%s%N)
	"$1" || die "$1 failed"
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

declare -a ta tb tc td te
run_a; run_b; run_c; run_d; run_e	# warm up caches, once each
for ((i = 0; i < REPS; i++)); do
	ta+=("$(time_ns run_a)")
	tb+=("$(time_ns run_b)")
	tc+=("$(time_ns run_c)")
	td+=("$(time_ns run_d)")
	te+=("$(time_ns run_e)")
done

# stats NS...: "median min max" in nanoseconds
stats() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END {
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.0f %.0f %.0f\n", med, v[1], v[NR]
		}'
}
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }

read -r a_med a_min a_max < <(stats "${ta[@]}")
read -r b_med b_min b_max < <(stats "${tb[@]}")
read -r c_med c_min c_max < <(stats "${tc[@]}")
read -r d_med d_min d_max < <(stats "${td[@]}")
read -r e_med e_min e_max < <(stats "${te[@]}")
ratio=$(awk -v a="$a_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')

echo "measure-bench: $nmaps mappings in /proc/$target_pid/maps (many=$N), $REPS runs each," \
	"pagemap path: ${PMADVISE_PAGEMAP:-default (PAGEMAP_SCAN where available)}"
echo
echo "| case | command | median ms | min-max ms |"
echo "| --- | --- | ---: | ---: |"
echo "| A | \`pmadvise --select all cold -o +RSS,RSS-AFTER\` | $(ms "$a_med") | $(ms "$a_min")-$(ms "$a_max") |"
echo "| B | \`cat smaps\` twice | $(ms "$b_med") | $(ms "$b_min")-$(ms "$b_max") |"
echo "| C | \`pmadvise --select all cold\` (reference: no measurement) | $(ms "$c_med") | $(ms "$c_min")-$(ms "$c_max") |"
echo "| D | \`pmadvise --select all cold -r -o +RSS,RSS-AFTER\` (reference: raw) | $(ms "$d_med") | $(ms "$d_min")-$(ms "$d_max") |"
echo "| E | \`pmadvise --select all cold -q --summary\` (reference: no table) | $(ms "$e_med") | $(ms "$e_min")-$(ms "$e_max") |"
echo
if awk -v r="$ratio" 'BEGIN { exit !(r < 1) }'; then
	echo "A/B = $ratio (target < 1: met)"
else
	echo "A/B = $ratio (target < 1: NOT met)"
fi
echo "for reference: C/B = $(awk -v a="$c_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')," \
	"D/B = $(awk -v a="$d_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')," \
	"E/B = $(awk -v a="$e_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')"
