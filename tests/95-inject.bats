#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# --inject (man page: Injection): the target itself calls
# prctl(PR_SET_MEMORY_MERGE) or madvise(MADV_MERGEABLE), run by pmadvise in
# one of its threads through ptrace. Every test checks that the target is
# unharmed afterwards, not only that the call happened.
#
# The KSM test changes global KSM settings: setup and teardown save and
# restore them (ksm_save, ksm_restore in test_helper.bash).

bats_require_minimum_version 1.5.0

load test_helper

PAGE=$(getconf PAGESIZE)

setup() {
	[[ $(uname -m) == x86_64 ]] || skip "--inject needs x86-64"
	ksm_save
	PROCS=()
}

teardown() {
	local pid
	for pid in "${PROCS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	stop_targets
	ksm_restore
}

# start_ready NAME COMMAND [ARG...]: start COMMAND in the background with its
# output in $BATS_TEST_TMPDIR/NAME.out (errors in NAME.out.err) and wait up to
# 10 s for its "ready" line. Sets READY_PID; teardown kills what is left.
start_ready() {
	local name=$1
	shift
	"$@" >"$BATS_TEST_TMPDIR/$name.out" 2>"$BATS_TEST_TMPDIR/$name.out.err" 3>&- &
	READY_PID=$!
	PROCS+=("$READY_PID")
	wait_ready "$BATS_TEST_TMPDIR/$name.out" "$READY_PID" "$*"
}

# status_field PID FIELD: a field of /proc/PID/status (TracerPid, Seccomp...).
status_field() {
	awk -v f="$2:" '$1 == f { print $2; exit }' "/proc/$1/status"
}

# untraced_and_running PID: nobody traces PID any more and it is not stopped.
untraced_and_running() {
	local state
	[ "$(status_field "$1" TracerPid)" -eq 0 ]
	state=$(awk '{ print $3 }' "/proc/$1/stat")
	[[ $state == [RSD] ]] || {
		echo "PID $1 is in state $state" >&2
		return 1
	}
}

# end_and_check PID WANT: SIGTERM PID and check that it exits with WANT.
end_and_check() {
	local rc=0
	kill -TERM "$1"
	wait "$1" || rc=$?
	[ "$rc" -eq "$2" ] || {
		echo "PID $1 exited with $rc, wanted $2" >&2
		return 1
	}
}

# count_ptrace REQUEST: how many REQUEST calls the last trace_pmadvise made.
count_ptrace() {
	grep -c "ptrace($1," "$BATS_TEST_TMPDIR/pm.strace" || true
}

# trace_pmadvise ARG...: run pmadvise under strace (ptrace and
# process_madvise calls to $BATS_TEST_TMPDIR/pm.strace); for `run`.
trace_pmadvise() {
	strace -qq -e trace=ptrace,process_madvise -o "$BATS_TEST_TMPDIR/pm.strace" \
		"$PMADVISE" "$@"
}

# slow_pmadvise ARG...: pmadvise in the background with each of its waits
# for the target delayed by 2 ms, so that a long injection lasts seconds.
# Sets SLOW_PID (strace's) and PM_PID (pmadvise's); output to pm.out/pm.err.
slow_pmadvise() {
	local i
	# not the strace() function: $! must be strace itself
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		command strace -qq -o /dev/null -e trace=wait4 -e inject=wait4:delay_exit=2000 \
		"$PMADVISE" "$@" >"$BATS_TEST_TMPDIR/pm.out" 2>"$BATS_TEST_TMPDIR/pm.err" 3>&- &
	SLOW_PID=$!
	for ((i = 0; i < 200; i++)); do
		PM_PID=$(pgrep -P "$SLOW_PID" -x pmadvise) && return 0
		sleep 0.02
	done
	echo "pmadvise did not start under strace" >&2
	return 1
}

