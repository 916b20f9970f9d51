#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Each advice, checked by what it really does to the target's memory.

load test_helper

bats_require_minimum_version 1.5.0

teardown() { stop_targets; }

# row_of START: "END STATUS ADVISED" of the JSON row starting at START.
row_of() {
	jq -r --arg start "$1" \
		'.pmadvise[] | select(.start == $start) | "\(.end) \(.status) \(.advised)"' <<<"$output"
}

@test "pageout drops a private file mapping's pages and keeps anonymous memory (no swap)" {
	start_target file=4M anon=4M
	local file anon
	file=$(region_start file)
	anon=$(region_start anon)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq 4096 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b pageout "$file" "$anon"
	[ "$status" -eq 0 ]
	[ "$(row_of "$file")" = "$(region_end file) ok 4194304" ]
	[ "$(row_of "$anon")" = "$(region_end anon) ok 4194304" ]
	# file pages are clean: dropped (a few pages of slack at most)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
	# no swap: anonymous pages have nowhere to go
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq 4096 ]
}

@test "cold clears the Referenced bits of an anonymous mapping and keeps it resident" {
	start_target anon=4M
	local anon rss
	anon=$(region_start anon)
	rss=$(smaps_field "$TARGET_PID" "$anon" Rss)
	[ "$rss" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Referenced)" -gt 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b cold "$anon"
	[ "$status" -eq 0 ]
	[ "$(row_of "$anon")" = "$(region_end anon) ok 4194304" ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Referenced)" -eq 0 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq "$rss" ]
}

@test "collapse turns an aligned anonymous mapping into transparent huge pages" {
	require_kernel remote-collapse
	thp_not_always
	start_target aligned=4M
	local aligned
	aligned=$(region_start aligned)
	[ "$(smaps_field "$TARGET_PID" "$aligned" AnonHugePages)" -eq 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b collapse "$aligned"
	[ "$status" -eq 0 ]
	[ "$(row_of "$aligned")" = "$(region_end aligned) ok 4194304" ]
	[ "$(smaps_field "$TARGET_PID" "$aligned" AnonHugePages)" -eq 4096 ]
}

@test "willneed on a file mapping reports the whole mapping advised" {
	require_kernel remote-willneed
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -b -r -n -o START,END,SIZE,ADVISED,STATUS \
		willneed "$file"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" = "$file $(region_end file) 4194304 4194304 ok" ]
	[ -z "$stderr" ]
}

@test "willneed reads a paged-out file back into the page cache" {
	command -v fincore >/dev/null || skip "fincore (util-linux) is not installed"
	require_kernel remote-willneed
	start_target file=4M
	local file path i cached want
	file=$(region_start file)
	path=$(region_path file)
	"$PMADVISE" -q -p "$TARGET_PID" pageout "$file"
	[ "$(fincore -b -n -o RES "$path" | tr -d ' ')" -eq 0 ]

	run "$PMADVISE" -q -p "$TARGET_PID" willneed "$file"
	[ "$status" -eq 0 ]
	# The kernel reads ahead at most its window for the device in one
	# advice: the larger of read_ahead_kb and max_sectors_kb.
	want=$(readahead_window "$path")
	((want < 4194304)) || want=4194304
	# readahead completes asynchronously: poll for up to 5 s
	for ((i = 0; i < 100; i++)); do
		cached=$(fincore -b -n -o RES "$path" | tr -d ' ')
		[ "$cached" -ge "$want" ] && break
		sleep 0.05
	done
	echo "cached $cached bytes, expected at least $want" >&2
	[ "$cached" -ge "$want" ]
}

# readahead_window FILE: the most bytes one WILLNEED reads ahead of FILE:
# the larger of its block device's read_ahead_kb and max_sectors_kb (the
# whole file where that is not known).
readahead_window() {
	local sys ra io
	sys=$(readlink -f "/sys/dev/block/$(stat -c '%Hd:%Ld' "$1")") &&
		[[ -d $sys ]] || { stat -c %s "$1"; return; }
	[[ ! -e $sys/partition ]] || sys=${sys%/*}
	ra=$(cat "$sys/queue/read_ahead_kb") && io=$(cat "$sys/queue/max_sectors_kb") ||
		{ stat -c %s "$1"; return; }
	echo $(((ra > io ? ra : io) * 1024))
}

@test "willneed and collapse where the kernel does not take them remotely: exit 2, the version named, nothing advised" {
	local advice feature version region tested=0
	start_target file=1M aligned=4M
	for advice in willneed collapse; do
		case $advice in
		willneed) feature=remote-willneed version=5.15 region=file ;;
		collapse) feature=remote-collapse version=6.1 region=aligned ;;
		esac
		run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" "$advice" "$(region_start "$region")"
		cat "$BATS_TEST_TMPDIR/cmd.out"
		if kernel_has "$feature"; then
			[ "$status" -eq 0 ]
			continue
		fi
		tested=$((tested + 1))
		[ "$status" -eq 2 ]
		[ "$(count_ranged_madvise_calls)" -eq 0 ]
		[ "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = "pmadvise: PID $TARGET_PID: this kernel does not accept '$advice' for another process (needs Linux $version or later)" ]
	done
	echo "$tested advice refused by this kernel" >&2
}
