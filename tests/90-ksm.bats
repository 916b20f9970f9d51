#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# KSM (SPEC §8): the launcher mode 'pmadvise mergeable|unmergeable -- COMMAND',
# remote mergeable/unmergeable (refused by mainline kernels), the KSM column
# and --ksm-status.
#
# Tests that need KSM running start it themselves. setup saves run,
# pages_to_scan and sleep_millisecs of /sys/kernel/mm/ksm, and teardown puts
# them back, also when the test failed.

bats_require_minimum_version 1.5.0

load test_helper

# 'same=64M' regions: their pages, and the 75% of them that must be merged
PAGE=$(getconf PAGESIZE)
SAME_PAGES=$((64 * 1024 * 1024 / PAGE))
MIN_MERGED=$((SAME_PAGES * 3 / 4))

setup() {
	ksm_save
}

teardown() {
	stop_targets
	ksm_restore
}

# wait_full_scans N SECONDS: wait until ksmd has finished N more full scans.
wait_full_scans() {
	local target i
	target=$(($(cat "$KSM/full_scans") + $1))
	for ((i = 0; i < $2 * 5; i++)); do
		(($(cat "$KSM/full_scans") >= target)) && return 0
		sleep 0.2
	done
	echo "ksmd did not finish $1 full scans in $2 s (full_scans $(cat "$KSM/full_scans"))" >&2
	return 1
}

launch_same_target() {
	start_target_cmd "$PMADVISE" mergeable -- "$HELPERS/maptarget" same=64M
}

# require_launcher: skip unless the launcher can give a command KSM here: the
# prctl, and its flag kept across exec.
require_launcher() {
	require_kernel memory-merge memory-merge-exec ksm-stat
}

# ksm_status_flags VALUE: a jq condition on a --ksm-status row's merge-any and
# mergeable cells for VALUE; empty cells where the kernel has no such field.
ksm_status_flags() {
	if kernel_has ksm-stat-merge-any; then
		echo "(.\"merge-any\" == \"$1\" and .mergeable == \"$1\")"
	else
		echo '((."merge-any" // "") == "" and (.mergeable // "") == "")'
	fi
}

@test "two copies started under 'pmadvise mergeable --' merge their identical pages" {
	local a b launched
	require_launcher
	ksm_start
	launch_same_target
	a=$TARGET_PID
	launch_same_target
	b=$TARGET_PID
	# the flag came through the exec; KSM runs, so the launcher did not warn
	for launched in "$a" "$b"; do
		[ "$(merge_any "$launched")" = yes ]
	done
	[ ! -s "$BATS_TEST_TMPDIR/target-0.out.err" ]
	[ ! -s "$BATS_TEST_TMPDIR/target-1.out.err" ]
	wait_merged "$a" "$MIN_MERGED" 60
	wait_merged "$b" "$MIN_MERGED" 60

	run --separate-stderr "$PMADVISE" --ksm-status -J -p "$a,$b"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	jq -e --argjson a "$a" --argjson b "$b" --argjson min "$MIN_MERGED" '
		(.ksm | length) == 2 and
		([.ksm[].pid] == [$a, $b]) and
		all(.ksm[]; .comm == "maptarget" and '"$(ksm_status_flags yes)"' and
			."merging-pages" >= $min and
			.profit > 0 and ."rmap-items" >= ."merging-pages")' <<<"$output"
}

@test "the same helpers started without the launcher merge nothing while KSM runs" {
	local launched plain1 plain2 pid
	require_launcher
	ksm_start
	# a launched copy keeps ksmd scanning, with the very page contents the
	# plain ones hold: they would merge with it if KSM looked at them
	launch_same_target
	launched=$TARGET_PID
	start_target same=64M
	plain1=$TARGET_PID
	start_target same=64M
	plain2=$TARGET_PID
	wait_merged "$launched" "$MIN_MERGED" 60
	wait_full_scans 2 30

	for pid in "$plain1" "$plain2"; do
		[ "$(merge_any "$pid")" = no ]
		[ "$(ksm_stat "$pid" ksm_merging_pages)" -eq 0 ]
		[ "$(ksm_stat "$pid" ksm_rmap_items)" -eq 0 ]
	done
	run --separate-stderr "$PMADVISE" --ksm-status -J -p "$plain1,$plain2"
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e 'all(.ksm[]; '"$(ksm_status_flags no)"' and ."merging-pages" == 0) and
		(.ksm | length) == 2' <<<"$output"
}

