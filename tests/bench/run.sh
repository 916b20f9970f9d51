#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - the pmadvise benchmark, run by `make bench`: what pmadvise costs
# over the kernel's own work, against what users write by hand, and what the
# measurement columns cost against reading smaps.
#
# Usage: tests/bench/run.sh [BUILD_DIR]
#
# BUILD_DIR (default: the source tree) holds ./pmadvise,
# tests/helpers/maptarget and the programs of tests/bench/ built by
# `make bench`; this script builds nothing.  For each N in SIZES (default
# "1000 10000 60000") it starts `maptarget many=N anon=1G file=1G` (N
# one-page mappings that do not merge, 1 GiB of written anonymous memory
# and 1 GiB of a file read in) and times, REPS times each (default 11),
# rotating through the cases so that none always runs first:
#
#   q       pmadvise -p PID cold --select all -q
#   table   pmadvise -p PID cold --select all            (default table)
#   json    pmadvise -p PID cold --select all -J
#   floor   floor PID 20: reads maps, the same batched calls, prints nothing
#   hand-c  handwritten PID 20: one process_madvise per mapping (C)
#   hand-py handwritten.py PID 20: the same in python3 with ctypes
#   scols   scols-only MAPS: libsmartcols alone printing the same table
#   scols-J scols-only -J MAPS: the same as JSON
#   measure pmadvise -p PID cold --select all -o +RSS,RSS-AFTER
#   smaps2  cat /proc/PID/smaps twice (how a user measures today)
#
# Each time is the wall clock of the whole command (bash's EPOCHREALTIME).
# Peak RSS comes from /usr/bin/time -v, syscall counts from strace -c (at the
# largest N).  scols-only reads a copy of the target's maps taken once, and
# its output is checked to be the same bytes as pmadvise's.  Prints a
# markdown report and writes it to RESULTS (default tests/bench/RESULTS.md
# next to this script).  Needs vm.max_map_count above the largest N, strace,
# /usr/bin/time (Debian: package time) and python3.

set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../..}" && pwd)
SIZES=${SIZES:-"1000 10000 60000"}
REPS=${REPS:-11}
BIG=${BIG:-1G}
RESULTS=${RESULTS:-$here/RESULTS.md}
ADVICE=cold
ADVICE_NUMBER=20	# MADV_COLD

pmadvise=$build/pmadvise
maptarget=$build/tests/helpers/maptarget
floor=$build/tests/bench/floor
handwritten=$build/tests/bench/handwritten
scols_only=$build/tests/bench/scols-only
handwritten_py=$here/handwritten.py
CASES="q table json floor hand-c hand-py scols scols-J measure smaps2"

die() { echo "bench: $*" >&2; exit 1; }

for prog in "$pmadvise" "$maptarget" "$floor" "$handwritten" "$scols_only"; do
	[ -x "$prog" ] || die "$prog is not built (run 'make bench' in $build)"
done
for tool in strace /usr/bin/time python3; do
	command -v "$tool" >/dev/null || die "$tool is needed (Debian: apt-get install strace time python3)"
done
# the interpreter itself, not a wrapper script in front of it (pyenv shims)
python=$(python3 -c 'import sys; print(sys.executable)')

largest=0
for n in $SIZES; do [ "$n" -gt "$largest" ] && largest=$n; done
max_maps=$(cat /proc/sys/vm/max_map_count)
[ "$max_maps" -ge $((largest + 200)) ] ||
	die "vm.max_map_count is $max_maps, too small for $largest mappings: sysctl -w vm.max_map_count=$((largest + 1000))"

workdir=$(mktemp -d "${TMPDIR:-/tmp}/pmadvise-bench.XXXXXX")
target_pid=
stop_target() {
	if [ -n "$target_pid" ]; then
		kill -TERM "$target_pid" 2>/dev/null || true
		wait "$target_pid" 2>/dev/null || true
		target_pid=
	fi
}
trap 'stop_target; rm -rf "$workdir"' EXIT

start_target() {
	local n=$1 i

	: >"$workdir/target.out"
	"$maptarget" -d "$workdir" "many=$n" "anon=$BIG" "file=$BIG" \
		>"$workdir/target.out" 2>"$workdir/target.err" &
	target_pid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -qx ready "$workdir/target.out" && return 0
		kill -0 "$target_pid" 2>/dev/null || die "maptarget failed: $(cat "$workdir/target.err")"
		sleep 0.05
	done
	die "maptarget many=$n not ready after 60 s"
}