@test "--inject: usage errors, before any ptrace or process_madvise call" {
	local args
	start_target anon=8K
	for args in "-p $TARGET_PID cold --inject --select all" \
		"-p $TARGET_PID --inject --rule all=mergeable" \
		"--inject mergeable --select all" \
		"--inject --ksm-status -p $TARGET_PID"; do
		# shellcheck disable=SC2086 # $args is several arguments
		run --separate-stderr trace_pmadvise $args
		echo "$args: $stderr"
		[ "$status" -eq 1 ]
		[ -z "$output" ]
		[[ $stderr == "pmadvise: "*"--inject"* ]]
		[ "$(count_ptrace PTRACE_SEIZE)" -eq 0 ]
		[ "$(grep -c process_madvise "$BATS_TEST_TMPDIR/pm.strace")" -eq 0 ]
	done
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" cold --inject --select all
	grep -qF "only for mergeable and unmergeable, not 'cold'" <<<"$stderr"
	run --separate-stderr "$PMADVISE" --inject mergeable -- true
	[ "$status" -eq 1 ]
	grep -qF "needs a running process: name it with --pid, --pidfd or --cgroup" <<<"$stderr"
	grep -qF "'pmadvise mergeable -- COMMAND'" <<<"$stderr"
	# --dry-run injects nothing
	run --separate-stderr trace_pmadvise -p "$TARGET_PID" mergeable --inject --select anon --dry-run
	[ "$status" -eq 0 ]
	[ "$(count_ptrace PTRACE_SEIZE)" -eq 0 ]
	untraced_and_running "$TARGET_PID"
	! kernel_has ksm-stat-merge-any || [ "$(ksm_stat "$TARGET_PID" ksm_mergeable)" = no ]
}

@test "remote mergeable without --inject: exit 2, and the message names --inject" {
	start_target anon=8K
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" mergeable --select anon
	[ "$status" -eq 2 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	grep -qF "does not support remote KSM hints" <<<"$stderr"
	grep -qF "'pmadvise mergeable -- COMMAND'" <<<"$stderr"
	grep -qF -- "--inject" <<<"$stderr"
}

@test "sleep 3, injected 1.5 s in: merge-any on, and sleep still exits 0 after 3 s" {
	local start end rc=0 elapsed pid
	# the prctl
	require_kernel memory-merge
	# (an emulated machine stretches the times: PMADVISE_TEST_TIME_SCALE)
	local length
	length=$(scaled 3)
	start=$EPOCHREALTIME
	sleep "$length" 3>&- &
	pid=$!
	PROCS+=("$pid")
	sleep "$(scaled 1.5)"
	run --separate-stderr "$PMADVISE" -p "$pid" mergeable --inject --select all -J
	echo "$output$stderr"
	[ "$status" -eq 0 ]
	jq -e --argjson pid "$pid" '.pmadvise == [{ pid: $pid, comm: "sleep",
		advice: "mergeable (prctl)", status: "ok" }]' <<<"$output"
	[ -z "$stderr" ]
	[ "$(merge_any "$pid")" = yes ]
	untraced_and_running "$pid"
	wait "$pid" || rc=$?
	end=$EPOCHREALTIME
	elapsed=$(bc <<<"$end - $start")
	echo "sleep: exit $rc after $elapsed s"
	[ "$rc" -eq 0 ]
	(($(bc <<<"$elapsed >= $length - 0.05 && $elapsed < $length + $(scaled 0.6)")))
}