@test "the KSM column shows the merged bytes of a whole-mapping row" {
	local a b a_start b_start
	require_launcher
	require_kernel smaps-ksm
	ksm_start
	launch_same_target
	a=$TARGET_PID
	a_start=$(region_start same)
	start_target same=64M
	b=$TARGET_PID
	b_start=$(region_start same)
	wait_merged "$a" "$MIN_MERGED" 60

	run --separate-stderr "$PMADVISE" --dry-run -J -b -o PID,START,SIZE,KSM \
		-p "$a,$b" mergeable --select 'anon,min-size=64M'
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e --argjson a "$a" --argjson b "$b" --arg astart "$a_start" \
		--argjson min "$((MIN_MERGED * PAGE))" --argjson size "$((SAME_PAGES * PAGE))" '
		[.pmadvise[] | select(.pid == $a and .start == $astart and .size == $size and
			.ksm >= $min and .ksm <= $size)] | length == 1' <<<"$output"
	jq -e --argjson b "$b" --arg bstart "$b_start" '
		[.pmadvise[] | select(.pid == $b and .start == $bstart and .ksm == 0)] | length == 1' \
		<<<"$output"
}

@test "unmergeable -- clears the flag that a merge-enabled parent passed on; mergeable -- sets it" {
	require_launcher
	require_kernel ksm-stat-merge-any
	# shellcheck disable=SC2016 # expanded by the inner shell
	run --separate-stderr "$PMADVISE" mergeable -- sh -c '
		grep "^ksm_merge_any" /proc/self/ksm_stat
		exec "$1" unmergeable -- cat /proc/self/ksm_stat' sh "$PMADVISE"
	echo "$output"
	[ "$status" -eq 0 ]
	# the parent had it, the child launched with unmergeable has not
	[ "${lines[0]}" = "ksm_merge_any: yes" ]
	[ "$(grep -c '^ksm_merge_any' <<<"$output")" -eq 2 ]
	grep -qx 'ksm_merge_any: no' <<<"$output"

	# without a launcher, this shell's children do not have it
	grep -qx 'ksm_merge_any: no' /proc/self/ksm_stat
	run --separate-stderr "$PMADVISE" mergeable -- cat /proc/self/ksm_stat
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'ksm_merge_any: yes' <<<"$output"
}

@test "remote mergeable and unmergeable: exit 2, not supported by this kernel, launcher form named" {
	local advice what start end
	start_target same=1M
	start=$(region_start same)
	end=$(region_end same)
	for advice in mergeable unmergeable; do
		for what in "--select anon" "$start-$end"; do
			# shellcheck disable=SC2086 # $what is one or two arguments
			run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" "$advice" $what
			cat "$BATS_TEST_TMPDIR/cmd.out"
			[ "$status" -eq 2 ]
			# the probe only: nothing advised, no success faked
			[ "$(count_ranged_madvise_calls)" -eq 0 ]
			[ "$(wc -l <"$BATS_TEST_TMPDIR/cmd.out")" -eq 1 ]
			grep -qF "pmadvise: PID $TARGET_PID: this kernel does not support remote KSM hints" \
				"$BATS_TEST_TMPDIR/cmd.out"
			grep -qF "'pmadvise $advice -- COMMAND'" "$BATS_TEST_TMPDIR/cmd.out"
		done
	done
	if kernel_has ksm-stat-merge-any; then
		[ "$(ksm_stat "$TARGET_PID" ksm_merge_any)" = no ]
		[ "$(ksm_stat "$TARGET_PID" ksm_mergeable)" = no ]
	fi
}

@test "launcher: the exit status is the command's" {
	local advice
	require_kernel memory-merge
	for advice in mergeable unmergeable; do
		run --separate-stderr "$PMADVISE" "$advice" -- sh -c 'exit 7'
		[ "$status" -eq 7 ]
		run --separate-stderr "$PMADVISE" "$advice" -- true
		[ "$status" -eq 0 ]
	done
}