# case_command CASE: the command of a case, in the array cmd; it writes to stdout.
case_command() {
	local pm=("$pmadvise" -p "$target_pid" "$ADVICE" --select all)

	case $1 in
	q)       cmd=("${pm[@]}" -q) ;;
	table)   cmd=("${pm[@]}") ;;
	json)    cmd=("${pm[@]}" -J) ;;
	floor)   cmd=("$floor" "$target_pid" "$ADVICE_NUMBER") ;;
	hand-c)  cmd=("$handwritten" "$target_pid" "$ADVICE_NUMBER") ;;
	hand-py) cmd=("$python" "$handwritten_py" "$target_pid" "$ADVICE_NUMBER") ;;
	scols)   cmd=("$scols_only" "$workdir/maps") ;;
	scols-J) cmd=("$scols_only" -J "$workdir/maps") ;;
	measure) cmd=("${pm[@]}" -o +RSS,RSS-AFTER) ;;
	smaps2)  cmd=(cat "/proc/$target_pid/smaps" "/proc/$target_pid/smaps") ;;
	esac
}

declare -A label=(
	[q]="\`pmadvise -q\`"
	[table]="\`pmadvise\` (default table)"
	[json]="\`pmadvise -J\`"
	[floor]="floor: maps + the same batched calls (C)"
	[hand-c]="by hand: one call per mapping (C)"
	[hand-py]="by hand: one call per mapping (python3 ctypes)"
	[scols]="libsmartcols alone, same table"
	[scols-J]="libsmartcols alone, same JSON"
	[measure]="\`pmadvise -o +RSS,RSS-AFTER\`"
	[smaps2]="\`cat smaps\` twice"
)
declare -A times med lo hi rss calls advise_calls probes

# stats US...: "median min max" in microseconds
stats() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END {
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.0f %.0f %.0f\n", med, v[1], v[NR]
		}'
}
ms() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1e3 }'; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# time_case CASE N: one timed run, appended to times[CASE,N]
time_case() {
	local cmd t0 t1

	case_command "$1"
	t0=${EPOCHREALTIME/./}
	"${cmd[@]}" >/dev/null 2>"$workdir/err" || die "$1 failed: $(cat "$workdir/err")"
	t1=${EPOCHREALTIME/./}
	times[$1,$2]+=" $((t1 - t0))"
}

# peak_rss CASE N: peak RSS in KiB of one run
peak_rss() {
	local cmd

	case_command "$1"
	/usr/bin/time -v -o "$workdir/time.out" "${cmd[@]}" >/dev/null 2>&1 ||
		die "$1 failed under /usr/bin/time"
	rss[$1,$2]=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$workdir/time.out")
}

# strace_case CASE N: all syscalls, process_madvise calls, and of those the probes (no iovec)
strace_case() {
	local cmd

	case_command "$1"
	strace -c -o "$workdir/strace.c" "${cmd[@]}" >/dev/null 2>&1 || die "$1 failed under strace"
	calls[$1,$2]=$(awk '$NF == "total" { print $4 }' "$workdir/strace.c")
	strace -e trace=process_madvise -o "$workdir/strace.pm" "${cmd[@]}" >/dev/null 2>&1 ||
		die "$1 failed under strace"
	advise_calls[$1,$2]=$(grep -c '^process_madvise(' "$workdir/strace.pm" || true)
	probes[$1,$2]=$(grep -c '^process_madvise([0-9]*, \[\], 0,' "$workdir/strace.pm" || true)
}

