#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Bad input (SPEC §4, §5, §7, §10): each is reported with what was wrong,
# exit 1, before anything is advised: no process_madvise call at all, not
# even the probe, against a live target.

load test_helper

teardown() {
	stop_targets
}

setup() {
	start_target anon=64K
	ANON="$(region_start anon)-$(region_end anon)"
}

# bad_input ARG...: run pmadvise ARG... under strace; status in $status,
# messages in $msg. Fails unless nothing was advised and nothing printed on
# stdout but the message.
bad_input() {
	run count_madvise_calls "$PMADVISE" "$@"
	msg=$(cat "$BATS_TEST_TMPDIR/cmd.out")
	echo "status $status, $output process_madvise calls: $msg"
	[ "$output" -eq 0 ]
}

@test "unaligned start address: 'not page-aligned', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold 7f0000001001-7f0000003000
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000001001-7f0000003000'"*"not page-aligned"* ]]
}

@test "reversed range: 'ends before it starts', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold 7f0000003000-7f0000001000
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000003000-7f0000001000'"*"ends before it starts"* ]]
}

@test "empty range START-START: 'range is empty', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold 7f0000001000-7f0000001000
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000001000-7f0000001000'"*"empty"* ]]
}

@test "START+SIZE that overflows: 'overflows', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold ffffffffffff0000+1G
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range 'ffffffffffff0000+1G'"*"overflows"* ]]
}

@test "range beyond the user address space: 'beyond', exit 1, nothing advised" {
	# ends above 2^57, the largest user address space (5-level paging)
	bad_input -p "$TARGET_PID" cold 1fffffffffff000+8K
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '1fffffffffff000+8K'"*"beyond the user address space"* ]]
}

@test "bad hexadecimal address: 'not a hexadecimal number', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold 7f0000001000-7f00000zz000
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000001000-7f00000zz000'"*"hexadecimal"* ]]
}

@test "bad size suffix: 'unknown size suffix', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold 7f0000001000+4Q
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000001000+4Q'"*"unknown size suffix"* ]]
}

@test "one bad range among good ones: nothing is advised at all, exit 1" {
	bad_input -p "$TARGET_PID" cold "$ANON" 7f0000001001+4K
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid range '7f0000001001+4K'"*"not page-aligned"* ]]
	[ "$(smaps_field "$TARGET_PID" "$(region_start anon)" Referenced)" -gt 0 ]
}

@test "unknown advice: 'unknown advice' with its name, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" frobnicate "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"unknown advice 'frobnicate'"* ]]
}

@test "destructive advice by name (dontneed) is never given, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" dontneed "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"'dontneed' can lose data"* ]]
}

@test "destructive advice by number (4, MADV_DONTNEED) is never given, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" 4 "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"advice 4 can lose data"* ]]
}

@test "unknown column in -o: named, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" -o START,NOSUCH cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"unknown column 'NOSUCH'"* ]]
}

@test "unknown selector term: named, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold --select anon,bogus
	[ "$status" -eq 1 ]
	[[ "$msg" == *"--select 'anon,bogus'"*"unknown selector term 'bogus'"* ]]
}

@test "selector term without its value (path=): 'needs a value', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold --select path=
	[ "$status" -eq 1 ]
	[[ "$msg" == *"'path='"*"needs a value"* ]]
}

@test "malformed --maps line: reported with its line number, exit 1, nothing advised" {
	printf '%s\n' "$ANON" "not a maps line" >"$BATS_TEST_TMPDIR/maps"
	bad_input -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"--maps $BATS_TEST_TMPDIR/maps: line 2:"* ]]
}

@test "--maps input with a NUL byte: reported with its line number, exit 1, nothing advised" {
	printf '%s\n%s\0\n' "$ANON" "$ANON" >"$BATS_TEST_TMPDIR/maps"
	bad_input -p "$TARGET_PID" cold --maps - <"$BATS_TEST_TMPDIR/maps"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"line 2:"*"NUL byte"* ]]
}

@test "--maps file that does not exist: named, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/no-such-file"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"cannot open --maps file $BATS_TEST_TMPDIR/no-such-file"* ]]
}

@test "no RANGE, --select or --maps: 'nothing selected', exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold
	[ "$status" -eq 1 ]
	[[ "$msg" == *"nothing selected"* ]]
}

@test "no target: 'no target given', exit 1, nothing advised" {
	bad_input cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"no target given"* ]]
}

@test "no advice at all: 'no advice given', exit 1" {
	bad_input -p "$TARGET_PID"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"no advice given"* ]]
}

@test "invalid PID 0: named, exit 1, nothing advised" {
	bad_input -p 0 cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid PID '0'"* ]]
}

@test "invalid PID abc: named, exit 1, nothing advised" {
	bad_input -p abc cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid PID 'abc'"* ]]
}

@test "invalid PID -5: named, exit 1, nothing advised" {
	bad_input -p -5 cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid PID '-5'"* ]]
}

@test "one invalid PID in a list: nothing is advised to the good one either, exit 1" {
	bad_input -p "$TARGET_PID,x1" cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"invalid PID 'x1'"* ]]
}

@test "--select matching nothing: 'nothing selected by' what was asked, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" cold --select 'path=/no/such/file*'
	[ "$status" -eq 1 ]
	[[ "$msg" == *"PID $TARGET_PID: nothing selected by --select 'path=/no/such/file*'"* ]]
}

@test "unknown option: usage hint, exit 1, nothing advised" {
	bad_input -p "$TARGET_PID" --no-such-option cold "$ANON"
	[ "$status" -eq 1 ]
	[[ "$msg" == *"--help"* ]]
}