@test "launcher: the command replaces pmadvise in the same process" {
	local pid out="$BATS_TEST_TMPDIR/pid.out"
	require_kernel memory-merge
	# shellcheck disable=SC2016 # expanded by the inner shell
	"$PMADVISE" mergeable -- sh -c 'echo $$' >"$out" 2>/dev/null &
	pid=$!
	wait "$pid"
	[ "$(cat "$out")" = "$pid" ]
	# a signal reaches the caller as the command's own death by that signal
	run "$PMADVISE" mergeable -- sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
}

@test "launcher: arguments are passed through untouched" {
	require_kernel memory-merge
	run --separate-stderr "$PMADVISE" mergeable -- printf '%s|' a 'b c'
	[ "$status" -eq 0 ]
	[ "$output" = "a|b c|" ]
	# options after -- are the command's, not pmadvise's
	run --separate-stderr "$PMADVISE" mergeable -- printf '%s|' -p --help -- '' '*'
	[ "$status" -eq 0 ]
	[ "$output" = "-p|--help|--||*|" ]
}

@test "launcher: the environment is passed through untouched" {
	local nl=$'x\ny'
	require_kernel memory-merge
	run --separate-stderr env -i "PATH=$PATH" "FOO=a b" "EMPTY=" "NL=$nl" \
		"$PMADVISE" mergeable -- env
	[ "$status" -eq 0 ]
	[ "$output" = "PATH=$PATH
FOO=a b
EMPTY=
NL=$nl" ]
}

@test "launcher: a command that is not found exits 127" {
	require_kernel memory-merge
	run -127 --separate-stderr "$PMADVISE" mergeable -- pmadvise-no-such-command arg
	[ "$status" -eq 127 ]
	[ -z "$output" ]
	grep -qF "pmadvise: failed to execute pmadvise-no-such-command: No such file or directory" \
		<<<"$stderr"
	run -127 --separate-stderr "$PMADVISE" unmergeable -- "$BATS_TEST_TMPDIR/missing"
	[ "$status" -eq 127 ]
	grep -qF "failed to execute $BATS_TEST_TMPDIR/missing" <<<"$stderr"
}

@test "launcher: a command that cannot be executed exits 126" {
	local file="$BATS_TEST_TMPDIR/not-executable"
	require_kernel memory-merge
	printf '#!/bin/sh\nexit 0\n' >"$file"
	chmod 644 "$file"
	run --separate-stderr "$PMADVISE" mergeable -- "$file"
	[ "$status" -eq 126 ]
	grep -qF "pmadvise: failed to execute $file: Permission denied" <<<"$stderr"
	# a directory
	run --separate-stderr "$PMADVISE" unmergeable -- "$BATS_TEST_TMPDIR"
	[ "$status" -eq 126 ]
	grep -qF "failed to execute $BATS_TEST_TMPDIR" <<<"$stderr"
}

@test "launcher: warns once when KSM is not running, and not when it is; never changes it" {
	require_kernel memory-merge
	require_ksm_control
	ksm_set run 0
	run --separate-stderr "$PMADVISE" mergeable -- printf ok
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	echo "$stderr"
	# shellcheck disable=SC2154 # set by run --separate-stderr
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "pmadvise: KSM is not running: start it with 'echo 1 > /sys/kernel/mm/ksm/run'" ]]
	[ "$(cat "$KSM/run")" = 0 ]

	ksm_set run 1
	run --separate-stderr "$PMADVISE" mergeable -- printf ok
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	[ -z "$stderr" ]
	[ "$(cat "$KSM/run")" = 1 ]
}

