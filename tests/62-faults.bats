#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# More kernel answers injected with strace (SPEC §3, §6, §10), beyond those of
# 40-errors.bats and 60-engine.bats: EAGAIN and EINTR everywhere, the probe
# included; short returns that end between and inside pieces; fatal errors
# at every point of a run; failures of the target checks.  Each one has its
# rows, its message and its exit status, and every retry is bounded.

bats_require_minimum_version 1.5.0

load test_helper

teardown() {
	stop_targets
}

# inject INJECTION... -- COMMAND...: run COMMAND under strace with each
# INJECTION as `-e inject=INJECTION` (bounded by a 60 s timeout).  Status in
# $status, stdout in $output, stderr in $stderr, the number of
# process_madvise calls in $calls; the trace is $BATS_TEST_TMPDIR/strace.log.
inject() {
	local trace="$BATS_TEST_TMPDIR/strace.log" args=()
	while [ "$1" != -- ]; do
		args+=(-e "inject=$1")
		shift
	done
	shift
	# LeakSanitizer cannot work under ptrace: off for a sanitizer build
	local ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	export ASAN_OPTIONS
	run --separate-stderr timeout 60 strace -f -qq -o "$trace" \
		-e trace=process_madvise,pidfd_open,pidfd_send_signal "${args[@]}" "$@"
	calls=$(grep -c 'process_madvise(' "$trace" || true)
	echo "status $status, $calls process_madvise calls; stderr: $stderr"
	echo "$output" | head -c 2000
}

# statuses: the rows' "STATUS ERRNO", runs of equal ones joined by commas
# ("ok -,not-run ESRCH"), from the JSON in $output.
statuses() {
	jq -r '.pmadvise[] | .status + " " + (.errno // "-")' <<<"$output" | uniq | paste -sd,
}

# ranges LABEL...: START-END of the latest target's regions.
ranges() {
	local label
	for label in "$@"; do
		echo "$(region_start "$label")-$(region_end "$label")"
	done
}

@test "EINTR once on a call with ranges: retried, every row ok, exit 0" {
	start_target anon=64K anon=64K
	inject process_madvise:error=EINTR:when=2 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold $(ranges anon anon.2)
	[ "$status" -eq 0 ]
	[ "$(statuses)" = "ok -" ]
	[ "$calls" -eq 3 ]
	[ -z "$stderr" ]
}

@test "EINTR on every call with ranges: bounded retries, rows fail with EINTR and a reason, exit 1" {
	start_target anon=64K anon=64K
	inject process_madvise:error=EINTR:when=2+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,ERRNO cold $(ranges anon anon.2)
	[ "$status" -eq 1 ]
	[ "$(statuses)" = "failed EINTR" ]
	[ "$(jq '.pmadvise | length' <<<"$output")" -eq 2 ]
	[ "$calls" -gt 3 ]
	[ "$calls" -le $((1 + 5 * 2)) ]
	[[ "$stderr" == *"PID $TARGET_PID: $(ranges anon): cold failed: interrupted"* ]]
}

@test "EINTR once on the probe: retried, every row ok, exit 0" {
	start_target anon=64K
	inject process_madvise:error=EINTR:when=1 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold $(ranges anon)
	[ "$status" -eq 0 ]
	[ "$(statuses)" = "ok -" ]
	[ "$calls" -eq 3 ]
}

@test "EAGAIN once on the probe: retried, every row ok, exit 0" {
	start_target anon=64K
	inject process_madvise:error=EAGAIN:when=1 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO pageout $(ranges anon)
	[ "$status" -eq 0 ]
	[ "$(statuses)" = "ok -" ]
	[ "$calls" -eq 3 ]
}

