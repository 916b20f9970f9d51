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
#   floor-a floor -a PID 20: the same, but all of maps read before the first call
#   hand-c  handwritten PID 20: one process_madvise per mapping (C)
#   hand-py handwritten.py PID 20: the same in python3 with ctypes
#   scols   scols-only MAPS: libsmartcols alone printing the same table
#   scols-J scols-only -J MAPS: the same as JSON
#   measure pmadvise -p PID cold --select all -o +RSS,RSS-AFTER
#   measure-q pmadvise -p PID cold --select all -q --summary: measured, no table
#   smaps2  cat /proc/PID/smaps twice (how a user measures today)
#
# Below the largest N only the cases of the growth table are timed.
# Each run is timed twice: its CPU time (user + system, from wait4) and its
# wall clock.  The targets are judged on CPU time, which other work on a
# shared machine disturbs far less; both are reported.
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
CASES="q table json floor floor-a hand-c hand-py scols scols-J measure measure-q smaps2"
# at the smaller sizes, only what the growth table shows
GROWTH_CASES="q table json floor floor-a scols measure"

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

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
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
	floor-a) cmd=("$floor" -a "$target_pid" "$ADVICE_NUMBER") ;;
	hand-c)  cmd=("$handwritten" "$target_pid" "$ADVICE_NUMBER") ;;
	hand-py) cmd=("$python" "$handwritten_py" "$target_pid" "$ADVICE_NUMBER") ;;
	scols)   cmd=("$scols_only" "$workdir/maps") ;;
	scols-J) cmd=("$scols_only" -J "$workdir/maps") ;;
	measure) cmd=("${pm[@]}" -o +RSS,RSS-AFTER) ;;
	measure-q) cmd=("${pm[@]}" -q --summary) ;;
	smaps2)  cmd=(cat "/proc/$target_pid/smaps" "/proc/$target_pid/smaps") ;;
	esac
}

declare -A label=(
	[q]="\`pmadvise -q\`"
	[table]="\`pmadvise\` (default table)"
	[json]="\`pmadvise -J\`"
	[floor]="floor: maps + the same batched calls (C)"
	[floor-a]="floor, all of maps read before the first call"
	[hand-c]="by hand: one call per mapping (C)"
	[hand-py]="by hand: one call per mapping (python3 ctypes)"
	[scols]="libsmartcols alone, same table"
	[scols-J]="libsmartcols alone, same JSON"
	[measure]="\`pmadvise -o +RSS,RSS-AFTER\`"
	[measure-q]="\`pmadvise -q --summary\` (measured, no table)"
	[smaps2]="\`cat smaps\` twice"
)
declare -A times med lo hi cpus cmed clo chi rss calls advise_calls probes

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

# The timer: runs the commands read from stdin ("CASE<TAB>ARG<TAB>ARG..."),
# REPS rounds, each round starting one case later, and prints
# "CASE WALL_US CPU_US" per run.  Python's os.wait4 gives the child's CPU
# time to the microsecond.
timer_py='
import os, sys, time
reps = int(sys.argv[1])
cases = [line.rstrip("\n").split("\t") for line in sys.stdin if line.strip()]
err = sys.argv[2]
for r in range(reps):
    for k in range(len(cases)):
        name, *argv = cases[(r + k) % len(cases)]
        actions = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = (time.perf_counter_ns() - t0) // 1000
        if status:
            sys.exit(f"{name} failed: " + open(err).read().strip())
        cpu = round((usage.ru_utime + usage.ru_stime) * 1e6)
        print(name, wall, cpu, flush=True)
'