@test "launcher where the kernel has no PR_SET_MEMORY_MERGE: exit 2, the versions named, the command not run" {
	local advice ran="$BATS_TEST_TMPDIR/ran"
	for advice in mergeable unmergeable; do
		run --separate-stderr "$PMADVISE" "$advice" -- touch "$ran"
		if kernel_has memory-merge; then
			[ "$status" -eq 0 ]
			[ -e "$ran" ]
			rm -f "$ran"
			continue
		fi
		echo "$stderr"
		[ "$status" -eq 2 ]
		[ -z "$output" ]
		[ "$stderr" = "pmadvise: this kernel has no PR_SET_MEMORY_MERGE (Linux 6.4): launcher mode needs Linux 6.7 or later with CONFIG_KSM, where the flag is kept across exec" ]
		[ ! -e "$ran" ]
	done
}

@test "launcher: usage errors" {
	run --separate-stderr "$PMADVISE" mergeable --
	[ "$status" -eq 1 ]
	grep -qF "no command given after '--'" <<<"$stderr"
	run --separate-stderr "$PMADVISE" cold -- true
	[ "$status" -eq 1 ]
	grep -qF "only mergeable and unmergeable can launch a command" <<<"$stderr"
	run --separate-stderr "$PMADVISE" mergeable --select anon -- true
	[ "$status" -eq 1 ]
	grep -qF "launcher mode takes no ranges or selectors" <<<"$stderr"
}

@test "--ksm-status prints each target's /proc/PID/ksm_stat" {
	local plain launched key col row pid
	local -a fields
	require_launcher
	require_kernel ksm-stat-merge-any
	require_ksm_control
	# KSM stopped: nothing changes between pmadvise's reading and ours
	ksm_set run 0
	start_target same=1M
	plain=$TARGET_PID
	start_target_cmd "$PMADVISE" mergeable -- "$HELPERS/maptarget" same=1M
	launched=$TARGET_PID

	run --separate-stderr "$PMADVISE" --ksm-status -r -p "$plain,$launched"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "PID COMM MERGE-ANY MERGEABLE MERGING-PAGES PROFIT RMAP-ITEMS ZERO-PAGES" ]
	for row in 1 2; do
		read -ra fields <<<"${lines[row]}"
		pid=${fields[0]}
		[ "${fields[1]}" = maptarget ]
		col=2
		for key in ksm_merge_any ksm_mergeable ksm_merging_pages ksm_process_profit \
			ksm_rmap_items ksm_zero_pages; do
			[ "${fields[col]}" = "$(ksm_stat "$pid" "$key")" ]
			col=$((col + 1))
		done
	done
	[[ ${lines[1]} == "$plain maptarget no no "* ]]
	[[ ${lines[2]} == "$launched maptarget yes yes "* ]]
}

@test "--ksm-status of a process that has exited: exit 1 and a message" {
	local gone live
	start_target same=4K
	gone=$TARGET_PID
	stop_targets
	run --separate-stderr "$PMADVISE" --ksm-status -p "$gone"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	grep -qF "pmadvise: PID $gone: no such process" <<<"$stderr"

	# with a live one as well: its row, and exit 64
	require_kernel ksm-stat
	start_target same=4K
	live=$TARGET_PID
	run --separate-stderr "$PMADVISE" --ksm-status -r -n -p "$live,$gone"
	[ "$status" -eq 64 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "$live maptarget "* ]]
	grep -qF "PID $gone: no such process" <<<"$stderr"
}

@test "--ksm-status where the kernel has no /proc/PID/ksm_stat: exit 2 and a message naming 6.1" {
	start_target same=4K
	run --separate-stderr "$PMADVISE" --ksm-status -p "$TARGET_PID"
	echo "$output$stderr"
	if kernel_has ksm-stat; then
		[ "$status" -eq 0 ]
		return 0
	fi
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[ "$stderr" = "pmadvise: PID $TARGET_PID: this kernel has no /proc/PID/ksm_stat (Linux 6.1 or later)" ]
}

@test "--ksm-status needs a target and takes no advice" {
	run --separate-stderr "$PMADVISE" --ksm-status
	[ "$status" -eq 1 ]
	grep -qF -- "--ksm-status needs --pid, --pidfd or --cgroup" <<<"$stderr"
	run --separate-stderr "$PMADVISE" --ksm-status -p $$ mergeable
	[ "$status" -eq 1 ]
	grep -qF -- "--ksm-status takes no ADVICE or RANGE" <<<"$stderr"
}