@test "a raw nanosleep(2 s), injected mid-call, returns 0 after 2 s: no EINTR, no restart from scratch" {
	local line length
	# the prctl
	require_kernel memory-merge
	# (an emulated machine stretches the times: PMADVISE_TEST_TIME_SCALE)
	length=$(scaled 2)
	# shellcheck disable=SC2016 # python, not shell
	start_ready nanosleep python3 -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
request = timespec(int(float(sys.argv[1])), int(float(sys.argv[1]) % 1 * 1e9))
print("ready", flush=True)
start = time.monotonic()
ret = libc.syscall(35, ctypes.byref(request), None)   # SYS_nanosleep
print("ret", ret, "errno", ctypes.get_errno(), "elapsed %.3f" % (time.monotonic() - start), flush=True)
' "$length"
	sleep "$(scaled 0.7)"
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	[ "$status" -eq 0 ]
	[ "$(merge_any "$READY_PID")" = yes ]
	untraced_and_running "$READY_PID"
	wait "$READY_PID"
	line=$(grep '^ret ' "$BATS_TEST_TMPDIR/nanosleep.out")
	echo "$line"
	[[ $line == "ret 0 errno 0 elapsed "* ]]
	(($(bc <<<"${line##* } >= $length - 0.1 && ${line##* } <= $length + $(scaled 0.3)")))
}