declare -A pieces nmaps same_table same_json
for n in $SIZES; do
	echo "bench: N=$n: starting the target (maptarget many=$n anon=$BIG file=$BIG)" >&2
	start_target "$n"
	cp "/proc/$target_pid/maps" "$workdir/maps"
	nmaps[$n]=$(wc -l <"$workdir/maps")
	pieces[$n]=$(grep -cvE ' \[(vvar|vvar_vclock|vsyscall)\]$' "$workdir/maps")

	# each case must work, and scols-only must print what pmadvise prints
	rows=$("$pmadvise" -p "$target_pid" "$ADVICE" --select all -r -n -o STATUS | grep -cx ok || true)
	[ "$rows" -eq "${pieces[$n]}" ] || die "pmadvise advised $rows of ${pieces[$n]} mappings"
	rows=$("$pmadvise" -p "$target_pid" "$ADVICE" --select all -r -n -o RSS,RSS-AFTER |
		awk 'NF == 2' | wc -l)
	[ "$rows" -eq "${pieces[$n]}" ] || die "pmadvise measured $rows of ${pieces[$n]} mappings"
	for c in table json scols scols-J; do
		case_command "$c"
		"${cmd[@]}" >"$workdir/$c.out" || die "$c failed"
	done
	cmp -s "$workdir/table.out" "$workdir/scols.out" && same_table[$n]=yes || same_table[$n]=NO
	cmp -s "$workdir/json.out" "$workdir/scols-J.out" && same_json[$n]=yes || same_json[$n]=NO
	for c in $CASES; do time_case "$c" warmup; done

	echo "bench: N=$n: timing $REPS rounds of: $CASES" >&2
	set -- $CASES
	ncases=$#
	for ((r = 0; r < REPS; r++)); do
		for ((k = 0; k < ncases; k++)); do
			idx=$(((r + k) % ncases + 1))
			time_case "${!idx}" "$n"
		done
	done
	for c in $CASES; do
		read -r med[$c,$n] lo[$c,$n] hi[$c,$n] < <(stats ${times[$c,$n]})
		[ "$c" = smaps2 ] || peak_rss "$c" "$n"
	done

	if [ "$n" -eq "$largest" ]; then
		echo "bench: N=$n: counting syscalls" >&2
		for c in q table json measure floor hand-c hand-py; do strace_case "$c" "$n"; done
	fi
	stop_target
done

