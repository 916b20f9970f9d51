#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Many targets: --cgroup on cgroup v2 and on a v1 hierarchy, --recursive,
# one --summary line per process, processes that exit in the middle of a
# run, clean stops on SIGINT, SIGTERM and --timeout, and the progress line.
#
# Long runs are made on purpose: a target with 60 000 one-page mappings
# (59 calls of 1024 ranges) and strace delaying every process_madvise call
# by 50 ms, about 3 s in all. Cold shows per row whether a page was advised:
# maptarget writes every page at start, so smaps Referenced is 4 kB for each
# mapping until cold clears it.

bats_require_minimum_version 1.5.0

load test_helper

MANY=60000
# every process_madvise call of a long run waits 50 ms before it returns
SLOW=(-e trace=process_madvise -e inject=process_madvise:delay_exit=50000)
# the files that maptarget's file= regions map (each 8K here)
DATA='path=*/maptarget-*.dat'

CGROUPS=()

# env(1) that gives SIGINT its default action back (coreutils 8.31 and later)
if env --default-signal=INT true 2>/dev/null; then
	DEFAULT_SIGINT=(env --default-signal=INT)
else
	DEFAULT_SIGINT=(env)
fi

teardown() {
	# a long run that a failed check left behind (pmadvise goes on alone)
	if [ -n "${STRACE_PID:-}" ]; then
		kill -KILL "$STRACE_PID" 2>/dev/null || true
		wait "$STRACE_PID" 2>/dev/null || true
	fi
	stop_targets
	remove_cgroups
}

# cgroup_mount v2|v1: the mount point of the cgroup v2 hierarchy, or of the
# v1 hierarchy that holds the memory controller; nothing when there is none.
cgroup_mount() {
	if [ "$1" = v2 ]; then
		awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts
	else
		awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/self/mounts
	fi
}

# make_cgroup v2|v1 NAME: create a cgroup for this test below the one this
# shell is in (so that its limits still hold) and set CGROUP to its path.
# teardown kills its processes and removes it. Skips the test when the
# hierarchy is not mounted.
make_cgroup() {
	local mnt own
	mnt=$(cgroup_mount "$1")
	[ -n "$mnt" ] || skip "no cgroup $1 hierarchy is mounted"
	if [ "$1" = v2 ]; then
		own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	else
		own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
	fi
	[ -n "$own" ] && [ -d "$mnt$own" ] || own=/
	CGROUP=$mnt${own%/}/pmadvise-test-$$-$BATS_TEST_NUMBER-$2
	mkdir "$CGROUP"
	CGROUPS+=("$CGROUP")
}

# make_child_cgroup PARENT NAME: a cgroup below PARENT; sets CGROUP.
make_child_cgroup() {
	CGROUP=$1/$2
	mkdir "$CGROUP"
	CGROUPS+=("$CGROUP")
}

# remove_cgroups: kill what is left in this test's cgroups, then remove
# them, the deepest first.
remove_cgroups() {
	local i n dir pids
	for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do
		dir=${CGROUPS[i]}
		[ -d "$dir" ] || continue
		for ((n = 0; n < 100; n++)); do
			pids=$(cat "$dir/cgroup.procs" 2>/dev/null) || break
			[ -n "$pids" ] || break
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
			sleep 0.05
		done
		rmdir "$dir" || echo "cannot remove $dir" >&2
	done
	CGROUPS=()
}