@test "EAGAIN on every call, the probe too: a bounded number of probes, a clear message, exit 1" {
	start_target anon=64K
	inject process_madvise:error=EAGAIN:when=1+ -- \
		"$PMADVISE" -p "$TARGET_PID" cold $(ranges anon)
	[ "$status" -eq 1 ]
	[ "$calls" -ge 2 ]
	[ "$calls" -le 5 ]
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
	[ -z "$output" ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "*"busy"* ]]
}

@test "EINTR on every call, the probe too: a bounded number of probes, a clear message, exit 1" {
	start_target anon=64K
	inject process_madvise:error=EINTR:when=1+ -- \
		"$PMADVISE" -p "$TARGET_PID" cold $(ranges anon)
	[ "$status" -eq 1 ]
	[ "$calls" -ge 2 ]
	[ "$calls" -le 5 ]
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "*"interrupted"* ]]
}

@test "a short return covering 3 of 5 pieces of different sizes: those ok, the next call starts at the 4th" {
	start_target anon=64K anon=8K anon=16K anon=4K anon=32K
	local done=$(((64 + 8 + 16) * 1024))
	inject process_madvise:retval=$done:when=2 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -b -o START,SIZE,ADVISED,STATUS cold \
		$(ranges anon anon.2 anon.3 anon.4 anon.5)
	[ "$status" -eq 0 ]
	[ "$(statuses)" = "ok -" ]
	# every row advised exactly its own size
	[ "$(jq '[.pmadvise[] | select(.advised != .size)] | length' <<<"$output")" -eq 0 ]
	[ "$calls" -eq 3 ]
	grep 'process_madvise(' "$BATS_TEST_TMPDIR/strace.log" | sed -n 3p | grep -q \
		"process_madvise([0-9]*, \[{iov_base=0x$(region_start anon.4), iov_len=4096}, {iov_base=0x$(region_start anon.5), iov_len=32768}\], 2, MADV_COLD"
}

@test "a short return that ends inside a piece: the pieces before ok, that piece redone whole" {
	start_target anon=64K anon=64K anon=64K
	# the first piece and 12 KiB of the second
	inject process_madvise:retval=$(((64 + 12) * 1024)):when=2 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -b -o START,ADVISED,STATUS cold $(ranges anon anon.2 anon.3)
	[ "$status" -eq 0 ]
	[ "$(statuses)" = "ok -" ]
	[ "$(jq -r '[.pmadvise[].advised] | unique | join(",")' <<<"$output")" = 65536 ]
	[ "$calls" -eq 3 ]
	grep 'process_madvise(' "$BATS_TEST_TMPDIR/strace.log" | sed -n 3p | grep -q \
		"process_madvise([0-9]*, \[{iov_base=0x$(region_start anon.2), iov_len=65536}, {iov_base=0x$(region_start anon.3), iov_len=65536}\], 2, MADV_COLD"
}

@test "a short return of one page on every call: one piece per call, all ok, exit 0" {
	start_target many=6
	inject process_madvise:retval=4096:when=2+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS cold $(ranges many)
	[ "$status" -eq 0 ]
	[ "$(jq '.pmadvise | length' <<<"$output")" -eq 6 ]
	[ "$(statuses)" = "ok -" ]
	# the probe, then 6, 5, 4, 3, 2 and 1 pieces
	[ "$calls" -eq 7 ]
	[ "$(grep -c '\], 1, MADV_COLD' "$BATS_TEST_TMPDIR/strace.log")" -eq 1 ]
}

@test "no progress at all (a return of 0) on every call: bounded, each row fails, exit 1" {
	start_target anon=64K anon=64K anon=64K
	inject process_madvise:retval=0:when=2+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold $(ranges anon anon.2 anon.3)
	[ "$status" -eq 1 ]
	[ "$(jq '.pmadvise | length' <<<"$output")" -eq 3 ]
	[ "$(jq -r '[.pmadvise[].status] | unique | join(",")' <<<"$output")" = failed ]
	[ "$calls" -le $((1 + 5 * 3)) ]
}

@test "ENOMEM for the first range of a call: that row fails 'not mapped any more', the rest ok, exit 64" {
	start_target anon=64K anon=64K anon=64K
	inject process_madvise:error=ENOMEM:when=2 -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,ERRNO cold $(ranges anon anon.2 anon.3)
	[ "$status" -eq 64 ]
	[ "$(statuses)" = "failed ENOMEM,ok -" ]
	[ "$(jq '[.pmadvise[] | select(.status == "ok")] | length' <<<"$output")" -eq 2 ]
	[[ "$stderr" == *"PID $TARGET_PID: $(ranges anon): cold failed: not mapped any more"* ]]
	[ "$calls" -eq 3 ]
}

@test "ENOMEM on every call of a selection: every row failed, exit 1" {
	start_target anon=64K anon=64K
	inject process_madvise:error=ENOMEM:when=2+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold --select anon
	[ "$status" -eq 1 ]
	[ "$(statuses)" = "failed ENOMEM" ]
}

@test "ESRCH on the first call with ranges: every row not-run, the PID named, exit 1" {
	start_target many=100
	inject process_madvise:error=ESRCH:when=2+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold --select all
	[ "$status" -eq 1 ]
	[ "$(statuses)" = "not-run ESRCH" ]
	[ "$stderr" = "pmadvise: PID $TARGET_PID: process has exited" ]
	[ "$calls" -eq 2 ]
}

@test "ESRCH between the chunks of a large piece: the row before ok, that one partial, the next not-run, exit 64" {
	start_target anon=1M untouched=5G anon=64K
	# call 2: the 1 MiB and the first chunk of the 5 GiB; call 3 finds the process gone
	inject process_madvise:error=ESRCH:when=3+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -b -o START,ADVISED,STATUS,ERRNO cold \
		$(ranges anon untouched anon.2)
	[ "$status" -eq 64 ]
	[ "$(statuses)" = "ok -,partial ESRCH,not-run ESRCH" ]
	local advised=$(jq '.pmadvise[1].advised' <<<"$output")
	[ "$advised" -gt 0 ]
	[ "$advised" -lt $((5 << 30)) ]
	[ "$((1048576 + advised))" -eq $((0x7ffff000)) ]
	[ "$calls" -eq 3 ]
}

@test "EPERM in the middle of a run: the first batch ok, the rest not-run, CAP_SYS_NICE named, exit 64" {
	start_target many=2000
	inject process_madvise:error=EPERM:when=3+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold --select all
	[ "$status" -eq 64 ]
	[ "$(statuses)" = "ok -,not-run EPERM" ]
	[ "$(jq '[.pmadvise[] | select(.status == "ok")] | length' <<<"$output")" -eq 1024 ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "*"CAP_SYS_NICE"* ]]
	[ "$calls" -eq 3 ]
}

@test "EACCES in the middle of a run: the first batch ok, the rest not-run, ptrace access named, exit 64" {
	start_target many=2000
	inject process_madvise:error=EACCES:when=3+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold --select all
	[ "$status" -eq 64 ]
	[ "$(statuses)" = "ok -,not-run EACCES" ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "*"ptrace"* ]]
	[ "$calls" -eq 3 ]
}

@test "EBADF in the middle of a run: nothing more is tried, the rest not-run, the PID named, exit 64" {
	start_target many=2000
	inject process_madvise:error=EBADF:when=3+ -- \
		"$PMADVISE" -p "$TARGET_PID" -J -o STATUS,ERRNO cold --select all
	[ "$status" -eq 64 ]
	[ "$(statuses)" = "ok -,not-run EBADF" ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "* ]]
	[ "$calls" -eq 3 ]
}

@test "ESRCH from the probe: 'process has exited', no call with ranges, exit 1" {
	start_target anon=64K
	inject process_madvise:error=ESRCH:when=1 -- \
		"$PMADVISE" -p "$TARGET_PID" cold --select all
	[ "$status" -eq 1 ]
	[ "$stderr" = "pmadvise: PID $TARGET_PID: process has exited" ]
	[ -z "$output" ]
	[ "$calls" -eq 1 ]
}

@test "EINVAL from the probe for cold: the kernel does not take it remotely, Linux 5.10 named, exit 2" {
	start_target anon=64K
	inject process_madvise:error=EINVAL:when=1 -- \
		"$PMADVISE" -p "$TARGET_PID" cold --select all
	[ "$status" -eq 2 ]
	[[ "$stderr" == "pmadvise: PID $TARGET_PID: "*"'cold'"*"5.10"* ]]
	[ "$calls" -eq 1 ]
}

@test "ENOSYS from pidfd_open: Linux 5.10 named, exit 2, no process_madvise call" {
	start_target anon=64K
	inject pidfd_open:error=ENOSYS -- "$PMADVISE" -p "$TARGET_PID" cold --select all
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"PID $TARGET_PID: "*"Linux 5.10"* ]]
	[ "$calls" -eq 0 ]
}

@test "ENOSYS from process_madvise with two targets: said once, exit 2, nothing advised" {
	start_target anon=64K
	local first=$TARGET_PID
	start_target anon=64K
	inject process_madvise:error=ENOSYS -- "$PMADVISE" -p "$first,$TARGET_PID" cold --select anon
	[ "$status" -eq 2 ]
	[ "$stderr" = "pmadvise: process_madvise is not available: pmadvise needs Linux 5.10 or later with CONFIG_ADVISE_SYSCALLS" ]
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "pidfd_send_signal says the process is gone: 'process has exited', exit 1, no process_madvise call" {
	start_target anon=64K
	inject pidfd_send_signal:error=ESRCH -- "$PMADVISE" -p "$TARGET_PID" cold --select all
	[ "$status" -eq 1 ]
	[ "$stderr" = "pmadvise: PID $TARGET_PID: process has exited" ]
	[ "$calls" -eq 0 ]
}

@test "pidfd_open answers ESRCH: 'no such process', exit 1, no process_madvise call" {
	start_target anon=64K
	inject pidfd_open:error=ESRCH -- "$PMADVISE" -p "$TARGET_PID" cold --select all
	[ "$status" -eq 1 ]
	[ "$stderr" = "pmadvise: PID $TARGET_PID: no such process" ]
	[ "$calls" -eq 0 ]
}

@test "one target fails its probe, the other is advised: exit 64, rows only for the second" {
	start_target anon=64K
	local first=$TARGET_PID
	start_target anon=64K
	# the probes come first for each target in turn: the first probe fails
	inject process_madvise:error=ESRCH:when=1 -- \
		"$PMADVISE" -p "$first,$TARGET_PID" -J -o PID,STATUS cold --select anon
	[ "$status" -eq 64 ]
	[ "$stderr" = "pmadvise: PID $first: process has exited" ]
	[ "$(jq -r '[.pmadvise[] | "\(.pid) \(.status)"] | unique | join(",")' <<<"$output")" = "$TARGET_PID ok" ]
}
