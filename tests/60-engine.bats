#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The syscall engine (SPEC §6): batching, chunking, short returns, retries
# and fatal errors in the middle of a run. Kernel answers that cannot be
# provoked on demand are injected with strace.

bats_require_minimum_version 1.5.0

load test_helper

# process_madvise's per-call limits, as the kernel has them
UIO_MAXIOV=1024
MAX_RW_COUNT=$((0x7ffff000))

teardown() {
	stop_targets
}

# inject_madvise INJECTION COMMAND...: run COMMAND under strace, tampering
# with process_madvise as `-e inject=process_madvise:INJECTION` says.
# Status in $status, stdout in $output, stderr in $stderr, the number of
# process_madvise calls in $calls; the trace is $BATS_TEST_TMPDIR/strace.log.
inject_madvise() {
	local trace="$BATS_TEST_TMPDIR/strace.log" injection=$1
	shift
	run --separate-stderr strace -f -qq -o "$trace" -e trace=process_madvise \
		-e inject=process_madvise:"$injection" "$@"
	calls=$(grep -c 'process_madvise(' "$trace" || true)
	echo "status $status, $calls calls; stderr: $stderr"
}

# rows_with FIELD VALUE: how many rows of the JSON in $output have FIELD == VALUE.
rows_with() {
	jq --arg v "$2" "[.pmadvise[] | select(.$1 == \$v)] | length" <<<"$output"
}

@test "pieces are batched: 1 probe + ceil(pieces/1024) calls, every row ok" {
	start_target many=5000 anon=1M file=1M
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --select all -r -n -o STATUS cold
	local calls=$output rows
	[ "$status" -eq 0 ]
	rows=$(wc -l <"$BATS_TEST_TMPDIR/cmd.out")
	[ "$rows" -gt 5000 ]
	# every line is a row, and every row is ok (no warning either)
	[ "$(grep -cvx ok "$BATS_TEST_TMPDIR/cmd.out")" -eq 0 ]
	echo "rows $rows, calls $calls"
	[ "$calls" -eq $((1 + (rows + UIO_MAXIOV - 1) / UIO_MAXIOV)) ]
	[ "$calls" -lt $((rows / 100)) ]
}

@test "no call carries more than 1024 ranges" {
	start_target many=3000
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --select all -q cold
	[ "$status" -eq 0 ]
	# strace prints the vector length as the third argument
	local most
	most=$(sed -n 's/.*process_madvise([0-9]*, \[.*\], \([0-9]*\), MADV_COLD.*/\1/p' \
		"$BATS_TEST_TMPDIR/strace.log" | sort -n | tail -n 1)
	echo "largest vector: $most"
	[ "$most" -eq "$UIO_MAXIOV" ]
}

@test "a refused range in the middle of a call fails alone; the ranges after it are still advised" {
	start_target anon=1M locked=1M anon=1M
	local a2=$(region_start anon.2)
	[ "$(smaps_field "$TARGET_PID" "$a2" Referenced)" -gt 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,ERRNO cold \
		"$(region_start anon)-$(region_end anon)" \
		"$(region_start locked)-$(region_end locked)" \
		"$(region_start anon.2)-$(region_end anon.2)"
	echo "$output"
	[ "$status" -eq 64 ]
	[ "$(jq -r '.pmadvise | length' <<<"$output")" -eq 3 ]
	[ "$(jq -r '.pmadvise[0].status' <<<"$output")" = ok ]
	[ "$(jq -r '.pmadvise[1].status + " " + .pmadvise[1].errno' <<<"$output")" = "failed EINVAL" ]
	[ "$(jq -r '.pmadvise[2].status' <<<"$output")" = ok ]
	# they really were advised: cold leaves no page referenced
	[ "$(smaps_field "$TARGET_PID" "$(region_start anon)" Referenced)" -eq 0 ]
	[ "$(smaps_field "$TARGET_PID" "$a2" Referenced)" -eq 0 ]
}

@test "a refused mapping in a selection is skipped, not failed, and exit is 0" {
	start_target anon=1M locked=1M anon=1M
	local a2=$(region_start anon.2)
	[ "$(smaps_field "$TARGET_PID" "$a2" Referenced)" -gt 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,ERRNO \
		--select anon cold
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r --arg s "$(region_start locked)" \
		'.pmadvise[] | select(.start == $s) | .status + " " + .errno' <<<"$output")" = "skipped EINVAL" ]
	[ "$(rows_with status failed)" -eq 0 ]
	[ "$(smaps_field "$TARGET_PID" "$a2" Referenced)" -eq 0 ]
}

@test "REASON says why the kernel refused: a locked mapping" {
	start_target locked=1M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,REASON cold \
		"$(region_start locked)-$(region_end locked)"
	echo "$output $stderr"
	[ "$status" -eq 1 ]
	[[ "$(jq -r '.pmadvise[0].reason' <<<"$output")" == *"locked in memory (mlock)"* ]]
	[[ "$stderr" == *"cold failed: the mapping is locked in memory (mlock)"* ]]
}

@test "REASON says why the kernel refused: a mapping too small to collapse" {
	require_kernel remote-collapse
	start_target anon=1M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o START,STATUS,REASON collapse \
		"$(region_start anon)-$(region_end anon)"
	echo "$output $stderr"
	[ "$(jq -r '.pmadvise[0].status' <<<"$output")" = failed ]
	[[ "$(jq -r '.pmadvise[0].reason' <<<"$output")" == *"2 MiB-aligned"* ]]
}

@test "a piece larger than MAX_RW_COUNT is chunked and reported as one row of its full size" {
	start_target untouched=5G
	local start=$(region_start untouched) end=$(region_end untouched)
	[ $((0x$end - 0x$start)) -eq $((5 << 30)) ]

	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -J -b \
		-o START,END,ADVISED,STATUS cold "$start-$end"
	local calls=$output
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 0 ]
	output=$(cat "$BATS_TEST_TMPDIR/cmd.out")
	[ "$(jq -r '.pmadvise | length' <<<"$output")" -eq 1 ]
	[ "$(jq -r '.pmadvise[0].status' <<<"$output")" = ok ]
	[ "$(jq -r '.pmadvise[0].advised' <<<"$output")" -eq $((5 << 30)) ]
	# 1 probe + ceil(5 GiB / MAX_RW_COUNT) = 1 + 3
	[ "$calls" -eq $((1 + ((5 << 30) + MAX_RW_COUNT - 1) / MAX_RW_COUNT)) ]
}