# --- the report ---
N=$largest
mib() { [ -n "$1" ] && calc "%.1f" "$1 / 1024" || echo –; }
madvise_calls() {
	local n=${advise_calls[$1,$N]:-} p=${probes[$1,$N]:-0}

	if [ -z "$n" ]; then
		echo –
	elif [ "$p" -gt 0 ]; then
		echo "$((n - p)) + $p probe (no iovec)"
	else
		echo "$n"
	fi
}
verdict() { awk "BEGIN { exit !($1) }" && echo yes || echo "**no**"; }
report() {
	local c n

	echo "# pmadvise benchmark"
	echo
	echo "Made by \`make bench\` (tests/bench/run.sh) on $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo
	echo "- Machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
		"$(nproc) CPUs, $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM"
	echo "- Kernel: $(uname -sr) ($(uname -m)); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "- pmadvise: $("$pmadvise" --version)"
	echo "- Target: \`maptarget many=N anon=$BIG file=$BIG\`; advice $ADVICE; $REPS runs of each" \
		"case, rotating; wall clock of the whole command"
	echo
	echo "## N = $N ($((nmaps[$N])) mappings, ${pieces[$N]} pieces)"
	echo
	echo "| case | median ms | min–max ms | peak RSS MiB | syscalls | process_madvise calls |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for c in $CASES; do
		echo "| ${label[$c]} | $(ms "${med[$c,$N]}") | $(ms "${lo[$c,$N]}")–$(ms "${hi[$c,$N]}") |" \
			"$(mib "${rss[$c,$N]:-}") | ${calls[$c,$N]:-–} | $(madvise_calls "$c") |"
	done
	echo
	echo "scols-only printed the same bytes as pmadvise: table ${same_table[$N]}, JSON ${same_json[$N]}."
	echo

	local q=${med[q,$N]} f=${med[floor,$N]} s=${med[scols,$N]} sj=${med[scols-J,$N]}
	local batched=$((advise_calls[q,$N] - probes[q,$N])) expect=$(((pieces[$N] + 1023) / 1024))
	echo "## Targets at N = $N"
	echo
	echo "| target | figure | met |"
	echo "| --- | --- | --- |"
	echo "| \`-q\` ≤ 1.1 × floor | $(ms "$q") / $(ms "$f") ms = $(calc "%.2f" "$q / $f") × | $(verdict "$q <= 1.1 * $f") |"
	echo "| \`-q\` faster than both ways by hand | $(ms "$q") vs $(ms "${med[hand-c,$N]}") (C), $(ms "${med[hand-py,$N]}") (python) ms |" \
		"$(verdict "$q < ${med[hand-c,$N]} && $q < ${med[hand-py,$N]}") |"
	echo "| table ≤ \`-q\` + 1.1 × libsmartcols alone | $(ms "${med[table,$N]}") ≤ $(ms "$q") + 1.1 × $(ms "$s") = $(calc "%.1f" "($q + 1.1 * $s) / 1e3") ms |" \
		"$(verdict "${med[table,$N]} <= $q + 1.1 * $s") |"
	echo "| \`-J\` ≤ \`-q\` + 1.1 × libsmartcols alone | $(ms "${med[json,$N]}") ≤ $(ms "$q") + 1.1 × $(ms "$sj") = $(calc "%.1f" "($q + 1.1 * $sj) / 1e3") ms |" \
		"$(verdict "${med[json,$N]} <= $q + 1.1 * $sj") |"
	echo "| table peak RSS ≤ libsmartcols alone + 8 MiB | $(mib "${rss[table,$N]}") ≤ $(mib "${rss[scols,$N]}") + 8 MiB |" \
		"$(verdict "${rss[table,$N]} <= ${rss[scols,$N]} + 8192") |"
	echo "| \`-J\` peak RSS ≤ libsmartcols alone + 8 MiB | $(mib "${rss[json,$N]}") ≤ $(mib "${rss[scols-J,$N]}") + 8 MiB |" \
		"$(verdict "${rss[json,$N]} <= ${rss[scols-J,$N]} + 8192") |"
	echo "| \`-q\` peak RSS < 16 MiB | $(mib "${rss[q,$N]}") MiB | $(verdict "${rss[q,$N]} < 16384") |"
	echo "| batched calls = ⌈pieces / 1024⌉ (+ splits at 2 GiB a call) | $batched = ⌈${pieces[$N]} / 1024⌉ = $expect, + $((advise_calls[floor,$N] - expect)) split (floor: ${advise_calls[floor,$N]}) |" \
		"$(verdict "$batched == ${advise_calls[floor,$N]}") |"
	echo "| issue 4: \`-o +RSS,RSS-AFTER\` < \`cat smaps\` twice | $(ms "${med[measure,$N]}") / $(ms "${med[smaps2,$N]}") ms: A/B = $(calc "%.2f" "${med[measure,$N]} / ${med[smaps2,$N]}") |" \
		"$(verdict "${med[measure,$N]} < ${med[smaps2,$N]}") |"
	echo

	local sizes=($SIZES) first=${SIZES%% *} mid
	echo "## Growth"
	echo
	echo "Median ms (peak RSS MiB) at each N; then what each further mapping costs between the"
	echo "first two sizes and between the last two (linear growth: the later cost within 1.5× of the"
	echo "earlier one; the per-mapping figure at N = $N against N = $first is in the last column)."
	echo
	printf '| case |'
	for n in $SIZES; do printf ' N = %s |' "$n"; done
	echo " per further mapping, first step | last step | per mapping at $N vs $first |"
	printf '| --- |'
	for n in $SIZES; do printf ' ---: |'; done
	echo " ---: | ---: | ---: |"
	mid=${sizes[${#sizes[@]} - 2]}
	for c in q table json floor measure; do
		printf '| %s |' "${label[$c]}"
		for n in $SIZES; do printf ' %s (%s) |' "$(ms "${med[$c,$n]}")" "$(mib "${rss[$c,$n]}")"; done
		printf ' %s µs, %s B | %s µs, %s B | time %s×, RSS %s× |\n' \
			"$(calc "%.2f" "(${med[$c,${sizes[1]}]} - ${med[$c,$first]}) / (${sizes[1]} - $first)")" \
			"$(calc "%.0f" "(${rss[$c,${sizes[1]}]} - ${rss[$c,$first]}) * 1024 / (${sizes[1]} - $first)")" \
			"$(calc "%.2f" "(${med[$c,$N]} - ${med[$c,$mid]}) / ($N - $mid)")" \
			"$(calc "%.0f" "(${rss[$c,$N]} - ${rss[$c,$mid]}) * 1024 / ($N - $mid)")" \
			"$(calc "%.2f" "(${med[$c,$N]} / $N) / (${med[$c,$first]} / $first)")" \
			"$(calc "%.2f" "(${rss[$c,$N]} / $N) / (${rss[$c,$first]} / $first)")"
	done
}

report | tee "$workdir/report.md"
cp "$workdir/report.md" "$RESULTS"
echo >&2
echo "bench: written to $RESULTS" >&2