# jq_true [OPTION...] FILTER FILE: jq -e on FILE, failing also when FILE is
# empty (jq -e succeeds when there is no input at all).
jq_true() {
	local file=${!#}
	[ -s "$file" ] || {
		echo "no JSON in $file" >&2
		return 1
	}
	jq -e "$@"
}

# start_in_cgroup DIR SPEC...: start_target SPEC..., then move it into DIR.
start_in_cgroup() {
	local dir=$1
	shift
	start_target "$@"
	echo "$TARGET_PID" >"$dir/cgroup.procs"
}

# twenty_in_cgroup DIR: 20 targets in DIR, the i-th with i % 3 + 1 private
# file mappings of 8K (what $DATA selects) and some anonymous memory.
# $BATS_TEST_TMPDIR/expected gets "PID FILES" lines, sorted.
twenty_in_cgroup() {
	local i j specs
	: >"$BATS_TEST_TMPDIR/expected.unsorted"
	for ((i = 0; i < 20; i++)); do
		specs=()
		for ((j = 0; j <= i % 3; j++)); do
			specs+=(file=8K)
		done
		start_in_cgroup "$1" "${specs[@]}" anon=64K
		echo "$TARGET_PID ${#specs[@]}" >>"$BATS_TEST_TMPDIR/expected.unsorted"
	done
	sort "$BATS_TEST_TMPDIR/expected.unsorted" >"$BATS_TEST_TMPDIR/expected"
}

# per_pid_rows TABLE: from a raw table whose columns are PID STATUS ADVISED
# (-b), one line per PID, sorted: "PID ROWS OK FAILED SKIPPED NOT-RUN
# ADVISED", counted as --summary counts (partial and unmapped are failed).
per_pid_rows() {
	awk '{ rows[$1]++; st[$1, $2]++; adv[$1] += $3 }
	     END {
		for (p in rows) {
			ok = st[p, "ok"]; sk = st[p, "skipped"]; nr = st[p, "not-run"]
			printf "%s %d %d %d %d %d %d\n", p, rows[p], ok,
				rows[p] - ok - sk - nr, sk, nr, adv[p]
		}
	     }' "$1" | sort
}

# per_pid_summary STDERR: the "PID N (COMM): ..." lines of --summary (with
# -b) in the same form as per_pid_rows.
per_pid_summary() {
	sed -n 's/^PID \([0-9]*\) ([^)]*)\(, exited\)\{0,1\}: \([0-9]*\) rows: \([0-9]*\) ok, \([0-9]*\) failed, \([0-9]*\) skipped, \([0-9]*\) not-run; advised \([0-9]*\).*/\1 \3 \4 \5 \6 \7 \8/p' \
		"$1" | sort
}

# check_summary_matches_rows TABLE STDERR NTARGETS: one summary line per
# target, each counting exactly that PID's rows of the table, and the
# "summary:" line counting them all.
check_summary_matches_rows() {
	local table=$1 err=$2 n=$3 rows summed total
	rows=$(per_pid_rows "$table")
	summed=$(per_pid_summary "$err")
	echo "rows per PID:"$'\n'"$rows"$'\n'"summary lines:"$'\n'"$summed"
	[ "$(grep -c '^PID [0-9]* (' "$err")" -eq "$n" ]
	[ "$(wc -l <<<"$summed")" -eq "$n" ]
	[ "$rows" = "$summed" ]
	total=$(awk '{ r += $2; ok += $3; f += $4; s += $5; nr += $6; a += $7 }
		END { printf "summary: %d rows: %d ok, %d failed, %d skipped, %d not-run; advised %d",
			r, ok, f, s, nr, a }' <<<"$rows")
	grep -F -- "$total;" "$err" || grep -Fx -- "$total" "$err"
}

# check_json_summary_matches_rows FILE NTARGETS: the same for -J -b: each
# object of .summary.targets counts that PID's rows of .pmadvise.
check_json_summary_matches_rows() {
	jq_true --argjson n "$2" '
		def counts: { rows: length,
			ok: map(select(.status == "ok")) | length,
			skipped: map(select(.status == "skipped")) | length,
			"not-run": map(select(.status == "not-run")) | length,
			advised: (map(.advised) | add) };
		(.pmadvise | group_by(.pid) | map({ pid: .[0].pid } + counts)) as $rows
		| (.summary.targets | map({ pid, rows, ok, skipped, "not-run", advised })
			| sort_by(.pid)) as $said
		| ($said | length) == $n and $said == $rows
		  and .summary.rows == (.pmadvise | length)
		  and .summary.ok == (.pmadvise | map(select(.status == "ok")) | length)
		  and .summary.advised == (.pmadvise | map(.advised) | add)' "$1"
}

# check_twenty v2|v1: a cgroup of 20 targets is advised whole, in one
# group of rows per PID, and --summary (text, and JSON) agrees with the rows.
check_twenty() {
	local out=$BATS_TEST_TMPDIR/table err=$BATS_TEST_TMPDIR/stderr rc=0
	make_cgroup "$1" twenty
	twenty_in_cgroup "$CGROUP"
	[ "$(wc -l <"$CGROUP/cgroup.procs")" -eq 20 ]

	"$PMADVISE" -c "$CGROUP" cold -s "$DATA" -r -n -b -o PID,STATUS,ADVISED --summary \
		>"$out" 2>"$err" || rc=$?
	cat "$err"
	[ "$rc" -eq 0 ]
	# every process: one group of rows, as many as it maps files, all advised
	[ "$(awk '{ print $1 }' "$out" | uniq | wc -l)" -eq 20 ]
	diff -u "$BATS_TEST_TMPDIR/expected" <(awk '{ print $1 }' "$out" | sort | uniq -c |
		awk '{ print $2, $1 }')
	[ "$(grep -cvx '[0-9]* ok 8192' "$out")" -eq 0 ]
	check_summary_matches_rows "$out" "$err" 20
	# nothing but the summary on stderr
	[ "$(grep -cv -e '^PID [0-9]* (maptarget): ' -e '^summary: ' "$err")" -eq 0 ]

	rc=0
	"$PMADVISE" -c "$CGROUP" cold -s "$DATA" -J -b --summary >"$out" 2>"$err" || rc=$?
	[ "$rc" -eq 0 ]
	[ ! -s "$err" ]
	check_json_summary_matches_rows "$out" 20
	jq_true '.summary.targets | all(.comm == "maptarget" and .exited == false)' "$out"
	[ "$(jq -r '.pmadvise[].pid' "$out" | uniq | wc -l)" -eq 20 ]
}

@test "cgroup v2 of 20 processes: all advised, one row group per PID, --summary lines match the rows" {
	check_twenty v2
}

@test "cgroup v1 (memory hierarchy) of 20 processes: all advised, one row group per PID, --summary lines match the rows" {
	check_twenty v1
}

@test "--recursive adds the processes of the cgroups below; without it they are left out" {
	local top mid low
	make_cgroup v2 top
	top=$CGROUP
	start_in_cgroup "$top" file=8K
	start_in_cgroup "$top" file=8K
	sort -n "$top/cgroup.procs" >"$BATS_TEST_TMPDIR/top"
	make_child_cgroup "$top" mid
	mid=$CGROUP
	start_in_cgroup "$mid" file=8K
	start_in_cgroup "$mid" file=8K
	make_child_cgroup "$mid" low
	low=$CGROUP
	start_in_cgroup "$low" file=8K
	cat "$top/cgroup.procs" "$mid/cgroup.procs" "$low/cgroup.procs" | sort -n \
		>"$BATS_TEST_TMPDIR/all"

	run "$PMADVISE" -c "$top" cold -s "$DATA" -r -n -o PID
	[ "$status" -eq 0 ]
	diff -u "$BATS_TEST_TMPDIR/top" <(sort -n <<<"$output")

	run "$PMADVISE" -c "$top" --recursive cold -s "$DATA" -r -n -o PID
	[ "$status" -eq 0 ]
	diff -u "$BATS_TEST_TMPDIR/all" <(sort -n <<<"$output")
	[ "${#lines[@]}" -eq 5 ]

	# a process found twice (--cgroup of a cgroup and of its parent) is advised once
	run "$PMADVISE" -c "$mid" -c "$top" --recursive cold -s "$DATA" -r -n -o PID
	[ "$status" -eq 0 ]
	diff -u "$BATS_TEST_TMPDIR/all" <(sort -n <<<"$output")
}

@test "a cgroup that lists kernel threads: their summary lines say what they are" {
	local root pid kthread='' flags
	root=$(cgroup_mount v2)
	[ -n "$root" ] || skip "no cgroup v2 hierarchy is mounted"
	# kernel threads stay in the root cgroup
	while read -r pid; do
		flags=$(awk '{ print $9 }' "/proc/$pid/stat" 2>/dev/null) || continue
		if [ -n "$flags" ] && (((flags & 0x200000) != 0)); then	# PF_KTHREAD
			kthread=$pid
			break
		fi
	done <"$root/cgroup.procs"
	[ -n "$kthread" ] || skip "no kernel thread in $root"
	# nothing is advised: a dry run that selects nothing anywhere
	run --separate-stderr "$PMADVISE" -c "$root" --dry-run cold \
		-s path=/nonexistent/pmadvise-test --summary
	grep -Fx "PID $kthread ($(cat "/proc/$kthread/comm")): a kernel thread: no user memory to advise" \
		<<<"$stderr"
	[ "$(grep "^PID $kthread[ :]" <<<"$stderr" | grep -c exited)" -eq 0 ]
}

@test "pmadvise in the cgroup it advises leaves itself out" {
	make_cgroup v2 self
	start_in_cgroup "$CGROUP" file=8K
	# sh joins the cgroup, then becomes pmadvise
	run sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -c "$1" cold -s "$3" -r -n -o PID' \
		sh "$CGROUP" "$PMADVISE" "$DATA"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$TARGET_PID" ]

	# alone in it, it finds no process to advise
	stop_targets
	run count_madvise_calls sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -c "$1" cold -s "$3"' \
		sh "$CGROUP" "$PMADVISE" "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -F "no process in it" "$BATS_TEST_TMPDIR/cmd.out"
}

# start_long_run OUT ERR ARG...: in the background and with job control
# (so that SIGINT is not ignored), run pmadvise ARG... under strace with
# every process_madvise call slowed down; sets STRACE_PID. The trace is
# $BATS_TEST_TMPDIR/long.log.
start_long_run() {
	local out=$1 err=$2
	shift 2
	rm -f "$BATS_TEST_TMPDIR/long.log"
	set -m
	# a shell cannot catch what was ignored when it started (bats run as a
	# background job): env gives SIGINT back to pmadvise all the same
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"${DEFAULT_SIGINT[@]}" strace -f -qq -o "$BATS_TEST_TMPDIR/long.log" "${SLOW[@]}" \
		"$PMADVISE" "$@" >"$out" 2>"$err" 3>&- &
	STRACE_PID=$!
	set +m
}

# wait_for_calls N: until the long run has made N process_madvise calls
# (the probe is one), at most 20 s.
wait_for_calls() {
	local i n=0
	for ((i = 0; i < 400; i++)); do
		n=$(grep -c 'process_madvise(.*) = [0-9]' "$BATS_TEST_TMPDIR/long.log" 2>/dev/null) || true
		[ "${n:-0}" -ge "$1" ] && return 0
		process_alive "$STRACE_PID" || break
		sleep 0.05
	done
	echo "only ${n:-0} process_madvise calls were made" >&2
	return 1
}

# pmadvise_pid: the PID of pmadvise under strace in the long run.
pmadvise_pid() {
	pgrep -P "$STRACE_PID" -x pmadvise
}

# finish_long_run: wait for the long run; its exit status in $status.
finish_long_run() {
	status=0
	wait "$STRACE_PID" || status=$?
	echo "exit status $status"
}

# start_many: a target with $MANY one-page mappings; sets MANY_START and
# MANY_END and checks that every one of them was referenced before the run.
start_many() {
	start_target many=$MANY
	MANY_START=$(region_start many)
	MANY_END=$(region_end many)
	[ "$(referenced_mappings "$TARGET_PID" "$MANY_START" "$MANY_END")" -eq "$MANY" ]
}

# referenced_mappings PID START END: how many mappings of PID within
# START-END (hex) have a Referenced page (one pass over smaps).
referenced_mappings() {
	awk -v lo="$2" -v hi="$3" '
		function pad(a) { a = tolower(a); while (length(a) < 16) a = "0" a; return a }
		BEGIN { lo = pad(lo); hi = pad(hi) }
		/^[0-9a-f]+-[0-9a-f]+ / {
			split($1, r, "-")
			inside = pad(r[1]) >= lo && pad(r[2]) <= hi
			next
		}
		inside && $1 == "Referenced:" && $2 > 0 { n++ }
		END { print n + 0 }' "/proc/$1/smaps"
}

# check_stopped_many JSON: a run over the $MANY mappings stopped between two
# calls: the first rows ok, all the others not-run with REASON, nothing else;
# and smaps agrees for the last ok row, the first not-run one, and others
# of each kind: cold cleared Referenced where the row says ok, and only there.
check_stopped_many() {
	local json=$1 reason=$2 nok nnr st start ref
	jq -r '.pmadvise[].status' "$json" | uniq -c >"$BATS_TEST_TMPDIR/statuses"
	cat "$BATS_TEST_TMPDIR/statuses"
	nok=$(awk '$2 == "ok" { print $1 }' "$BATS_TEST_TMPDIR/statuses")
	nnr=$(awk '$2 == "not-run" { print $1 }' "$BATS_TEST_TMPDIR/statuses")
	[ "$(awk '{ print $2 }' "$BATS_TEST_TMPDIR/statuses" | tr '\n' ' ')" = "ok not-run " ]
	[ "$((nok + nnr))" -eq "$MANY" ]
	# ok rows advised their page; not-run rows nothing, and say why
	jq_true --arg reason "$reason" '.pmadvise | all(
		(.status == "ok" and .advised == 4096 and .reason == null)
		or (.status == "not-run" and .advised == 0 and .reason == $reason))' "$json"
	jq -r --argjson k "$nok" '.pmadvise as $r
		| [0, ($k / 2 | floor), $k - 1, $k, $k + 1, (($k + length) / 2 | floor), length - 1]
		| .[] | "\($r[.].status) \($r[.].start)"' "$json" >"$BATS_TEST_TMPDIR/samples"
	while read -r st start; do
		ref=$(smaps_field "$TARGET_PID" "$start" Referenced)
		echo "$st $start: Referenced $ref kB"
		if [ "$st" = ok ]; then
			[ "$ref" -eq 0 ] || return 1
		else
			[ "$ref" -gt 0 ] || return 1
		fi
	done <"$BATS_TEST_TMPDIR/samples"
	# and over the whole region: exactly the not-run rows are still referenced
	[ "$(referenced_mappings "$TARGET_PID" "$MANY_START" "$MANY_END")" -eq "$nnr" ]
}

# long_run_stopped_by SIGNAL: a long run that SIGNAL stops after some calls.
long_run_stopped_by() {
	local json=$BATS_TEST_TMPDIR/out.json err=$BATS_TEST_TMPDIR/err
	start_many
	start_long_run "$json" "$err" -p "$TARGET_PID" -J -b -o START,ADVISED,STATUS,REASON \
		cold "$MANY_START-$MANY_END"
	wait_for_calls 6
	kill -"$1" "$(pmadvise_pid)"
	finish_long_run
	cat "$err"
}

@test "SIGINT in a long run: exit 130, the table says what was done, smaps agrees" {
	long_run_stopped_by INT
	[ "$status" -eq 130 ]
	grep -Fx "pmadvise: stopped: interrupted (SIGINT) before everything was advised" \
		"$BATS_TEST_TMPDIR/err"
	check_stopped_many "$BATS_TEST_TMPDIR/out.json" "stopped: interrupted (SIGINT)"
}

@test "SIGTERM in a long run: exit 143, the table says what was done, smaps agrees" {
	long_run_stopped_by TERM
	[ "$status" -eq 143 ]
	grep -Fx "pmadvise: stopped: terminated (SIGTERM) before everything was advised" \
		"$BATS_TEST_TMPDIR/err"
	check_stopped_many "$BATS_TEST_TMPDIR/out.json" "stopped: terminated (SIGTERM)"
}

@test "--timeout 0.5 on a 3 s run: exit 124 within 2 s, the table says what was done, smaps agrees" {
	local json=$BATS_TEST_TMPDIR/out.json err=$BATS_TEST_TMPDIR/err t0 t1 calls limit try
	# the same 3 s, from 20 calls of 150 ms: a third of the maps to read first
	# (on an emulated machine, times PMADVISE_TEST_TIME_SCALE: the maps
	# alone take longer than 0.5 s to read there)
	local MANY=20000
	local SLOW=(-e trace=process_madvise -e inject=process_madvise:delay_exit=$(scaled_us 0.15))
	local timeout
	timeout=$(scaled 0.5)
	# a sanitized build lays out the table several times slower
	limit=$(scaled 2)
	[ -z "${ASAN_OPTIONS:-}" ] || limit=$(scaled 4)
	# On a machine loaded many times over, pmadvise may not even get to its
	# first call within 0.5 s: that run is checked too (nothing advised,
	# nothing said to be), and another is made, up to 3, for one that stops
	# between calls.
	for ((try = 1; try <= 3; try++)); do
		start_many
		t0=$(date +%s.%N)
		start_long_run "$json" "$err" -p "$TARGET_PID" --timeout "$timeout" -J -b \
			-o START,ADVISED,STATUS,REASON cold "$MANY_START-$MANY_END"
		finish_long_run
		t1=$(date +%s.%N)
		cat "$err"
		echo "try $try: took $(echo "$t1 - $t0" | bc) s"
		[ "$status" -eq 124 ]
		[ "$(echo "$t1 - $t0 < $limit" | bc)" -eq 1 ]
		grep -Fx "pmadvise: stopped: --timeout expired before everything was advised" "$err"
		# the whole run would make 21 calls (the probe and 20 of 150 ms)
		calls=$(grep -c 'process_madvise(.*) = [0-9]' "$BATS_TEST_TMPDIR/long.log") || true
		echo "$calls calls"
		[ "$calls" -lt 10 ]
		[ "$(jq '[.pmadvise[] | select(.status == "ok")] | length' "$json")" -gt 0 ] && break
		# no row advised: every one not-run, and smaps agrees
		[ "$(jq -r '.pmadvise[].status' "$json" | grep -cvx not-run)" -eq 0 ]
		[ "$(referenced_mappings "$TARGET_PID" "$MANY_START" "$MANY_END")" -eq "$MANY" ]
		stop_targets
	done
	check_stopped_many "$json" "stopped: --timeout expired"
}

@test "--timeout that expires after the last call, while the table is written: exit 0" {
	local err=$BATS_TEST_TMPDIR/err
	start_target many=$MANY
	# the calls take well under 2 s; the reader holds the table back for 3.5 s
	run bash -c '"$1" -p "$2" --timeout "$5" -r -n -o STATUS cold "$3" 2>"$4" |
		{ sleep "$6"; grep -c ok; }; exit "${PIPESTATUS[0]}"' \
		sh "$PMADVISE" "$TARGET_PID" "$(region_start many)-$(region_end many)" "$err" \
		"$(scaled 2)" "$(scaled 3.5)"
	cat "$err"
	echo "$output"
	[ "$output" -eq "$MANY" ]
	[ "$status" -eq 0 ]
	[ ! -s "$err" ]
}

@test "a stop between the chunks of a row larger than one call makes it partial" {
	local json=$BATS_TEST_TMPDIR/out.json max=$((0x7ffff000)) size advised
	start_target untouched=5G
	size=$((0x$(region_end untouched) - 0x$(region_start untouched)))
	# the probe, then three chunks; from the second chunk on, each call
	# waits 5 s: the stop comes while the second one waits
	SLOW=(-e trace=process_madvise -e inject=process_madvise:delay_exit=5000000:when=3+)
	start_long_run "$json" "$BATS_TEST_TMPDIR/err" -p "$TARGET_PID" -J -b \
		-o SIZE,ADVISED,STATUS cold "$(region_start untouched)"
	wait_for_calls 2
	kill -INT "$(pmadvise_pid)"
	finish_long_run
	cat "$json"
	[ "$status" -eq 130 ]
	[ "$(jq '.pmadvise | length' "$json")" -eq 1 ]
	[ "$(jq -r '.pmadvise[0].status' "$json")" = partial ]
	[ "$(jq '.pmadvise[0].size' "$json")" -eq "$size" ]
	advised=$(jq '.pmadvise[0].advised' "$json")
	# two whole chunks: the stop came between the second call and the third
	[ "$advised" -eq $((2 * max)) ] && [ "$advised" -lt "$size" ]
}

@test "a second stop signal ends pmadvise at once, without the table" {
	local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err pid
	start_many
	# one call a second: both signals arrive while pmadvise waits in one call
	SLOW=(-e trace=process_madvise -e inject=process_madvise:delay_exit=1000000)
	start_long_run "$out" "$err" -p "$TARGET_PID" -r -n -o STATUS cold "$MANY_START-$MANY_END"
	wait_for_calls 2
	pid=$(pmadvise_pid)
	kill -INT "$pid"
	kill -TERM "$pid"
	finish_long_run
	cat "$err"
	# killed by a signal (the handler of the one delivered last raises it
	# again: either may be the one), not a clean stop: no table, no message
	[ "$status" -eq 130 ] || [ "$status" -eq 143 ]
	[ ! -s "$out" ]
	[ "$(grep -c "stopped:" "$err")" -eq 0 ]
}

@test "a SIGINT ignored when pmadvise starts stays ignored: the run completes, exit 0" {
	local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
	start_many
	rm -f "$BATS_TEST_TMPDIR/long.log"
	# as a shell starts a background job: SIGINT ignored
	(
		trap '' INT
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			exec strace -f -qq -o "$BATS_TEST_TMPDIR/long.log" "${SLOW[@]}" \
			"$PMADVISE" -p "$TARGET_PID" -r -n -o STATUS cold "$MANY_START-$MANY_END"
	) >"$out" 2>"$err" 3>&- &
	STRACE_PID=$!
	wait_for_calls 6
	kill -INT "$(pmadvise_pid)"
	finish_long_run
	cat "$err"
	[ "$status" -eq 0 ]
	[ ! -s "$err" ]
	[ "$(grep -cx ok "$out")" -eq "$MANY" ]
	[ "$(wc -l <"$out")" -eq "$MANY" ]
	[ "$(referenced_mappings "$TARGET_PID" "$MANY_START" "$MANY_END")" -eq 0 ]
}

@test "a cgroup's process that exits mid-run: its rows not-run, 'exited' in its summary line, exit 0" {
	local out=$BATS_TEST_TMPDIR/table err=$BATS_TEST_TMPDIR/err long
	make_cgroup v2 exits
	start_in_cgroup "$CGROUP" file=8K
	start_in_cgroup "$CGROUP" many=$MANY
	long=$TARGET_PID
	start_in_cgroup "$CGROUP" file=8K file=8K
	start_long_run "$out" "$err" -c "$CGROUP" -r -n -b -o PID,STATUS,ADVISED,REASON --summary \
		cold -s "$DATA" -s anon,max-size=4K
	wait_for_calls 10
	kill -KILL "$long"
	wait "$long" || true
	finish_long_run
	cat "$err"
	[ "$status" -eq 0 ]
	# no warning for it: leaving its cgroup is what a process may do
	[ "$(grep -c "PID $long" "$err")" -eq 1 ]
	# its memory went with it: no RSS "after" to compare, in its line or the total
	grep -x "PID $long (maptarget), exited: [0-9]* rows: .*; advised [0-9]*" "$err"
	# its rows: the advised ones ok, then the rest not-run, saying why
	awk -v p="$long" '$1 == p { print $2 }' "$out" | uniq >"$BATS_TEST_TMPDIR/statuses"
	[ "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/statuses")" = "ok not-run " ]
	awk -v p="$long" '$1 == p && $2 == "not-run"' "$out" | grep -vc 'process\\x20has\\x20exited$' |
		grep -x 0
	# the others' rows all ok
	[ "$(awk -v p="$long" '$1 != p && $2 != "ok"' "$out" | wc -l)" -eq 0 ]
	[ "$(awk -v p="$long" '$1 != p' "$out" | wc -l)" -ge 3 ]
	check_summary_matches_rows "$out" "$err" 3
}

@test "a --pid process that exits mid-run fails the run: exit 64" {
	local out=$BATS_TEST_TMPDIR/out.json err=$BATS_TEST_TMPDIR/err long other
	start_target file=8K
	other=$TARGET_PID
	start_target many=$MANY
	long=$TARGET_PID
	start_long_run "$out" "$err" -p "$long,$other" -J -b -o PID,STATUS,ADVISED,REASON --summary \
		cold -s "$DATA" -s anon,max-size=4K
	wait_for_calls 10
	kill -KILL "$long"
	wait "$long" || true
	finish_long_run
	cat "$err"
	[ "$status" -eq 64 ]
	[ "$(grep -c "PID $long" "$err")" -eq 1 ]
	grep -x "pmadvise: PID $long: process has exited" "$err"
	jq_true --argjson p "$long" '[.pmadvise[] | select(.pid == $p) | .status] | unique
		== ["not-run", "ok"]' "$out"
	jq_true --argjson p "$long" '[.pmadvise[] | select(.pid == $p and .status == "not-run")]
		| all(.reason == "process has exited")' "$out"
	jq_true --argjson p "$other" '[.pmadvise[] | select(.pid == $p) | .status] | unique
		== ["ok"]' "$out"
	check_json_summary_matches_rows "$out" 2
	jq_true '.summary.targets | all(.exited == false)' "$out"
	# the exited one has no residency, the other one has
	jq_true --argjson p "$long" '.summary.targets | map(select(.pid == $p))[0] | has("rss") | not' "$out"
	jq_true --argjson p "$other" '.summary.targets | map(select(.pid == $p))[0] | has("rss-after")' "$out"
	jq_true --argjson p "$other" '.summary as $s | $s.targets | map(select(.pid == $p))[0].rss
		== $s.rss' "$out"
}

@test "a cgroup's process that exits before it is opened: a summary line says so, exit 0" {
	local out=$BATS_TEST_TMPDIR/table err=$BATS_TEST_TMPDIR/err trace=$BATS_TEST_TMPDIR/trace
	local first second i
	make_cgroup v2 before
	start_in_cgroup "$CGROUP" file=8K
	first=$TARGET_PID
	start_in_cgroup "$CGROUP" file=8K
	second=$TARGET_PID
	# each pidfd_open waits 1 s: time to end a process pmadvise has listed
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		command strace -f -qq -o "$trace" -e trace=openat,pidfd_open \
		-e inject=pidfd_open:delay_enter=1000000 \
		"$PMADVISE" -c "$CGROUP" -r -n -b -o PID,STATUS,ADVISED --summary cold -s "$DATA" \
		>"$out" 2>"$err" 3>&- &
	STRACE_PID=$!
	for ((i = 0; i < 200; i++)); do
		grep -q 'cgroup.procs' "$trace" 2>/dev/null && break
		sleep 0.05
	done
	kill -KILL "$second"
	wait "$second" || true
	finish_long_run
	cat "$err"
	[ "$status" -eq 0 ]
	grep -Fx "PID $second: exited before it was advised" "$err"
	grep "^PID $first (maptarget): 1 rows: 1 ok, " "$err"
	grep "^summary: 1 rows: 1 ok, 0 failed, 0 skipped, 0 not-run; " "$err"
	[ "$(awk '{ print $1, $2 }' "$out")" = "$first ok" ]
}

@test "a cgroup in which nothing is selected: exit 1, and -J --summary still says so in JSON" {
	local json
	make_cgroup v2 nothing
	start_in_cgroup "$CGROUP" file=8K
	run --separate-stderr count_madvise_calls "$PMADVISE" -c "$CGROUP" -J --summary cold \
		-s path=/nonexistent/pmadvise-test
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -F "pmadvise: nothing selected by --select 'path=/nonexistent/pmadvise-test' in any process" \
		"$BATS_TEST_TMPDIR/cmd.out"
	# the JSON on stdout, between the messages: the one process, and why it has no row
	json=$(sed -n '/^{/,/^}/p' "$BATS_TEST_TMPDIR/cmd.out")
	[ -n "$json" ]
	jq -e --argjson p "$TARGET_PID" '.summary.rows == 0 and (.summary.targets | length) == 1
		and .summary.targets[0].pid == $p and .summary.targets[0].note == "nothing selected"' \
		<<<"$json"
}

# on_pty FILE COMMAND...: run COMMAND on a pseudo-terminal (stdin, stdout and
# stderr); what it wrote goes to FILE. Returns its exit status.
on_pty() {
	local file=$1 cmd
	shift
	printf -v cmd '%q ' env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@"
	script -qefc "$cmd" /dev/null </dev/null >"$file"
}

# progress_lines FILE: the progress lines that FILE holds, one a line.
progress_lines() {
	grep -ao $'\rpmadvise: [0-9]*/[0-9]* processes, [0-9.]*[KMGTPE]\\{0,1\\}B\\{0,1\\}/[0-9.]*[KMGTPE]\\{0,1\\}B\\{0,1\\} advised, [0-9]*\\.[0-9]s\e\\[K' "$1" |
		tr -d '\r' || true
}

@test "progress: a self-updating line on a terminal after 1 s, cleared before the table" {
	local out=$BATS_TEST_TMPDIR/pty first clear header
	start_many
	on_pty "$out" strace -f -qq -o /dev/null "${SLOW[@]}" \
		"$PMADVISE" -p "$TARGET_PID" -o START,STATUS cold "$MANY_START-$MANY_END"
	progress_lines "$out" | cat -v
	# several updates, the first after 1 s
	[ "$(progress_lines "$out" | wc -l)" -ge 3 ]
	first=$(progress_lines "$out" | head -1 | sed 's/.* \([0-9.]*\)s.*/\1/')
	[ "$(echo "$first >= 1.0" | bc)" -eq 1 ]
	progress_lines "$out" | grep -q "pmadvise: 0/1 processes, [0-9.]*[KM]/234.4M advised, "
	# the line is erased before the table starts
	clear=$(grep -abo $'\r\e\\[K' "$out" | tail -1 | cut -d: -f1)
	header=$(grep -abo 'START' "$out" | head -1 | cut -d: -f1)
	[ -n "$clear" ] && [ -n "$header" ] && [ "$clear" -lt "$header" ]
	[ "$(grep -ac ' ok' "$out")" -eq "$MANY" ]
}

@test "progress: never in a pipe, never with -q, never with --no-progress" {
	local out=$BATS_TEST_TMPDIR/out
	start_many
	# stderr into a pipe
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		command strace -f -qq -o /dev/null "${SLOW[@]}" \
		"$PMADVISE" -p "$TARGET_PID" -o STATUS cold "$MANY_START-$MANY_END" 2>&1 | cat >"$out"
	[ "$(grep -c ok "$out")" -eq "$MANY" ]
	[ "$(grep -ac -e processes, -e $'\r' "$out")" -eq 0 ]

	# on a terminal with -q, or --no-progress
	on_pty "$out" strace -f -qq -o /dev/null "${SLOW[@]}" \
		"$PMADVISE" -q -p "$TARGET_PID" cold "$MANY_START-$MANY_END"
	cat -v "$out"
	[ ! -s "$out" ]
	on_pty "$out" strace -f -qq -o /dev/null "${SLOW[@]}" \
		"$PMADVISE" --no-progress -p "$TARGET_PID" -o STATUS cold "$MANY_START-$MANY_END"
	[ "$(grep -ac ok "$out")" -eq "$MANY" ]
	[ "$(grep -ac -e processes, -e $'\e' "$out")" -eq 0 ]
}

@test "progress: --progress shows it in a pipe too" {
	local out=$BATS_TEST_TMPDIR/out
	start_many
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		command strace -f -qq -o /dev/null "${SLOW[@]}" \
		"$PMADVISE" --progress -p "$TARGET_PID" -q cold "$MANY_START-$MANY_END" 2>&1 |
		cat >"$out"
	progress_lines "$out" | cat -v
	[ "$(progress_lines "$out" | wc -l)" -ge 3 ]
}

@test "usage: --recursive needs --cgroup; --cgroup needs a cgroup with processes" {
	local empty
	make_cgroup v2 empty
	empty=$CGROUP
	start_target file=8K

	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --recursive cold -s "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -Fx "pmadvise: --recursive goes with --cgroup" "$BATS_TEST_TMPDIR/cmd.out"

	run count_madvise_calls "$PMADVISE" -c /nonexistent/pmadvise-test cold -s "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -Fx "pmadvise: --cgroup /nonexistent/pmadvise-test: no such directory" \
		"$BATS_TEST_TMPDIR/cmd.out"

	run count_madvise_calls "$PMADVISE" -c /tmp cold -s "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -Fx "pmadvise: --cgroup /tmp: not a cgroup directory (it has no cgroup.procs)" \
		"$BATS_TEST_TMPDIR/cmd.out"

	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -c "$empty" cold -s "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -F "pmadvise: --cgroup $empty: no process in it" "$BATS_TEST_TMPDIR/cmd.out"

	run count_madvise_calls "$PMADVISE" -c "$empty" --recursive cold -s "$DATA"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
	grep -Fx "pmadvise: --cgroup $empty: no process in it or below it" \
		"$BATS_TEST_TMPDIR/cmd.out"
}

@test "usage: a bad --timeout is an error before anything is advised" {
	local bad
	start_target file=8K
	for bad in -1 abc 1x '' 1.5.5 5sm; do
		run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --timeout "$bad" cold -s "$DATA"
		cat "$BATS_TEST_TMPDIR/cmd.out"
		[ "$status" -eq 1 ] && [ "$output" -eq 0 ]
		grep -F "pmadvise: invalid --timeout '$bad': " "$BATS_TEST_TMPDIR/cmd.out"
	done
	# the good forms: 0 is no limit
	for good in 0 30 1.5 .5m 2h 1d; do
		run "$PMADVISE" -p "$TARGET_PID" --timeout "$good" -r -n -o STATUS cold -s "$DATA"
		[ "$status" -eq 0 ] && [ "$output" = ok ]
	done
}

@test "--inject --select all over a cgroup: each process makes the prctl itself and keeps running" {
	[[ $(uname -m) == x86_64 ]] || skip "--inject needs x86-64"
	require_kernel memory-merge
	local pid pids=()
	make_cgroup v2 inject
	for _ in 1 2 3; do
		start_in_cgroup "$CGROUP" anon=64K
		pids+=("$TARGET_PID")
		[ "$(merge_any "$TARGET_PID")" = no ]
	done

	run --separate-stderr "$PMADVISE" --cgroup "$CGROUP" --inject mergeable --select all \
		-J -o PID,ADVICE,STATUS
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$(jq '.pmadvise | length' <<<"$output")" -eq 3 ]
	[ "$(jq '[.pmadvise[] | select(.status == "ok" and .advice == "mergeable (prctl)")] | length' \
		<<<"$output")" -eq 3 ]
	for pid in "${pids[@]}"; do
		[ "$(merge_any "$pid")" = yes ]
		[ "$(awk '$1 == "TracerPid:" { print $2 }' "/proc/$pid/status")" -eq 0 ]
		process_alive "$pid"
	done
}

@test "a stop that arrives during the last call stops nothing: exit 0, every row ok, no message" {
	local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err pm i nr vlen
	start_target anon=64K anon=64K
	# the second call (the one with ranges; the probe has none) is held 1 s on entry
	set -m
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"${DEFAULT_SIGINT[@]}" strace -f -qq -o /dev/null -e trace=process_madvise \
		-e inject=process_madvise:delay_enter=1000000:when=2 \
		"$PMADVISE" -p "$TARGET_PID" -r -n -o STATUS cold \
		"$(region_start anon)-$(region_end anon)" "$(region_start anon.2)-$(region_end anon.2)" \
		>"$out" 2>"$err" 3>&- &
	STRACE_PID=$!
	set +m
	for ((i = 0; i < 400; i++)); do
		pm=$(pmadvise_pid) && read -r nr _ _ vlen _ <"/proc/$pm/syscall" &&
			[ "$nr" = 440 ] && [ "$((vlen))" -eq 2 ] && break
		sleep 0.01
	done
	[ "$i" -lt 400 ]
	kill -INT "$pm"
	finish_long_run
	cat "$out" "$err"
	[ "$status" -eq 0 ]
	[ "$(sort -u "$out")" = ok ]
	[ ! -s "$err" ]
}