@test "a large piece after a small one in the same call is finished in the next call" {
	start_target anon=1M untouched=3G
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b -o START,ADVISED,STATUS cold \
		"$(region_start anon)-$(region_end anon)" \
		"$(region_start untouched)-$(region_end untouched)"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[1].status' <<<"$output")" = ok ]
	[ "$(jq -r '.pmadvise[1].advised' <<<"$output")" -eq $((3 << 30)) ]
}

@test "EAGAIN once is retried: every row ok, exit 0" {
	start_target anon=64K anon=64K
	# call 1 is the probe; call 2, the first with ranges, fails once
	inject_madvise error=EAGAIN:when=2 "$PMADVISE" -p "$TARGET_PID" -J -o STATUS cold \
		"$(region_start anon)-$(region_end anon)" \
		"$(region_start anon.2)-$(region_end anon.2)"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(rows_with status ok)" -eq 2 ]
	grep -q 'EAGAIN.*INJECTED' "$BATS_TEST_TMPDIR/strace.log"
	[ "$calls" -eq 3 ]
}

@test "EAGAIN for ever: retries are bounded, rows fail with EAGAIN, exit 1" {
	start_target anon=64K anon=64K
	inject_madvise error=EAGAIN:when=2+ timeout 20 "$PMADVISE" -p "$TARGET_PID" \
		-J -o STATUS,ERRNO cold \
		"$(region_start anon)-$(region_end anon)" \
		"$(region_start anon.2)-$(region_end anon.2)"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(jq -r '[.pmadvise[] | .status + " " + .errno] | unique | join(",")' <<<"$output")" = "failed EAGAIN" ]
	[ "$(jq -r '.pmadvise | length' <<<"$output")" -eq 2 ]
	# retried, but at most 5 calls per row after the probe
	[ "$calls" -gt 3 ]
	[ "$calls" -le $((1 + 5 * 2)) ]
}

@test "ESRCH in the middle of a run: the first batch ok, the rest not-run, exit 64" {
	start_target many=3000
	# call 1 probe, call 2 the first 1024 pieces, call 3 on: the process is gone
	inject_madvise error=ESRCH:when=3+ "$PMADVISE" -p "$TARGET_PID" --select all \
		-J -o STATUS,ERRNO cold
	[ "$status" -eq 64 ]
	local rows
	rows=$(jq -r '.pmadvise | length' <<<"$output")
	[ "$rows" -gt $((2 * UIO_MAXIOV)) ]
	[ "$(jq -r "[.pmadvise[:$UIO_MAXIOV][] | .status] | unique | join(\",\")" <<<"$output")" = ok ]
	[ "$(jq -r "[.pmadvise[$UIO_MAXIOV:][] | .status + \" \" + .errno] | unique | join(\",\")" \
		<<<"$output")" = "not-run ESRCH" ]
	# nothing is tried after the process is known gone
	[ "$calls" -eq 3 ]
}

@test "a short return redoes the pieces after the completed ones: all ok, exit 0" {
	start_target many=10
	# the first call with ranges reports one page done out of ten
	inject_madvise retval=4096:when=2 "$PMADVISE" -p "$TARGET_PID" -J -b \
		-o START,ADVISED,STATUS cold "$(region_start many)-$(region_end many)"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise | length' <<<"$output")" -eq 10 ]
	[ "$(rows_with status ok)" -eq 10 ]
	[ "$(jq -r '[.pmadvise[].advised] | unique | join(",")' <<<"$output")" = 4096 ]
	# probe, the short call, and one more for the 9 pieces left, from the second
	[ "$calls" -eq 3 ]
	local second=$(jq -r '.pmadvise[1].start' <<<"$output")
	sed -n 3p "$BATS_TEST_TMPDIR/strace.log" |
		grep -q "process_madvise([0-9]*, \[{iov_base=0x$second, iov_len=4096}, .*\], 9, MADV_COLD"
}