@test "a busy counter keeps counting, its invariant intact, after 100 injections in a row" {
	local i before after advice
	# the prctl, and the ksm_stat fields these checks read
	require_kernel memory-merge
	start_ready count "$HELPERS/injectee" count
	for ((i = 0; i < 100; i++)); do
		advice=mergeable
		((i % 2)) && advice=unmergeable
		"$PMADVISE" -q -p "$READY_PID" "$advice" --inject --select all || {
			echo "injection $i failed" >&2
			return 1
		}
	done
	# per-piece madvise too: a call per mapping in one attachment
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select anon -r -n -o STATUS
	[ "$status" -eq 0 ]
	[ "$(sort -u <<<"$output")" = ok ]
	untraced_and_running "$READY_PID"
	kill -USR1 "$READY_PID"
	sleep 0.3
	kill -USR1 "$READY_PID"
	sleep 0.3
	before=$(grep '^count' "$BATS_TEST_TMPDIR/count.out" | tail -2 | head -1)
	after=$(grep '^count' "$BATS_TEST_TMPDIR/count.out" | tail -1)
	echo "$before -> $after"
	((${after#count } > ${before#count }))
	end_and_check "$READY_PID" 0
	cat "$BATS_TEST_TMPDIR/count.out.err"
	[ ! -s "$BATS_TEST_TMPDIR/count.out.err" ]
}

@test "threads blocked in read, poll and futex all go on; the read gets what is written after" {
	local dir="$BATS_TEST_TMPDIR/fifos"
	# the prctl
	require_kernel memory-merge
	mkdir "$dir"
	start_ready threads "$HELPERS/injectee" threads "$dir"
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	[ "$status" -eq 0 ]
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select anon
	[ "$status" -eq 0 ]
	[ "$(merge_any "$READY_PID")" = yes ]
	untraced_and_running "$READY_PID"
	echo hello >"$dir/main.fifo"
	echo ping >"$dir/poll.fifo"
	wait "$READY_PID"
	cat "$BATS_TEST_TMPDIR/threads.out"
	grep -qx "main read: hello" "$BATS_TEST_TMPDIR/threads.out"
	grep -qx "poll read: ping" "$BATS_TEST_TMPDIR/threads.out"
	grep -qx "futex woken" "$BATS_TEST_TMPDIR/threads.out"
	grep -qx "all threads done" "$BATS_TEST_TMPDIR/threads.out"
	[ ! -s "$BATS_TEST_TMPDIR/threads.out.err" ]
}

@test "python3 still answers on its pipe; per-range madvise on its anonymous mappings: every row ok" {
	local fifo="$BATS_TEST_TMPDIR/py.fifo" rows writer
	# the prctl
	require_kernel memory-merge
	mkfifo "$fifo"
	# read-write: opening it waits for no reader, and python's open no writer
	exec {writer}<>"$fifo"
	# shellcheck disable=SC2016 # python, not shell
	start_ready python python3 -u -c '
import sys
f = open(sys.argv[1], "r")
print("ready", flush=True)
for line in f:
    if line.strip() == "quit":
        break
    print("answer", line.strip().upper(), flush=True)
' "$fifo"
	echo one >&"$writer"
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select anon -J -b
	echo "$output$stderr"
	[ "$status" -eq 0 ]
	rows=$(jq '.pmadvise | length' <<<"$output")
	((rows > 3))
	jq -e 'all(.pmadvise[]; .status == "ok" and .advice == "mergeable" and
		.advised == .size and .errno == null)' <<<"$output"
	[ "$(vmas_mergeable "$READY_PID")" = yes ]
	# the process-wide flag is still off (only ksm_stat tells it apart from
	# the mappings' own flags)
	! kernel_has ksm-stat-merge-any || [ "$(merge_any "$READY_PID")" = no ]
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	[ "$status" -eq 0 ]
	untraced_and_running "$READY_PID"
	echo two >&"$writer"
	echo quit >&"$writer"
	exec {writer}>&-
	wait "$READY_PID"
	[ "$(cat "$BATS_TEST_TMPDIR/python.out")" = "ready
answer ONE
answer TWO" ]
}

# wait_in_first_ptrace PID: until pmadvise, run by strace as PID or as its
# child (the strace wrapper of test_helper.bash is a subshell), sits in its
# first ptrace call, held there by the delay: it has read the maps by then.
wait_in_first_ptrace() {
	local i p child nr
	for ((i = 0; i < 400; i++)); do
		for p in "$1" $(pgrep -P "$1"); do
			child=$(pgrep -P "$p" -x pmadvise) || continue
			read -r nr _ <"/proc/$child/syscall" 2>/dev/null || continue
			[ "$nr" = 101 ] && return 0	# ptrace on x86-64
		done
		sleep 0.025
	done
	echo "pmadvise did not reach its first ptrace call" >&2
	return 1
}

@test "per-range mode: each row has the target's own errno (a page unmapped before the injection)" {
	local a b c pm rc=0
	start_ready unmap "$HELPERS/injectee" unmap
	a=$(awk '$1 == "a" { print $2 "-" $3 }' "$BATS_TEST_TMPDIR/unmap.out")
	b=$(awk '$1 == "b" { print $2 "-" $3 }' "$BATS_TEST_TMPDIR/unmap.out")
	c=$(awk '$1 == "c" { print $2 "-" $3 }' "$BATS_TEST_TMPDIR/unmap.out")
	# pmadvise reads the maps, then waits 1 s (times PMADVISE_TEST_TIME_SCALE)
	# before it attaches; b goes meanwhile
	strace -qq -o /dev/null -e trace=ptrace -e inject=ptrace:delay_enter=$(scaled_us 1):when=1 \
		"$PMADVISE" -p "$READY_PID" mergeable --inject -J -b -o START,STATUS,ERRNO,ADVISED \
		"$a" "$b" "$c" >"$BATS_TEST_TMPDIR/pm.out" 2>"$BATS_TEST_TMPDIR/pm.err" &
	pm=$!
	wait_in_first_ptrace "$pm"
	kill -USR1 "$READY_PID"
	wait "$pm" || rc=$?
	cat "$BATS_TEST_TMPDIR/pm.out" "$BATS_TEST_TMPDIR/pm.err"
	grep -qx "unmapped b" "$BATS_TEST_TMPDIR/unmap.out"
	[ "$rc" -eq 64 ]
	jq -e --arg a "${a%-*}" --arg b "${b%-*}" --arg c "${c%-*}" --argjson page "$PAGE" '
		.pmadvise == [
			{ start: $a, status: "ok", errno: null, advised: $page },
			{ start: $b, status: "failed", errno: "ENOMEM", advised: 0 },
			{ start: $c, status: "ok", errno: null, advised: $page } ]' \
		"$BATS_TEST_TMPDIR/pm.out"
	grep -qF "${b%-*}-${b#*-}: mergeable failed: not mapped any more" "$BATS_TEST_TMPDIR/pm.err"
	untraced_and_running "$READY_PID"
	end_and_check "$READY_PID" 0
}

@test "more than 1000 pieces: one attachment per 1000 calls at most" {
	start_target many=2500
	run --separate-stderr trace_pmadvise -p "$TARGET_PID" mergeable --inject \
		--select 'anon,max-size=4K' -r -n -o STATUS
	[ "$status" -eq 0 ]
	[ "$(wc -l <<<"$output")" -ge 2500 ]
	[ "$(sort -u <<<"$output")" = ok ]
	echo "seize: $(count_ptrace PTRACE_SEIZE), detach: $(count_ptrace PTRACE_DETACH)"
	[ "$(count_ptrace PTRACE_SEIZE)" -eq $(((${#lines[@]} + 999) / 1000)) ]
	[ "$(count_ptrace PTRACE_DETACH)" -eq "$(count_ptrace PTRACE_SEIZE)" ]
	untraced_and_running "$TARGET_PID"
	end_and_check "$TARGET_PID" 0
}

@test "a stopped (SIGSTOP) target is still stopped afterwards, and goes on after SIGCONT" {
	# the prctl
	require_kernel memory-merge
	start_ready count "$HELPERS/injectee" count
	kill -STOP "$READY_PID"
	sleep 0.2
	[ "$(awk '{ print $3 }' "/proc/$READY_PID/stat")" = T ]
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	[ "$status" -eq 0 ]
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select anon
	[ "$status" -eq 0 ]
	sleep 0.2
	[ "$(awk '{ print $3 }' "/proc/$READY_PID/stat")" = T ]
	[ "$(status_field "$READY_PID" TracerPid)" -eq 0 ]
	[ "$(merge_any "$READY_PID")" = yes ]
	kill -CONT "$READY_PID"
	sleep 0.2
	untraced_and_running "$READY_PID"
	end_and_check "$READY_PID" 0
	grep -q '^count [1-9]' "$BATS_TEST_TMPDIR/count.out"
}

@test "seccomp filter that kills on prctl: suspended with CAP_SYS_ADMIN, the target survives" {
	# the prctl
	require_kernel memory-merge
	start_ready seccomp "$HELPERS/injectee" seccomp-prctl
	[ "$(status_field "$READY_PID" Seccomp)" -eq 2 ]
	run --separate-stderr "$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	echo "$output$stderr"
	[ "$status" -eq 0 ]
	[ "$(merge_any "$READY_PID")" = yes ]
	untraced_and_running "$READY_PID"
	# the filter is back: the process is still under it
	[ "$(status_field "$READY_PID" Seccomp)" -eq 2 ]
	end_and_check "$READY_PID" 0
}

@test "seccomp filter without CAP_SYS_ADMIN: a refusal that names seccomp, the target untouched" {
	# the prctl
	require_kernel memory-merge
	start_ready seccomp "$HELPERS/injectee" seccomp-prctl
	run --separate-stderr setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \
		"$PMADVISE" -p "$READY_PID" mergeable --inject --select all
	echo "$stderr"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	grep -qF "pmadvise: PID $READY_PID: cannot inject mergeable: it runs under a seccomp filter" \
		<<<"$stderr"
	grep -qF "CAP_SYS_ADMIN" <<<"$stderr"
	[ "$(merge_any "$READY_PID")" = no ]
	untraced_and_running "$READY_PID"
	end_and_check "$READY_PID" 0
}

@test "a target under strace -p: a refusal that names the tracer, the target untouched" {
	local tracer i
	# the prctl
	require_kernel memory-merge
	start_target anon=1M
	command strace -qq -p "$TARGET_PID" -o /dev/null 3>&- &
	tracer=$!
	PROCS+=("$tracer")
	for ((i = 0; i < 100; i++)); do
		[ "$(status_field "$TARGET_PID" TracerPid)" -eq "$tracer" ] && break
		sleep 0.05
	done
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" mergeable --inject --select all
	echo "$stderr"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	grep -qF "pmadvise: PID $TARGET_PID: cannot inject mergeable: it is already traced by PID $tracer (strace)" \
		<<<"$stderr"
	[ "$(merge_any "$TARGET_PID")" = no ]
	[ "$(status_field "$TARGET_PID" TracerPid)" -eq "$tracer" ]
	kill -INT "$tracer"
	wait "$tracer" || true
	untraced_and_running "$TARGET_PID"
	end_and_check "$TARGET_PID" 0
}

@test "the target exits during a long injection: pmadvise reports it and stops, no hang" {
	start_target many=3000
	slow_pmadvise -p "$TARGET_PID" mergeable --inject --select 'anon,max-size=4K' -J -o STATUS,ERRNO
	sleep 1
	kill -KILL "$TARGET_PID"
	local rc=0
	timeout 20 tail --pid="$SLOW_PID" -f /dev/null
	wait "$SLOW_PID" || rc=$?
	cat "$BATS_TEST_TMPDIR/pm.err"
	[ "$rc" -eq 64 ]
	grep -qF "pmadvise: PID $TARGET_PID: process has exited" "$BATS_TEST_TMPDIR/pm.err"
	jq -e '([.pmadvise[] | select(.status == "ok")] | length) > 0 and
		([.pmadvise[] | select(.status == "not-run" and .errno == "ESRCH")] | length) > 0 and
		all(.pmadvise[]; .status == "ok" or .status == "not-run")' "$BATS_TEST_TMPDIR/pm.out"
}

@test "SIGTERM to pmadvise mid-injection: the call finishes, the target is let go and keeps running" {
	local rc=0
	# per-range madvise: every kernel takes it
	start_target many=3000
	slow_pmadvise -p "$TARGET_PID" mergeable --inject --select 'anon,max-size=4K' -J -o STATUS
	sleep 1
	[ "$(status_field "$TARGET_PID" TracerPid)" -eq "$PM_PID" ]
	# twice: the second must not end pmadvise while it holds the target
	kill -TERM "$PM_PID"
	kill -TERM "$PM_PID"
	wait "$SLOW_PID" || rc=$?
	cat "$BATS_TEST_TMPDIR/pm.err"
	[ "$rc" -eq 143 ]
	jq -e '([.pmadvise[] | select(.status == "ok")] | length) > 0 and
		([.pmadvise[] | select(.status == "not-run")] | length) > 0' "$BATS_TEST_TMPDIR/pm.out"
	untraced_and_running "$TARGET_PID"
	# the rows done made their mappings mergeable
	[ "$(vmas_mergeable "$TARGET_PID")" = yes ]
	end_and_check "$TARGET_PID" 0
}

@test "KSM end to end: two running copies, injected afterwards, merge their identical pages" {
	local a b merged_a merged_b page same_pages min_merged
	# the prctl, and ksm_stat's counts of merged pages
	require_kernel memory-merge ksm-stat
	same_pages=$((64 * 1024 * 1024 / PAGE))
	min_merged=$((same_pages * 3 / 4))
	ksm_start
	# started plainly, not by the launcher: KSM does not look at them
	start_target same=64M
	a=$TARGET_PID
	start_target same=64M
	b=$TARGET_PID
	[ "$(merge_any "$a")" = no ]
	# one road each: the prctl for the whole process, madvise for the region
	run --separate-stderr "$PMADVISE" -p "$a" mergeable --inject --select all
	[ "$status" -eq 0 ]
	run --separate-stderr "$PMADVISE" -p "$b" mergeable --inject --select 'anon,min-size=64M'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	wait_merged "$a" "$min_merged" 60
	wait_merged "$b" "$min_merged" 60
	merged_a=$(ksm_stat "$a" ksm_merging_pages)
	merged_b=$(ksm_stat "$b" ksm_merging_pages)
	echo "# merged: $((merged_a * PAGE >> 20)) MiB and $((merged_b * PAGE >> 20)) MiB" >&3
	untraced_and_running "$a"
	untraced_and_running "$b"
	end_and_check "$a" 0
	end_and_check "$b" 0
}