# time_cases N ROUNDS CASE...: timed runs, appended to times[CASE,N] and cpus[CASE,N]
time_cases() {
	local n=$1 rounds=$2 c cmd wall cpu

	shift 2
	for c in "$@"; do
		case_command "$c"
		(IFS=$'\t'; echo "$c	${cmd[*]}")
	done >"$workdir/cases"
	"$python" -c "$timer_py" "$rounds" "$workdir/err" <"$workdir/cases" >"$workdir/times" ||
		die "timing failed"
	while read -r c wall cpu; do
		times[$c,$n]+=" $wall"
		cpus[$c,$n]+=" $cpu"
	done <"$workdir/times"
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
	cases=$CASES
	[ "$n" -eq "$largest" ] || cases=$GROWTH_CASES
	time_cases warmup 1 $cases

	echo "bench: N=$n: timing $REPS rounds of: $cases" >&2
	time_cases "$n" "$REPS" $cases
	for c in $cases; do
		read -r med[$c,$n] lo[$c,$n] hi[$c,$n] < <(stats ${times[$c,$n]})
		read -r cmed[$c,$n] clo[$c,$n] chi[$c,$n] < <(stats ${cpus[$c,$n]})
		[ "$c" = smaps2 ] || peak_rss "$c" "$n"
	done

	if [ "$n" -eq "$largest" ]; then
		echo "bench: N=$n: counting syscalls" >&2
		for c in q table json measure floor floor-a hand-c hand-py; do strace_case "$c" "$n"; done
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
# ratio A B: "A / B = R×" of two cases' CPU medians at N, with the wall-clock ratio
ratio() {
	echo "$(ms "${cmed[$1,$N]}") / $(ms "${cmed[$2,$N]}") ms = $(calc "%.3f" "${cmed[$1,$N]} / ${cmed[$2,$N]}")×" \
		"(wall: $(calc "%.3f" "${med[$1,$N]} / ${med[$2,$N]}")×)"
}
# budget CASE REF: CASE against -q + 1.1 x REF (CPU medians), and the verdicts
budget() {
	local limit

	limit=$(calc "%.0f" "${cmed[q,$N]} + 1.1 * ${cmed[$2,$N]}")
	echo "| ${label[$1]} ≤ \`-q\` + 1.1 × ${label[$2]} | $(ms "${cmed[$1,$N]}") ≤ $(ms "${cmed[q,$N]}") + 1.1 × $(ms "${cmed[$2,$N]}") = $(ms "$limit") ms" \
		"(wall: $(ms "${med[$1,$N]}") ≤ $(calc "%.1f" "(${med[q,$N]} + 1.1 * ${med[$2,$N]}) / 1e3")) |" \
		"$(verdict "${cmed[$1,$N]} <= $limit") |"
}

report() {
	local c n q=${cmed[q,$N]} f=${cmed[floor,$N]}
	local batched=$((advise_calls[q,$N] - probes[q,$N])) expect=$(((pieces[$N] + 1023) / 1024))
	local sizes=($SIZES) first=${SIZES%% *} mid

	echo "# pmadvise benchmark"
	echo
	echo "Made by \`make bench\` (tests/bench/run.sh) on $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo
	echo "- Machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
		"$(nproc) CPUs, $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM"
	echo "- Kernel: $(uname -sr) ($(uname -m)); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "- Load average (1, 5, 15 min): $load_before before the run, $(cut -d' ' -f1-3 /proc/loadavg) after it"
	echo "- pmadvise: $("$pmadvise" --version)"
	echo "- Target: \`maptarget many=N anon=$BIG file=$BIG\`; advice $ADVICE; $REPS runs of each" \
		"case, rotating.  CPU: user + system time of the command (wait4); wall: its wall clock."
	echo
	echo "## N = $N ($((nmaps[$N])) mappings, ${pieces[$N]} pieces)"
	echo
	echo "| case | CPU ms, median | min–max | wall ms, median | min–max | peak RSS MiB | syscalls | process_madvise calls |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for c in $CASES; do
		echo "| ${label[$c]} | $(ms "${cmed[$c,$N]}") | $(ms "${clo[$c,$N]}")–$(ms "${chi[$c,$N]}") |" \
			"$(ms "${med[$c,$N]}") | $(ms "${lo[$c,$N]}")–$(ms "${hi[$c,$N]}") |" \
			"$(mib "${rss[$c,$N]:-}") | ${calls[$c,$N]:-–} | $(madvise_calls "$c") |"
	done
	echo
	echo "scols-only printed the same bytes as pmadvise: table ${same_table[$N]}, JSON ${same_json[$N]}."
	echo
	echo "## Targets at N = $N (judged on CPU time)"
	echo
	echo "| target | figure | met |"
	echo "| --- | --- | --- |"
	echo "| \`-q\` ≤ 1.1 × floor | $(ratio q floor) | $(verdict "$q <= 1.1 * $f") |"
	echo "| (for reference) \`-q\` against the floor in pmadvise's order | $(ratio q floor-a) | – |"
	echo "| \`-q\` faster than both ways by hand | $(ms "$q") vs $(ms "${cmed[hand-c,$N]}") (C), $(ms "${cmed[hand-py,$N]}") (python) ms |" \
		"$(verdict "$q < ${cmed[hand-c,$N]} && $q < ${cmed[hand-py,$N]}") |"
	budget table scols
	budget json scols-J
	echo "| table peak RSS ≤ libsmartcols alone + 8 MiB | $(mib "${rss[table,$N]}") ≤ $(mib "${rss[scols,$N]}") + 8 MiB |" \
		"$(verdict "${rss[table,$N]} <= ${rss[scols,$N]} + 8192") |"
	echo "| \`-J\` peak RSS ≤ libsmartcols alone + 8 MiB | $(mib "${rss[json,$N]}") ≤ $(mib "${rss[scols-J,$N]}") + 8 MiB |" \
		"$(verdict "${rss[json,$N]} <= ${rss[scols-J,$N]} + 8192") |"
	echo "| \`-q\` peak RSS < 16 MiB | $(mib "${rss[q,$N]}") MiB | $(verdict "${rss[q,$N]} < 16384") |"
	echo "| batched calls = ⌈pieces / 1024⌉ (+ splits at 2 GiB a call) | $batched = ⌈${pieces[$N]} / 1024⌉ = $expect, + $((advise_calls[floor,$N] - expect)) split (floor: ${advise_calls[floor,$N]}) |" \
		"$(verdict "$batched == ${advise_calls[floor,$N]}") |"
	echo "| issue 4: \`-o +RSS,RSS-AFTER\` < \`cat smaps\` twice | A/B = $(ratio measure smaps2) |" \
		"$(verdict "${cmed[measure,$N]} < ${cmed[smaps2,$N]}") |"
	echo
	echo "## Growth"
	echo
	echo "CPU ms, median (peak RSS MiB) at each N; then what each further mapping costs between"
	echo "the first two sizes and between the last two (linear: the later step close to the earlier"
	echo "one), and the cost per mapping at N = $N against N = $first (the issue's test: within 1.5×)."
	echo
	printf '| case |'
	for n in $SIZES; do printf ' N = %s |' "$n"; done
	echo " per further mapping, first step | last step | per mapping at $N vs $first |"
	printf '| --- |'
	for n in $SIZES; do printf ' ---: |'; done
	echo " ---: | ---: | ---: |"
	mid=${sizes[${#sizes[@]} - 2]}
	for c in q table json floor floor-a scols measure; do
		printf '| %s |' "${label[$c]}"
		for n in $SIZES; do printf ' %s (%s) |' "$(ms "${cmed[$c,$n]}")" "$(mib "${rss[$c,$n]}")"; done
		printf ' %s µs, %s B | %s µs, %s B | time %s×, RSS %s× |\n' \
			"$(calc "%.2f" "(${cmed[$c,${sizes[1]}]} - ${cmed[$c,$first]}) / (${sizes[1]} - $first)")" \
			"$(calc "%.0f" "(${rss[$c,${sizes[1]}]} - ${rss[$c,$first]}) * 1024 / (${sizes[1]} - $first)")" \
			"$(calc "%.2f" "(${cmed[$c,$N]} - ${cmed[$c,$mid]}) / ($N - $mid)")" \
			"$(calc "%.0f" "(${rss[$c,$N]} - ${rss[$c,$mid]}) * 1024 / ($N - $mid)")" \
			"$(calc "%.2f" "(${cmed[$c,$N]} / $N) / (${cmed[$c,$first]} / $first)")" \
			"$(calc "%.2f" "(${rss[$c,$N]} / $N) / (${rss[$c,$first]} / $first)")"
	done
}

report | tee "$workdir/report.md"
cp "$workdir/report.md" "$RESULTS"
echo >&2
echo "bench: written to $RESULTS" >&2
